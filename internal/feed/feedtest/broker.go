package feedtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// brokerWait bounds every wait of the broker suite. It is far above what a
// healthy broker needs (milliseconds) and only matters when a test fails.
const brokerWait = 15 * time.Second

// brokerQuiet is how long the suite watches for a delivery that must not
// happen (a duplicate, a redelivery of an acked message).
const brokerQuiet = 300 * time.Millisecond

// TestBroker runs the behavioural suite of feed.Broker against the
// implementation newBroker builds.
//
// newBroker is called once per subtest and returns a broker whose queues
// are empty. It registers its own cleanup with t.Cleanup (closing the
// broker, deleting what it declared); the consumers a subtest starts are
// stopped before that cleanup runs.
func TestBroker(t *testing.T, newBroker func(t *testing.T) feed.Broker) {
	t.Helper()

	t.Run("every message delivered once", func(t *testing.T) {
		b := newBroker(t)
		const n, batch, publishers = 2000, 100, 4
		rec := newBrokerRecorder()
		c := startBrokerConsumer(t, b, "once", feed.ConsumeOptions{Concurrency: 8}, rec.handle(nil))

		// Publish from several goroutines at once, as the relay and the
		// dispatcher do.
		var wg sync.WaitGroup
		for p := range publishers {
			wg.Go(func() {
				for i := p * batch; i < n; i += publishers * batch {
					brokerPublish(t, b, "once", brokerBodies(i, batch)...)
				}
			})
		}
		wg.Wait()

		rec.waitDistinct(t, n)
		time.Sleep(brokerQuiet) // let a duplicate show up
		c.stop(t)
		for i := range n {
			body := fmt.Sprintf("m%05d", i)
			if got := rec.attempts(body); !slices.Equal(got, []int{1}) {
				t.Errorf("%s delivered with attempts %v; want [1]", body, got)
			}
		}
		checkBrokerCount(t, "Pending", b.Pending, "once", 0)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "once", 0)
	})

	t.Run("failed message requeued with higher attempt", func(t *testing.T) {
		b := newBroker(t)
		rec := newBrokerRecorder()
		fail := func(d feed.Delivery) error {
			if d.Attempt == 1 {
				return errors.New("transient")
			}
			return nil
		}
		startBrokerConsumer(t, b, "requeue", feed.ConsumeOptions{}, rec.handle(fail))
		brokerPublish(t, b, "requeue", []byte("x"))

		rec.waitTotal(t, 2)
		time.Sleep(brokerQuiet)
		if got := rec.attempts("x"); !slices.Equal(got, []int{1, 2}) {
			t.Errorf("attempts = %v; want [1 2]", got)
		}
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "requeue", 0)
	})

	t.Run("poison message dead-lettered after MaxAttempts", func(t *testing.T) {
		b := newBroker(t)
		rec := newBrokerRecorder()
		fail := func(d feed.Delivery) error {
			if string(d.Body) == "poison" {
				return errors.New("poison")
			}
			return nil
		}
		// The poison goes first so that every later message queues behind
		// its retries: the consumer must get past it.
		brokerPublish(t, b, "poison", []byte("poison"))
		brokerPublish(t, b, "poison", brokerBodies(0, 5)...)
		c := startBrokerConsumer(t, b, "poison", feed.ConsumeOptions{Concurrency: 1}, rec.handle(fail))

		rec.waitTotal(t, feed.MaxAttempts+5)
		brokerEventually(t, "one dead letter", func() bool {
			n, err := b.DeadLetters(t.Context(), "poison")
			return err == nil && n == 1
		})
		// Consumption goes on after the dead-lettering.
		brokerPublish(t, b, "poison", []byte("late"))
		rec.waitTotal(t, feed.MaxAttempts+6)
		time.Sleep(brokerQuiet) // a poison message coming back would show now
		c.stop(t)

		want := make([]int, feed.MaxAttempts)
		for i := range want {
			want[i] = i + 1
		}
		if got := rec.attempts("poison"); !slices.Equal(got, want) {
			t.Errorf("poison delivered with attempts %v; want %v", got, want)
		}
		for _, body := range []string{"m00000", "m00004", "late"} {
			if got := rec.attempts(body); len(got) != 1 {
				t.Errorf("%s delivered with attempts %v; want once", body, got)
			}
		}
		checkBrokerCount(t, "Pending", b.Pending, "poison", 0)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "poison", 1)
	})

	t.Run("cancel drains the handler in flight", func(t *testing.T) {
		b := newBroker(t)
		brokerPublish(t, b, "drain", brokerBodies(0, 5)...)

		started, release := make(chan string, 1), make(chan struct{})
		var handled []string
		var ctxErr error
		c1 := startBrokerConsumer(t, b, "drain", feed.ConsumeOptions{Concurrency: 1}, func(ctx context.Context, d feed.Delivery) error {
			handled = append(handled, string(d.Body)) // one handler at a time
			if len(handled) == 1 {
				started <- string(d.Body)
				<-release
				ctxErr = ctx.Err()
			}
			return nil
		})
		first := brokerRecv(t, started, "first delivery")
		c1.cancel()
		select {
		case err := <-c1.done:
			t.Fatalf("Consume returned %v with a handler in flight", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(release)
		c1.stop(t)
		if ctxErr != nil {
			t.Errorf("handler ctx ended with the consumer: %v; want it to finish its message", ctxErr)
		}
		if !slices.Equal(handled, []string{first}) {
			t.Errorf("cancelled consumer handled %v; want only %s", handled, first)
		}

		// A later consumer gets everything else, and not the acked message.
		rec := newBrokerRecorder()
		c2 := startBrokerConsumer(t, b, "drain", feed.ConsumeOptions{Concurrency: 2}, rec.handle(nil))
		rec.waitDistinct(t, 4)
		time.Sleep(brokerQuiet)
		c2.stop(t)
		if got := rec.attempts(first); got != nil {
			t.Errorf("acked message %s delivered again with attempts %v", first, got)
		}
		for i := range 5 {
			if body := fmt.Sprintf("m%05d", i); body != first && len(rec.attempts(body)) != 1 {
				t.Errorf("%s delivered with attempts %v; want once", body, rec.attempts(body))
			}
		}
		checkBrokerCount(t, "Pending", b.Pending, "drain", 0)
	})

	t.Run("drain bound cuts off a stuck handler and its message comes back", func(t *testing.T) {
		// A handler waiting on something that stopped with the process must
		// not hold the shutdown: past Drain its ctx ends, Consume returns,
		// and the message is delivered again.
		b := newBroker(t)
		brokerPublish(t, b, "stuck", []byte("x"))
		started := make(chan string, 1)
		c1 := startBrokerConsumer(t, b, "stuck", feed.ConsumeOptions{Drain: 200 * time.Millisecond}, func(ctx context.Context, d feed.Delivery) error {
			started <- string(d.Body)
			<-ctx.Done()
			return ctx.Err()
		})
		brokerRecv(t, started, "first delivery")
		c1.stop(t)

		rec := newBrokerRecorder()
		c2 := startBrokerConsumer(t, b, "stuck", feed.ConsumeOptions{}, rec.handle(nil))
		rec.waitTotal(t, 1)
		c2.stop(t)
		if got := rec.attempts("x"); len(got) != 1 {
			t.Errorf("the cut-off message was delivered with attempts %v; want once more", got)
		}
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "stuck", 0)
	})

	t.Run("message of a failed worker delivered again", func(t *testing.T) {
		// The worker holds the message when it is told to stop, then fails
		// it: the message must reach the next consumer (at-least-once).
		b := newBroker(t)
		brokerPublish(t, b, "crash", []byte("x"))
		started, release := make(chan string, 1), make(chan struct{})
		c1 := startBrokerConsumer(t, b, "crash", feed.ConsumeOptions{Concurrency: 1}, func(ctx context.Context, d feed.Delivery) error {
			started <- string(d.Body)
			<-release
			return errors.New("worker died")
		})
		brokerRecv(t, started, "first delivery")
		c1.cancel()
		close(release)
		c1.stop(t)

		rec := newBrokerRecorder()
		c2 := startBrokerConsumer(t, b, "crash", feed.ConsumeOptions{}, rec.handle(nil))
		rec.waitTotal(t, 1)
		c2.stop(t)
		if got := rec.attempts("x"); len(got) != 1 || got[0] < 2 {
			t.Errorf("redelivered with attempts %v; want one delivery with attempt > 1", got)
		}
	})

	t.Run("pending counts ready messages", func(t *testing.T) {
		b := newBroker(t)
		checkBrokerCount(t, "Pending", b.Pending, "pending", 0)
		brokerPublish(t, b, "pending", brokerBodies(0, 3)...)
		brokerPublish(t, b, "pending") // no bodies: a no-op
		checkBrokerCount(t, "Pending", b.Pending, "pending", 3)
		checkBrokerCount(t, "DeadLetters", b.DeadLetters, "pending", 0)

		started, release := make(chan string, 3), make(chan struct{})
		startBrokerConsumer(t, b, "pending", feed.ConsumeOptions{Concurrency: 1, Prefetch: 1}, func(ctx context.Context, d feed.Delivery) error {
			started <- string(d.Body)
			<-release
			return nil
		})
		brokerRecv(t, started, "first delivery")
		// The message in hand is not pending.
		checkBrokerCount(t, "Pending", b.Pending, "pending", 2)
		close(release)
		brokerRecv(t, started, "second delivery")
		brokerRecv(t, started, "third delivery")
		checkBrokerCount(t, "Pending", b.Pending, "pending", 0)
	})

	t.Run("two consumers share a queue", func(t *testing.T) {
		b := newBroker(t)
		const n = 1000
		rec := newBrokerRecorder()
		var mu sync.Mutex
		per := map[string]int{}
		handler := func(name string) feed.Handler {
			h := rec.handle(nil)
			return func(ctx context.Context, d feed.Delivery) error {
				time.Sleep(time.Millisecond) // some work, so that one consumer cannot take everything
				mu.Lock()
				per[name]++
				mu.Unlock()
				return h(ctx, d)
			}
		}
		a := startBrokerConsumer(t, b, "shared", feed.ConsumeOptions{Concurrency: 4}, handler("a"))
		c := startBrokerConsumer(t, b, "shared", feed.ConsumeOptions{Concurrency: 4}, handler("b"))
		for i := 0; i < n; i += 100 {
			brokerPublish(t, b, "shared", brokerBodies(i, 100)...)
		}
		rec.waitDistinct(t, n)
		time.Sleep(brokerQuiet)
		a.stop(t)
		c.stop(t)
		if got := rec.total(); got != n {
			t.Errorf("%d deliveries of %d messages; want each once", got, n)
		}
		mu.Lock()
		defer mu.Unlock()
		if per["a"] == 0 || per["b"] == 0 {
			t.Errorf("deliveries per consumer = %v; want both to take a share", per)
		}
	})

	t.Run("publish with a cancelled context fails", func(t *testing.T) {
		b := newBroker(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := b.Publish(ctx, "cancelled", []byte("x")); err == nil {
			t.Fatal("Publish with a cancelled ctx: err = nil; want an error")
		}
		checkBrokerCount(t, "Pending", b.Pending, "cancelled", 0)
	})

	t.Run("consume with a cancelled context returns", func(t *testing.T) {
		b := newBroker(t)
		brokerPublish(t, b, "idle", []byte("x"))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		called := false
		err := b.Consume(ctx, "idle", feed.ConsumeOptions{}, func(context.Context, feed.Delivery) error {
			called = true
			return nil
		})
		if err != nil || called {
			t.Errorf("Consume with a cancelled ctx: err = %v, handler called = %v; want nil, false", err, called)
		}
		checkBrokerCount(t, "Pending", b.Pending, "idle", 1)
	})

	t.Run("ping", func(t *testing.T) {
		b := newBroker(t)
		if err := b.Ping(t.Context()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
}

// brokerBodies returns n distinct bodies numbered from first.
func brokerBodies(first, n int) [][]byte {
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, "m%05d", first+i)
	}
	return bodies
}

func brokerPublish(t *testing.T, b feed.Broker, queue string, bodies ...[]byte) {
	t.Helper()
	if err := b.Publish(t.Context(), queue, bodies...); err != nil {
		t.Errorf("Publish(%s, %d bodies): %v", queue, len(bodies), err)
	}
}

// checkBrokerCount waits for count (Pending or DeadLetters) of queue to be
// want: a network broker updates its counters a moment after the event.
func checkBrokerCount(t *testing.T, what string, count func(context.Context, string) (int, error), queue string, want int) {
	t.Helper()
	var got int
	var err error
	deadline := time.Now().Add(brokerWait)
	for {
		got, err = count(t.Context(), queue)
		if err == nil && got == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("%s(%s): %v", what, queue, err)
	} else if got != want {
		t.Errorf("%s(%s) = %d; want %d", what, queue, got, want)
	}
}

func brokerEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(brokerWait); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", brokerWait, what)
		}
	}
}

