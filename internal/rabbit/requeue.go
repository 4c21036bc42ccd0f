package rabbit

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// requeueBatch is how many dead letters Requeue moves per confirm round
// trip.
const requeueBatch = 100

// Requeue moves the dead letters of queue back onto queue as fresh
// messages, so each gets feed.MaxAttempts deliveries again, and returns how
// many it moved (on error too: those before it). It moves at most the
// number the dead-letter queue held when it started, and at most max if
// max > 0: a message that fails again during the run and is dead-lettered
// anew waits for the next run instead of looping through this one.
//
// Delivery stays at-least-once: a dead letter is acked only once its copy
// is confirmed on queue, so a crash or an error in between leaves it in
// the dead-letter queue as well (a duplicate, which the idempotent
// handlers absorb), never nowhere.
func (b *Broker) Requeue(ctx context.Context, queue string, max int) (int, error) {
	// Counting declares the topology, as DeadLetters does: requeueing
	// into a queue that is not there would be unroutable.
	limit, err := b.count(ctx, queue, b.deadName(queue))
	if err != nil {
		return 0, fmt.Errorf("rabbit: requeue dead letters of %s: %w", queue, err)
	}
	if max > 0 {
		limit = min(limit, max)
	}
	moved := 0
	for moved < limit {
		n, err := b.requeue(ctx, queue, min(requeueBatch, limit-moved))
		moved += n
		if err != nil {
			return moved, fmt.Errorf("rabbit: requeue dead letters of %s: %w", queue, err)
		}
		if n == 0 {
			break // someone else emptied the dead-letter queue
		}
		if b.requeued != nil {
			b.requeued()
		}
	}
	return moved, nil
}

// requeue moves up to n dead letters of queue with one confirm round trip
// and returns how many it moved.
//
// It takes them with basic.get rather than a consumer: a get takes exactly
// one message, so the run never holds more than its bound and has nothing
// to hand back at the end, where a consumer's prefetch would have to be
// cancelled and returned. A get costs a round trip per message, which is
// fine for an operator's tool draining a queue that should be small.
func (b *Broker) requeue(ctx context.Context, queue string, n int) (int, error) {
	pc, err := b.borrow(ctx)
	if err != nil {
		return 0, err
	}
	// An unclean release closes the channel, which hands every dead letter
	// taken and not yet acked back to the dead-letter queue.
	clean := false
	defer func() { b.release(pc, clean) }()
	dead := b.deadName(queue)
	msgs := make([]amqp.Publishing, 0, n)
	var last amqp.Delivery
	for range n {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		d, ok, err := pc.ch.Get(dead, false)
		if err != nil {
			return 0, fmt.Errorf("get from %s: %w", dead, err)
		}
		if !ok {
			break
		}
		// Body and content type only: the headers carry the old attempt
		// count (x-feedd-attempts on a classic queue) and the death
		// history, and the copy starts afresh.
		msgs = append(msgs, amqp.Publishing{ContentType: d.ContentType, Body: d.Body})
		last = d
	}
	if len(msgs) == 0 {
		clean = true
		return 0, nil
	}
	if _, err := b.publish(ctx, pc, queue, msgs); err != nil {
		return 0, err
	}
	// One ack for the whole batch: the channel is ours alone, so every
	// unacked delivery on it is one of the gets above.
	if err := last.Ack(true); err != nil {
		// The copies are on queue and the dead letters go back too:
		// duplicates, not losses.
		return len(msgs), fmt.Errorf("ack %d requeued dead letters (they stay in %s too): %w", len(msgs), dead, err)
	}
	clean = true
	return len(msgs), nil
}
