package rabbit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
)

// testURL is the RabbitMQ the tests use; FEEDD_TEST_AMQP_URL overrides it.
func testURL() string {
	if u := os.Getenv("FEEDD_TEST_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// newTestBroker dials the test RabbitMQ with a random prefix and deletes
// everything the broker declared when the test ends. Without a RabbitMQ it
// skips, unless CI=true demands one.
func newTestBroker(tb testing.TB) *Broker {
	tb.Helper()
	return newTestBrokerWith(tb, testURL(), Options{})
}

// newTestBrokerWith is newTestBroker on url with opts (a random Prefix is
// set).
func newTestBrokerWith(tb testing.TB, url string, opts Options) *Broker {
	tb.Helper()
	var rnd [6]byte
	rand.Read(rnd[:])
	prefix := "feeddtest." + hex.EncodeToString(rnd[:]) + "."
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Prefix = prefix
	b, err := Dial(ctx, url, opts, logger)
	if err != nil {
		feedtest.Missing(tb, "no RabbitMQ at %s (%v): start one or set FEEDD_TEST_AMQP_URL", testURL(), err)
	}
	// Cleanups run last-in first-out: the broker closes first, then its
	// queues go.
	tb.Cleanup(func() { deleteTopology(tb, b) })
	tb.Cleanup(func() {
		if err := b.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return b
}

// deleteTopology deletes the queues and exchange b declared, on a
// connection of its own since b is closed by now.
func deleteTopology(tb testing.TB, b *Broker) {
	tb.Helper()
	conn, err := amqp.Dial(testURL())
	if err != nil {
		tb.Errorf("cleanup: dial: %v", err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		tb.Errorf("cleanup: channel: %v", err)
		return
	}
	b.known.Range(func(k, _ any) bool {
		q := k.(string)
		for _, name := range []string{b.prefix + q, b.deadName(q)} {
			if _, err := ch.QueueDelete(name, false, false, false); err != nil {
				tb.Errorf("cleanup: delete queue %s: %v", name, err)
			}
		}
		return true
	})
	if err := ch.ExchangeDelete(b.dlxName(), false, false); err != nil {
		tb.Errorf("cleanup: delete exchange %s: %v", b.dlxName(), err)
	}
}

// testWriter sends the broker's log to the test log, so that it shows
// with the test that produced it (and only when that test fails or -v).
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(string(p[:len(p)-1]))
	return len(p), nil
}

func TestBroker(t *testing.T) {
	feedtest.TestBroker(t, func(t *testing.T) feed.Broker { return newTestBroker(t) })
}

// TestBrokerClassic: classic queues (FEEDD_AMQP_QUEUE_TYPE=classic) pass
// the same contract, the delivery limit and dead letters included.
func TestBrokerClassic(t *testing.T) {
	feedtest.TestBroker(t, func(t *testing.T) feed.Broker {
		return newTestBrokerWith(t, testURL(), Options{QueueType: "classic"})
	})
}

// TestFailoverURLs: of several comma-separated nodes, the broker uses one
// that answers, and a bad queue type is refused.
func TestFailoverURLs(t *testing.T) {
	b := newTestBrokerWith(t, "amqp://guest:guest@127.0.0.1:1/, "+testURL(), Options{})
	ctx := t.Context()
	got := make(chan string, 1)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(cctx, "tasks", feed.ConsumeOptions{}, func(ctx context.Context, d feed.Delivery) error {
			got <- string(d.Body)
			return nil
		})
	}()
	if err := b.Publish(ctx, "tasks", []byte("via the second node")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if s := recv(t, got); s != "via the second node" {
		t.Errorf("got %q", s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Consume: %v", err)
	}
	if _, err := Dial(ctx, testURL(), Options{QueueType: "stream"}, nil); err == nil {
		t.Error("Dial with queue type stream: err = nil; want an error")
	}
}

// dropConnections cuts the TCP connections under the broker, as a network
// failure or a killed broker would: no AMQP close handshake.
func (b *Broker) dropConnections() {
	for _, l := range []*link{b.pub, b.sub} {
		if s := l.cur.Load(); s != nil {
			s.raw.Close()
		}
	}
}

func TestReconnect(t *testing.T) {
	b := newTestBroker(t)
	ctx := t.Context()

	got := make(chan string, 100)
	release := make(chan struct{})
	var held atomic.Bool
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(cctx, "tasks", feed.ConsumeOptions{Concurrency: 2}, func(ctx context.Context, d feed.Delivery) error {
			if string(d.Body) == "held" && held.CompareAndSwap(false, true) {
				// The first delivery of this message is in hand when the
				// connection drops; its ack cannot reach the broker.
				got <- fmt.Sprintf("%s/%d", d.Body, d.Attempt)
				<-release
				return nil
			}
			got <- fmt.Sprintf("%s/%d", d.Body, d.Attempt)
			return nil
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Consume: %v", err)
		}
	}()

	if err := b.Publish(ctx, "tasks", []byte("before"), []byte("held")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	want := map[string]bool{"before/1": true, "held/1": true}
	for len(want) > 0 {
		s := recv(t, got)
		if !want[s] {
			t.Fatalf("got delivery %s; want one of %v", s, want)
		}
		delete(want, s)
	}

	b.dropConnections()
	close(release)

	// The first publish may meet the dead connection; the next ones must
	// reconnect.
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err = b.Publish(ctx, "tasks", []byte("after")); err != nil; err = b.Publish(ctx, "tasks", []byte("after")) {
		t.Logf("publish after the drop: %v", err)
		if time.Now().After(deadline) {
			t.Fatalf("Publish did not recover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := b.Ping(ctx); err != nil {
		t.Errorf("Ping after reconnect: %v", err)
	}

	// The consumer resubscribes: it gets the new message, and the one
	// whose ack was lost comes back (at-least-once) with a higher attempt.
	want = map[string]bool{"after/1": true, "held/2": true}
	for len(want) > 0 {
		s := recv(t, got)
		if s == "before/2" {
			// Its ack left just before the drop and may have died with
			// the connection: at least once, it comes back.
			continue
		}
		if !want[s] {
			t.Fatalf("got delivery %s; want one of %v", s, want)
		}
		delete(want, s)
	}
}

func recv(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(15 * time.Second):
		t.Fatal("timed out waiting for a delivery")
		return ""
	}
}

// TestPublishToDeletedQueue checks that a message the broker cannot route
// is an error, not a silent loss, and that the next publish declares the
// queue again.
func TestPublishToDeletedQueue(t *testing.T) {
	b := newTestBroker(t)
	ctx := t.Context()
	if err := b.Publish(ctx, "posts", []byte("a")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	deleteQueue(t, b.prefix+"posts")

	if err := b.Publish(ctx, "posts", []byte("b"), []byte("c")); err == nil {
		t.Fatal("Publish to a deleted queue: err = nil; want unroutable")
	} else {
		t.Logf("Publish to a deleted queue: %v", err)
	}
	if err := b.Publish(ctx, "posts", []byte("d")); err != nil {
		t.Fatalf("Publish after redeclaring: %v", err)
	}
	if n, err := b.Pending(ctx, "posts"); err != nil || n != 1 {
		t.Errorf("Pending = %d, %v; want 1", n, err)
	}
}

// TestQueueDeletedUnderConsumer checks that a consumer whose queue is
// deleted (the broker cancels its subscription) declares the queue again
// and goes on consuming.
func TestQueueDeletedUnderConsumer(t *testing.T) {
	b := newTestBroker(t)
	ctx := t.Context()
	got := make(chan string, 10)
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(cctx, "tasks", feed.ConsumeOptions{}, func(ctx context.Context, d feed.Delivery) error {
			got <- string(d.Body)
			return nil
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Consume: %v", err)
		}
	}()
	if err := b.Publish(ctx, "tasks", []byte("a")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if s := recv(t, got); s != "a" {
		t.Fatalf("got %s; want a", s)
	}
	deleteQueue(t, b.prefix+"tasks")

	// The first publish finds the queue gone (unroutable) and the next one
	// declares it again; the consumer, cancelled by the broker, subscribes
	// again.
	deadline := time.Now().Add(10 * time.Second)
	for err := b.Publish(ctx, "tasks", []byte("b")); err != nil; err = b.Publish(ctx, "tasks", []byte("b")) {
		t.Logf("publish after delete: %v", err)
		if time.Now().After(deadline) {
			t.Fatalf("Publish did not recover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := recv(t, got); s != "b" {
		t.Fatalf("got %s; want b", s)
	}
}

func deleteQueue(t *testing.T, name string) {
	t.Helper()
	conn, err := amqp.Dial(testURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDelete(name, false, false, false); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentPublish hammers the channel pool from more goroutines than
// it has channels.
func TestConcurrentPublish(t *testing.T) {
	b := newTestBroker(t)
	ctx := t.Context()
	const goroutines, batches, batch = 64, 5, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range batches {
				bodies := make([][]byte, batch)
				for j := range bodies {
					bodies[j] = fmt.Appendf(nil, "%d-%d-%d", g, i, j)
				}
				if err := b.Publish(ctx, "tasks", bodies...); err != nil {
					t.Errorf("Publish: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if n, err := b.Pending(ctx, "tasks"); err != nil || n != goroutines*batches*batch {
		t.Errorf("Pending = %d, %v; want %d", n, err, goroutines*batches*batch)
	}
	if got := len(b.free); got > cap(b.slots) {
		t.Errorf("%d idle channels; want at most %d", got, cap(b.slots))
	}
}

func TestDialFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := Dial(ctx, "amqp://guest:wrong@127.0.0.1:1/", Options{}, nil)
	if err == nil {
		t.Fatal("Dial to a closed port: err = nil")
	}
}

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&amqp.Error{Code: amqp.PreconditionFailed}, true},
		{fmt.Errorf("declare: %w", &amqp.Error{Code: amqp.AccessRefused}), true},
		{&amqp.Error{Code: amqp.ConnectionForced}, false},
		{errors.New("eof"), false},
	} {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}

func TestAttempt(t *testing.T) {
	for _, tc := range []struct {
		d    amqp.Delivery
		want int
	}{
		{amqp.Delivery{}, 1},
		{amqp.Delivery{Redelivered: true}, 2},
		{amqp.Delivery{Redelivered: true, Headers: amqp.Table{"x-delivery-count": int64(3)}}, 4},
		{amqp.Delivery{Headers: amqp.Table{"x-delivery-count": int32(1)}}, 2},
		// A classic queue's copy sent back after its 2nd attempt failed.
		{amqp.Delivery{Headers: amqp.Table{attemptsHeader: int64(2)}}, 3},
		{amqp.Delivery{Headers: amqp.Table{attemptsHeader: int32(4)}}, 5},
	} {
		if got := attempt(tc.d); got != tc.want {
			t.Errorf("attempt(%+v) = %d; want %d", tc.d, got, tc.want)
		}
	}
}

// BenchmarkPublish measures confirmed publishing. batch=1 is the baseline:
// one confirm round trip per message.
func BenchmarkPublish(b *testing.B) {
	br := newTestBroker(b)
	body := make([]byte, 200) // about a fan-out task
	for _, bc := range []struct {
		name     string
		batch    int
		parallel bool
	}{
		{"batch=1", 1, false},
		{"batch=100", 100, false},
		{"batch=100/parallel", 100, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bodies := make([][]byte, bc.batch)
			for i := range bodies {
				bodies[i] = body
			}
			ctx := b.Context()
			// Declare the queue before the clock starts.
			if err := br.Publish(ctx, "bench", bodies...); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if bc.parallel {
				// Many publishers at once, as a busy relay and dispatcher
				// are: 8 goroutines per CPU share the channel pool.
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := br.Publish(ctx, "bench", bodies...); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					if err := br.Publish(ctx, "bench", bodies...); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*bc.batch)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// TestRetryDelay: a failed message waits longer at each attempt, under 4 s
// in all before its last one, and not at all once it is dead-lettered.
func TestRetryDelay(t *testing.T) {
	var total time.Duration
	for a := 1; a < feed.MaxAttempts; a++ {
		d := retryDelay(a)
		if a > 1 && d <= retryDelay(a-1) {
			t.Errorf("retryDelay(%d) = %v; want more than retryDelay(%d) = %v", a, d, a-1, retryDelay(a-1))
		}
		total += d
	}
	if total > 4*time.Second {
		t.Errorf("delays before the last attempt add up to %v; want at most 4s", total)
	}
	if d := retryDelay(feed.MaxAttempts); d != 0 {
		t.Errorf("retryDelay(MaxAttempts) = %v; want 0", d)
	}
}
