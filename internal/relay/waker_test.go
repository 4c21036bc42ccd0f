package relay

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// countingNotifier counts NotifyOutbox calls, or says it is unsupported.
type countingNotifier struct {
	n           atomic.Int64
	unsupported bool
}

func (c *countingNotifier) NotifyOutbox(context.Context) error {
	if c.unsupported {
		return errors.ErrUnsupported
	}
	c.n.Add(1)
	return nil
}

// TestWaker: a burst of posts costs a notification per wakeGap, not one
// per post, the last post of a burst is notified too, and where the
// database cannot notify the Waker stops and Notify still never blocks.
func TestWaker(t *testing.T) {
	var c countingNotifier
	w := runWaker(t, &c)
	start := time.Now()
	for time.Since(start) < 100*time.Millisecond {
		w.Notify()
		time.Sleep(100 * time.Microsecond)
	}
	burst := time.Since(start)
	time.Sleep(4 * wakeGap) // the last one goes out
	n := c.n.Load()
	if most := int64(burst/wakeGap) + 2; n < 2 || n > most {
		t.Fatalf("notifications for a %v burst of posts: got %d; want 2 to %d (one per %v)", burst, n, most, wakeGap)
	}
	w.Notify()
	time.Sleep(4 * wakeGap)
	if got := c.n.Load(); got != n+1 {
		t.Fatalf("notifications after one more post: got %d; want %d", got, n+1)
	}

	u := &countingNotifier{unsupported: true}
	w = NewWaker(slog.New(slog.DiscardHandler), u)
	w.Notify()
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(context.Background()) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Waker.Run still runs where notifications are unsupported")
	}
	for range 3 {
		w.Notify() // never blocks
	}
}
