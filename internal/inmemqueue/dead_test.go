package inmemqueue

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestDeadLettersBounded: past deadMax dead letters the oldest are dropped,
// and Requeue puts back the kept ones, oldest first.
func TestDeadLettersBounded(t *testing.T) {
	q := New()
	defer q.Close()
	ctx := t.Context()
	const extra = 2
	bodies := make([][]byte, deadMax+extra)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, "m%05d", i)
	}
	if err := q.Publish(ctx, "q", bodies...); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	consume(t, q, func(feed.Delivery) error {
		calls.Add(1)
		return errors.New("poison")
	}, func() bool { return calls.Load() == int64(len(bodies)*feed.MaxAttempts) })
	if n, _ := q.DeadLetters(ctx, "q"); n != deadMax {
		t.Fatalf("DeadLetters = %d; want the bound %d", n, deadMax)
	}

	if n, err := q.Requeue(ctx, "q", 0); err != nil || n != deadMax {
		t.Fatalf("Requeue = %d, %v; want %d", n, err, deadMax)
	}
	var first atomic.Pointer[feed.Delivery]
	consume(t, q, func(d feed.Delivery) error {
		first.CompareAndSwap(nil, &d)
		return nil
	}, func() bool { return first.Load() != nil })
	if d := first.Load(); string(d.Body) != fmt.Sprintf("m%05d", extra) || d.Attempt != 1 {
		t.Errorf("first requeued delivery %s, attempt %d; want m%05d (the oldest kept), attempt 1", d.Body, d.Attempt, extra)
	}
	if n, _ := q.DeadLetters(ctx, "q"); n != 0 {
		t.Errorf("DeadLetters after Requeue = %d; want 0", n)
	}
}

// consume runs h on queue q until done reports true.
func consume(t *testing.T, q *Queue, h func(feed.Delivery) error, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- q.Consume(ctx, "q", feed.ConsumeOptions{}, func(_ context.Context, d feed.Delivery) error { return h(d) })
	}()
	for deadline := time.Now().Add(15 * time.Second); !done(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("timed out waiting for the consumer")
		}
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Errorf("Consume: %v", err)
	}
}