func brokerRecv(t *testing.T, c <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(brokerWait):
		t.Fatalf("timed out after %v waiting for %s", brokerWait, what)
		return ""
	}
}

// brokerConsumer is a Consume call running in the background.
type brokerConsumer struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startBrokerConsumer runs b.Consume until stop, which t.Cleanup calls if
// the test does not.
func startBrokerConsumer(t *testing.T, b feed.Broker, queue string, opts feed.ConsumeOptions, h feed.Handler) *brokerConsumer {
	t.Helper()
	// Not t.Context(): it ends before cleanups run, and the test decides
	// when its consumers stop.
	ctx, cancel := context.WithCancel(context.Background())
	c := &brokerConsumer{cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- b.Consume(ctx, queue, opts, h) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop cancels the consumer and checks that Consume drains and returns nil.
func (c *brokerConsumer) stop(t *testing.T) {
	t.Helper()
	c.once.Do(func() {
		c.cancel()
		select {
		case err := <-c.done:
			if err != nil {
				t.Errorf("Consume after cancel: %v; want nil", err)
			}
		case <-time.After(brokerWait):
			t.Errorf("Consume did not return within %v of its ctx ending", brokerWait)
		}
	})
}

// brokerRecorder records the attempts every body was delivered with.
type brokerRecorder struct {
	mu     sync.Mutex
	seen   map[string][]int
	n      int
	change chan struct{} // closed and replaced on every delivery
}

func newBrokerRecorder() *brokerRecorder {
	return &brokerRecorder{seen: map[string][]int{}, change: make(chan struct{})}
}

// handle returns a handler that records each delivery, then returns
// fail's verdict (nil fail: success).
func (r *brokerRecorder) handle(fail func(feed.Delivery) error) feed.Handler {
	return func(ctx context.Context, d feed.Delivery) error {
		r.mu.Lock()
		r.seen[string(d.Body)] = append(r.seen[string(d.Body)], d.Attempt)
		r.n++
		close(r.change)
		r.change = make(chan struct{})
		r.mu.Unlock()
		if fail != nil {
			return fail(d)
		}
		return nil
	}
}

func (r *brokerRecorder) attempts(body string) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen[body])
}

func (r *brokerRecorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *brokerRecorder) waitTotal(t *testing.T, n int) {
	t.Helper()
	r.wait(t, fmt.Sprintf("%d deliveries", n), func() bool { return r.n >= n })
}

func (r *brokerRecorder) waitDistinct(t *testing.T, n int) {
	t.Helper()
	r.wait(t, fmt.Sprintf("%d distinct messages", n), func() bool { return len(r.seen) >= n })
}

// wait blocks until cond, evaluated with r.mu held, is true.
func (r *brokerRecorder) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(brokerWait)
	for {
		r.mu.Lock()
		ok, change, n, distinct := cond(), r.change, r.n, len(r.seen)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-change:
		case <-timeout:
			t.Fatalf("timed out after %v waiting for %s (got %d deliveries of %d messages)", brokerWait, what, n, distinct)
		}
	}
}
