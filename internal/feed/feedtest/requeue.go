package feedtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Requeuer is a feed.Broker that can replay its dead letters, as both
// backends can (the RabbitMQ one through feedd requeue-dead).
type Requeuer interface {
	feed.Broker
	// Requeue moves at most max (0: all) of the messages in queue's
	// dead-letter queue when it starts back onto queue, with their
	// attempts reset, and returns how many it moved.
	Requeue(ctx context.Context, queue string, max int) (int, error)
}

// TestRequeue runs the behavioural suite of Requeue against the broker
// newBroker builds, on the same terms as TestBroker.
func TestRequeue(t *testing.T, newBroker func(t *testing.T) Requeuer) {
	t.Helper()

	t.Run("requeued dead letters are handled once more", func(t *testing.T) {
		b := newBroker(t)
		const n = 3
		var failing atomic.Bool
		failing.Store(true)
		rec := newBrokerRecorder()
		fail := func(feed.Delivery) error {
			if failing.Load() {
				return errors.New("dependency down")
			}
			return nil
		}
		// One handler per message, so that their retries run side by side.
		startBrokerConsumer(t, b, "replay", feed.ConsumeOptions{Concurrency: n}, rec.handle(fail))
		brokerPublish(t, b, "replay", brokerBodies(0, n)...)
		rec.waitTotal(t, n*feed.MaxAttempts)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "replay", n)

		// The dependency is back: replay two, then the rest.
		failing.Store(false)
		requeue(t, b, "replay", 2, 2)
		rec.waitTotal(t, n*feed.MaxAttempts+2)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "replay", 1)
		requeue(t, b, "replay", 0, 1)
		rec.waitTotal(t, n*feed.MaxAttempts+3)
		time.Sleep(brokerQuiet) // a duplicate would show now

		// Each came back once, as a first attempt.
		want := append(attemptsUpTo(feed.MaxAttempts), 1)
		for i := range n {
			body := fmt.Sprintf("m%05d", i)
			if got := rec.attempts(body); !slices.Equal(got, want) {
				t.Errorf("%s delivered with attempts %v; want %v", body, got, want)
			}
		}
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "replay", 0)
		checkBrokerCount(t, "Pending", b.Pending, "replay", 0)
		requeue(t, b, "replay", 0, 0)
	})

	t.Run("max bounds a run and the rest stays dead", func(t *testing.T) {
		b := newBroker(t)
		const n = 3
		c := startBrokerConsumer(t, b, "bounded", feed.ConsumeOptions{Concurrency: n}, func(context.Context, feed.Delivery) error {
			return errors.New("poison")
		})
		brokerPublish(t, b, "bounded", brokerBodies(0, n)...)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "bounded", n)
		c.stop(t)

		// No consumer: the moved ones wait in the queue.
		requeue(t, b, "bounded", 1, 1)
		checkBrokerCount(t, "Pending", b.Pending, "bounded", 1)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "bounded", n-1)
		requeue(t, b, "bounded", n+5, n-1)
		checkBrokerCount(t, "Pending", b.Pending, "bounded", n)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "bounded", 0)
	})

	t.Run("a message failing again is dead-lettered again, not looped", func(t *testing.T) {
		b := newBroker(t)
		const n = 2
		rec := newBrokerRecorder()
		startBrokerConsumer(t, b, "again", feed.ConsumeOptions{Concurrency: n}, rec.handle(func(feed.Delivery) error {
			return errors.New("still broken")
		}))
		brokerPublish(t, b, "again", brokerBodies(0, n)...)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "again", n)

		// The run returns, having moved each once, while the consumer
		// fails them all again.
		requeue(t, b, "again", 0, n)
		rec.waitTotal(t, 2*n*feed.MaxAttempts)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "again", n)
		want := append(attemptsUpTo(feed.MaxAttempts), attemptsUpTo(feed.MaxAttempts)...)
		for i := range n {
			body := fmt.Sprintf("m%05d", i)
			if got := rec.attempts(body); !slices.Equal(got, want) {
				t.Errorf("%s delivered with attempts %v; want %v", body, got, want)
			}
		}
	})

	t.Run("nothing dead, nothing moved", func(t *testing.T) {
		b := newBroker(t)
		brokerPublish(t, b, "alive", []byte("x"))
		requeue(t, b, "alive", 0, 0)
		checkBrokerCount(t, "Pending", b.Pending, "alive", 1)
	})
}

// requeue runs b.Requeue and checks how many it moved.
func requeue(t *testing.T, b Requeuer, queue string, max, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), brokerWait)
	defer cancel()
	got, err := b.Requeue(ctx, queue, max)
	if err != nil {
		t.Fatalf("Requeue(%s, max %d): %v", queue, max, err)
	}
	if got != want {
		t.Errorf("Requeue(%s, max %d) moved %d; want %d", queue, max, got, want)
	}
}

// attemptsUpTo returns [1 2 … n].
func attemptsUpTo(n int) []int {
	a := make([]int, n)
	for i := range a {
		a[i] = i + 1
	}
	return a
}
