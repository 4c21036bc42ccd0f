package rabbit

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// pubChan is a channel in confirm mode on the publishing connection.
type pubChan struct {
	s  *session
	ch *amqp.Channel
	// returns receives mandatory messages the broker could not route (the
	// queue was deleted under us). amqp091 closes it with the channel.
	returns chan amqp.Return
}

// borrow takes an idle channel of the live connection, or opens one,
// waiting while all PublishChannels are in use.
func (b *Broker) borrow(ctx context.Context) (*pubChan, error) {
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if pc := b.idle(); pc != nil {
		return pc, nil
	}
	pc, err := b.open(ctx)
	if err != nil {
		<-b.slots
		return nil, err
	}
	return pc, nil
}

// idle returns a pooled channel that is still open, or nil. Channels of a
// connection that died are dropped here.
func (b *Broker) idle() *pubChan {
	for {
		select {
		case pc := <-b.free:
			if !pc.ch.IsClosed() {
				return pc
			}
		default:
			return nil
		}
	}
}

func (b *Broker) open(ctx context.Context) (*pubChan, error) {
	s, err := b.pub.session(ctx)
	if err != nil {
		return nil, err
	}
	ch, err := s.conn.Channel()
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		ch.Close()
		return nil, fmt.Errorf("confirm mode: %w", err)
	}
	return &pubChan{s: s, ch: ch, returns: ch.NotifyReturn(make(chan amqp.Return, 16))}, nil
}

// release gives pc back for reuse when clean is set: the call that used it
// saw every confirm and return it caused, so the next borrower starts from
// a quiet channel. Anything else is closed.
func (b *Broker) release(pc *pubChan, clean bool) {
	if clean && !pc.ch.IsClosed() {
		b.free <- pc // never blocks: free has a place for every slot
	} else {
		// Late returns must not stall the connection's reader (amqp091
		// waits up to 5s on a full listener): drain them until amqp091
		// closes the listener along with the channel.
		go func() {
			for range pc.returns {
			}
		}()
		// Closing waits for the broker; a caller whose ctx ended should
		// not.
		go closeChannel(pc.ch)
	}
	<-b.slots
}

// withChannel runs f on a borrowed channel. A failed f leaves the channel
// closed by the server (or unknown), so it is discarded.
func (b *Broker) withChannel(ctx context.Context, f func(*pubChan) error) error {
	pc, err := b.borrow(ctx)
	if err != nil {
		return err
	}
	err = f(pc)
	b.release(pc, err == nil)
	return err
}

// Publish sends bodies to queue as persistent messages and returns once
// RabbitMQ has confirmed every one of them, that is, written it to a
// quorum of the queue's replicas. On error some bodies may have been
// accepted all the same: callers republish, and consumers are idempotent.
func (b *Broker) Publish(ctx context.Context, queue string, bodies ...[]byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rabbit: publish to %s: %w", queue, err)
	}
	if len(bodies) == 0 {
		return nil
	}
	pc, err := b.borrow(ctx)
	if err != nil {
		return fmt.Errorf("rabbit: publish to %s: %w", queue, err)
	}
	msgs := make([]amqp.Publishing, len(bodies))
	for i, body := range bodies {
		msgs[i].Body = body
	}
	clean, err := b.publish(ctx, pc, queue, msgs)
	b.release(pc, clean)
	if err != nil {
		return fmt.Errorf("rabbit: publish to %s: %w", queue, err)
	}
	return nil
}

// retry sends body back to the end of queue as its attempt-th try (the
// header attemptsHeader), with a confirm: a classic queue's way to count
// what a quorum queue counts itself.
func (b *Broker) retry(ctx context.Context, queue string, body []byte, attempt int) error {
	pc, err := b.borrow(ctx)
	if err != nil {
		return err
	}
	clean, err := b.publish(ctx, pc, queue, []amqp.Publishing{{Headers: amqp.Table{attemptsHeader: int64(attempt)}, Body: body}})
	b.release(pc, clean)
	return err
}

// publish sends msgs to queue as persistent messages and waits for their
// confirms. It reports whether pc is clean (no confirm or return of this
// call still to come) alongside the error.
func (b *Broker) publish(ctx context.Context, pc *pubChan, queue string, msgs []amqp.Publishing) (clean bool, err error) {
	if pc.s.blocked.Load() {
		return true, errors.New("broker is blocking publishers (resource alarm)")
	}
	if err := b.declare(pc.s, pc.ch, queue); err != nil {
		return false, err
	}
	name := b.prefix + queue
	// Send everything first and wait after: the confirms of a batch then
	// cost one round trip (the broker acks with multiple=true), not one
	// per message.
	pending := make([]*amqp.DeferredConfirmation, 0, len(msgs))
	for _, m := range msgs {
		m.DeliveryMode = amqp.Persistent
		dc, err := pc.ch.PublishWithDeferredConfirm("", name, true, false, m)
		if err != nil {
			return false, err
		}
		pending = append(pending, dc)
	}
	var (
		nacked   int
		returned []amqp.Return
		returns  = pc.returns
	)
	for _, dc := range pending {
	wait:
		for {
			select {
			case <-dc.Done():
				break wait
			case r, ok := <-returns:
				if !ok {
					returns = nil // channel closed; dc is being nacked
					continue
				}
				returned = append(returned, r)
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		if !dc.Acked() {
			nacked++
		}
	}
	// RabbitMQ sends basic.return before the basic.ack of the same
	// message, so every return of this call is queued by now.
drain:
	for returns != nil {
		select {
		case r, ok := <-returns:
			if !ok {
				break drain
			}
			returned = append(returned, r)
		default:
			break drain
		}
	}
	if nacked > 0 {
		if pc.ch.IsClosed() {
			return false, fmt.Errorf("channel closed with %d of %d messages unconfirmed", nacked, len(msgs))
		}
		// Not clean: the channel is discarded. On RabbitMQ 3.10 a channel
		// that published to a quorum queue while its leader was being
		// elected (its node killed) goes on nacking every later publish to
		// that queue, though the new leader is up; a new channel is
		// confirmed at once (TestRabbitClusterLeaderKill).
		return false, fmt.Errorf("broker nacked %d of %d messages", nacked, len(msgs))
	}
	if len(returned) > 0 {
		// The queue is gone although this connection declared it; forget
		// that so the next publish declares it again.
		pc.s.declared.Delete(queue)
		return true, fmt.Errorf("%d of %d messages unroutable: %s", len(returned), len(msgs), returned[0].ReplyText)
	}
	return true, nil
}
