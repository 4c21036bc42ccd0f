package rabbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/feedd/feedd/internal/feed"
)

// Reconnect backoff of a consumer: short enough that a broker restart
// costs seconds, long enough not to hammer a broker that is starting.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Consume runs h on queue's messages until ctx is done. It survives
// connection and channel failures by subscribing again with backoff; only
// Close, or a refusal that retrying cannot fix, ends it with an error.
//
// On ctx done it cancels the subscription, lets the handlers in flight
// finish (their ctx is feed.DrainContext's: a message in hand completes and
// is acked, unless it takes longer than opts.Drain, when it goes back to
// its queue), then closes its channel, which hands the prefetched messages
// no handler started back to the queue.
//
// RabbitMQ 3.x counts a message returned by a closing channel as a
// delivery, so a shutdown uses up one of a prefetched message's
// feed.MaxAttempts. A handler running longer than RabbitMQ's
// consumer_timeout (30 minutes by default) gets its channel closed by the
// broker and its message redelivered.
func (b *Broker) Consume(ctx context.Context, queue string, opts feed.ConsumeOptions, h feed.Handler) error {
	conc := max(opts.Concurrency, 1)
	prefetch := opts.Prefetch
	if prefetch <= 0 {
		prefetch = 2 * conc
	}
	logger := b.logger.With("queue", queue)
	hctx, cancel := feed.DrainContext(ctx, opts)
	defer cancel()
	h = withContext(hctx, h)
	backoff := minBackoff
	for {
		if ctx.Err() != nil {
			return nil
		}
		subscribed := false
		err := b.consume(ctx, queue, conc, prefetch, h, func() { subscribed = true })
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errClosed) || permanent(err) {
			return fmt.Errorf("rabbit: consume %s: %w", queue, err)
		}
		if subscribed {
			backoff = minBackoff
		}
		// Jitter spreads the consumers of many processes after a broker
		// restart.
		wait := backoff/2 + rand.N(backoff/2+1)
		logger.Warn("consumer interrupted; subscribing again", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// consume subscribes once and runs until ctx is done (returning nil after
// the drain) or the subscription ends (returning why). subscribed is
// called once deliveries may flow.
func (b *Broker) consume(ctx context.Context, queue string, conc, prefetch int, h feed.Handler, subscribed func()) (err error) {
	s, err := b.sub.session(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// The queue may be what went away (deleted by an operator):
			// declare it again on the next attempt.
			s.declared.Delete(queue)
		}
	}()
	ch, err := s.conn.Channel()
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	// On every path, closing hands the unacked messages back to the
	// queue.
	defer closeChannel(ch)
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := b.declare(s, ch, queue); err != nil {
		return err
	}
	// Per consumer (global=false): the broker stops sending once prefetch
	// messages are unacked.
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	tag := fmt.Sprintf("feedd-%s-%d", queue, b.tags.Add(1))
	deliveries, err := ch.Consume(b.prefix+queue, tag, false, false, false, false, nil)
	if err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	subscribed()

	logger := b.logger.With("queue", queue)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() { b.work(ctx, queue, deliveries, h, logger) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()

	select {
	case <-ctx.Done():
		// Stop the flow first, so that nothing new arrives while the
		// handlers in flight settle on the open channel. No wait for
		// cancel-ok: a delivery racing the cancel stays unacked until the
		// channel closes below, and then goes back to the queue.
		if err := ch.Cancel(tag, true); err != nil {
			logger.Warn("cancel consumer", "err", err)
		}
		<-done
		return nil
	case err := <-closed:
		// amqp091 closes deliveries too, so the workers stop once their
		// handlers return; their acks fail and RabbitMQ redelivers.
		<-done
		if err == nil {
			return errors.New("channel closed")
		}
		return fmt.Errorf("channel closed: %w", err)
	case <-done:
		if ch.IsClosed() {
			return errors.New("channel closed") // closed won the race
		}
		// deliveries closed while the channel lives: the broker cancelled
		// the subscription (the queue was deleted, or its leader moved).
		return errors.New("subscription cancelled by the broker")
	}
}

// retryDelay is the pause before a message whose a-th attempt failed is
// handed back: 250 ms, doubling; 3.75 s in all before the last attempt.
func retryDelay(a int) time.Duration {
	if a >= feed.MaxAttempts {
		return 0 // dead-lettered: nothing to wait for
	}
	return min(250*time.Millisecond<<(a-1), 4*time.Second)
}

// attemptsHeader carries, on a classic queue, how many times a message
// was tried before it was sent back to its queue (see Broker.retry).
const attemptsHeader = "x-feedd-attempts"

// work runs handlers one at a time until ctx is done or deliveries close.
//
// h runs on its own ctx (withContext): a message in hand completes even
// when the consumer is told to stop, since redoing it elsewhere would cost
// more than finishing it, within the drain bound.
func (b *Broker) work(ctx context.Context, queue string, deliveries <-chan amqp.Delivery, h feed.Handler, logger *slog.Logger) {
	hctx := context.WithoutCancel(ctx)
	for {
		var d amqp.Delivery
		select {
		case <-ctx.Done():
			return
		case dd, ok := <-deliveries:
			if !ok {
				return
			}
			d = dd
		}
		if ctx.Err() != nil {
			// Lost the race with ctx: hand the message back instead of
			// starting work the caller asked us to stop.
			if err := d.Nack(false, true); err != nil {
				logger.Warn("nack after stop", "err", err)
			}
			return
		}
		a := attempt(d)
		if err := h(hctx, feed.Delivery{Body: d.Body, Attempt: a}); err != nil {
			if a >= feed.MaxAttempts {
				logger.Error("handler failed; dead-lettering the message", "attempt", a, "err", err)
			} else {
				logger.Warn("handler failed; requeueing the message", "attempt", a, "err", err)
			}
			// A pause before the message comes back, growing with its
			// attempts, so that a dependency's short outage (a Redis
			// failover) does not burn every attempt in a second. ctx
			// ends it early: shutting down hands the message back at once.
			select {
			case <-ctx.Done():
			case <-time.After(retryDelay(a)):
			}
			b.giveBack(hctx, queue, d, a, logger)
			continue
		}
		if err := d.Ack(false); err != nil {
			logger.Warn("ack failed; the broker will redeliver", "err", err)
		}
	}
}

// giveBack returns a message whose handler failed on its a-th attempt. A
// quorum queue counts the nack and dead-letters past its delivery limit.
// A classic queue counts nothing, so the message is sent again with its
// count in a header and the failed copy acked, or, at the last attempt,
// rejected into the dead-letter exchange.
func (b *Broker) giveBack(ctx context.Context, queue string, d amqp.Delivery, a int, logger *slog.Logger) {
	if !b.classic {
		if err := d.Nack(false, true); err != nil {
			logger.Warn("nack failed; the broker will redeliver", "err", err)
		}
		return
	}
	if a >= feed.MaxAttempts {
		if err := d.Nack(false, false); err != nil {
			logger.Warn("reject failed; the broker will redeliver", "err", err)
		}
		return
	}
	// Sent before the ack: a crash between the two means one extra
	// delivery, never a lost message.
	if err := b.retry(ctx, queue, d.Body, a); err != nil {
		logger.Warn("sending the message back failed; requeueing it uncounted", "err", err)
		if err := d.Nack(false, true); err != nil {
			logger.Warn("nack failed; the broker will redeliver", "err", err)
		}
		return
	}
	if err := d.Ack(false); err != nil {
		logger.Warn("ack failed; the broker will redeliver", "err", err)
	}
}

// attempt numbers a delivery from 1. A quorum queue reports in
// x-delivery-count how many times the message came back; Redelivered is
// the fallback for a queue that does not (a classic queue declared by
// someone else), where it can only tell the first delivery from later ones.
func attempt(d amqp.Delivery) int {
	n, ok := headerInt(d.Headers["x-delivery-count"])
	if !ok {
		n = -1
	}
	if tried, ok := headerInt(d.Headers[attemptsHeader]); ok {
		// A classic queue's retry: the tries before this copy, plus one
		// if this copy itself came back (a lost connection).
		n = max(n, 0) + tried
	}
	switch {
	case n >= 0:
		return int(n) + 1
	case d.Redelivered:
		return 2
	default:
		return 1
	}
}

// headerInt reads an integer header of any AMQP integer type.
func headerInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int32:
		return int64(v), true
	case int16:
		return int64(v), true
	case int8:
		return int64(v), true
	case int:
		return int64(v), true
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	}
	return 0, false
}

// withContext makes h run on hctx whatever ctx it is called with.
func withContext(hctx context.Context, h feed.Handler) feed.Handler {
	return func(_ context.Context, d feed.Delivery) error { return h(hctx, d) }
}
