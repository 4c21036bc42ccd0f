package rabbit

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

// queueTypes are the two queue types every Requeue test runs on.
var queueTypes = []string{amqp.QueueTypeQuorum, amqp.QueueTypeClassic}

// TestRequeue: dead letters made by failing handlers go back and are
// handled once more, on both queue types.
func TestRequeue(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(typ, func(t *testing.T) {
			feedtest.TestRequeue(t, func(t *testing.T) feedtest.Requeuer {
				return newTestBrokerWith(t, testURL(), Options{QueueType: typ})
			})
		})
	}
}

// TestRequeueNotLooped fails every requeued message again in the middle of
// the run, as a consumer still meeting the outage would: the run moves
// exactly what the dead-letter queue held when it started, in order, and
// ends, leaving the failed ones dead.
func TestRequeueNotLooped(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(typ, func(t *testing.T) {
			b := newTestBrokerWith(t, testURL(), Options{QueueType: typ})
			ch := testChannel(t)
			const n = requeueBatch + 20 // two batches
			for i := range n {
				seedDead(t, b, ch, "tasks", amqp.Publishing{Body: fmt.Appendf(nil, "m%05d", i)})
			}
			waitDead(t, b, "tasks", n)

			var batches [][]string
			b.requeued = func() {
				// Fail the batch again: reject it into the dead-letter
				// queue, as a classic queue's consumer does at its last
				// attempt (and a quorum queue past its delivery limit).
				var bodies []string
				for {
					d, ok, err := ch.Get(b.prefix+"tasks", false)
					if err != nil {
						t.Fatalf("get: %v", err)
					}
					if !ok {
						break
					}
					bodies = append(bodies, string(d.Body))
					if err := d.Nack(false, false); err != nil {
						t.Fatalf("reject: %v", err)
					}
				}
				batches = append(batches, bodies)
				waitDead(t, b, "tasks", n)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			moved, err := b.Requeue(ctx, "tasks", 0)
			if err != nil || moved != n {
				t.Fatalf("Requeue = %d, %v; want %d, nil", moved, err, n)
			}
			if len(batches) != 2 || len(batches[0]) != requeueBatch || len(batches[1]) != n-requeueBatch {
				t.Fatalf("batch sizes %d; want %d then %d", lens(batches), requeueBatch, n-requeueBatch)
			}
			// The second batch is the rest of the originals, not the first
			// batch failed again.
			for i, body := range slices.Concat(batches...) {
				if want := fmt.Sprintf("m%05d", i); body != want {
					t.Fatalf("message %d moved was %s; want %s", i, body, want)
				}
			}
			waitDead(t, b, "tasks", n)
			if p, err := b.Pending(t.Context(), "tasks"); err != nil || p != 0 {
				t.Errorf("Pending = %d, %v; want 0", p, err)
			}
		})
	}
}

// TestRequeueCopy: a requeued message keeps its body and content type and
// starts at attempt 1, whatever count its dead copy carried; max bounds a
// run.
func TestRequeueCopy(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(typ, func(t *testing.T) {
			b := newTestBrokerWith(t, testURL(), Options{QueueType: typ})
			ch := testChannel(t)
			// What a classic queue's dead letter carries: the attempts of
			// its last copy.
			for i := range 3 {
				seedDead(t, b, ch, "posts", amqp.Publishing{
					ContentType: "application/json",
					Headers:     amqp.Table{attemptsHeader: int64(4)},
					Body:        fmt.Appendf(nil, `{"n":%d}`, i),
				})
			}
			waitDead(t, b, "posts", 3)

			moved, err := b.Requeue(t.Context(), "posts", 2)
			if err != nil || moved != 2 {
				t.Fatalf("Requeue(max 2) = %d, %v; want 2, nil", moved, err)
			}
			waitDead(t, b, "posts", 1)
			for i := range 2 {
				d, ok, err := ch.Get(b.prefix+"posts", true)
				if err != nil || !ok {
					t.Fatalf("get requeued message %d: ok %v, %v", i, ok, err)
				}
				if want := fmt.Sprintf(`{"n":%d}`, i); string(d.Body) != want {
					t.Errorf("body %s; want %s", d.Body, want)
				}
				if d.ContentType != "application/json" {
					t.Errorf("content type %q; want application/json", d.ContentType)
				}
				if d.DeliveryMode != amqp.Persistent {
					t.Errorf("delivery mode %d; want persistent", d.DeliveryMode)
				}
				if _, ok := d.Headers[attemptsHeader]; ok {
					t.Errorf("headers %v still count attempts", d.Headers)
				}
				if a := attempt(d); a != 1 {
					t.Errorf("attempt %d; want 1", a)
				}
			}
		})
	}
}

// testChannel returns a channel of a connection of the test's own.
func testChannel(t *testing.T) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(testURL())
	if err != nil {
		feedtest.Missing(t, "no RabbitMQ at %s (%v)", testURL(), err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// seedDead puts m into queue's dead-letter queue through the dead-letter
// exchange, as RabbitMQ does with a message out of attempts.
func seedDead(t *testing.T, b *Broker, ch *amqp.Channel, queue string, m amqp.Publishing) {
	t.Helper()
	// Declares the topology.
	if _, err := b.DeadLetters(t.Context(), queue); err != nil {
		t.Fatal(err)
	}
	m.DeliveryMode = amqp.Persistent
	if err := ch.PublishWithContext(t.Context(), b.dlxName(), b.deadName(queue), true, false, m); err != nil {
		t.Fatal(err)
	}
}

// waitDead waits for queue's dead-letter queue to hold n messages.
func waitDead(t *testing.T, b *Broker, queue string, n int) {
	t.Helper()
	var got int
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got, err = b.DeadLetters(t.Context(), queue); err == nil && got == n {
			return
		}
	}
	t.Fatalf("DeadLetters(%s) = %d, %v; want %d", queue, got, err, n)
}

func lens(s [][]string) []int {
	n := make([]int, len(s))
	for i := range s {
		n[i] = len(s[i])
	}
	return n
}
