// Package rabbit implements feed.Broker on RabbitMQ with amqp091-go:
// durable quorum queues (replicated across a cluster) or classic queues,
// publisher confirms, manual acks, a delivery limit that sends poison
// messages to a per-queue dead-letter queue, and reconnection after the
// broker, a node of a cluster or the network goes away.
//
// For a queue q the broker declares, on first use and again on every new
// connection (every declaration is idempotent, so any number of processes
// may race):
//
//	<prefix>q       quorum queue, x-delivery-limit = feed.MaxAttempts-1,
//	                dead-lettered (at-least-once) to <prefix>dlx; or a
//	                classic queue dead-lettered to <prefix>dlx, whose
//	                attempts feedd counts in a header
//	<prefix>dlx     direct exchange shared by all queues of the prefix
//	<prefix>q.dead  queue of the same type bound to <prefix>dlx with key
//	                <prefix>q.dead
//
// Losing a connection or a channel is routine: the next publish redials
// (trying every node of a comma-separated URL list in turn), consumers
// subscribe again with jittered backoff, unacked messages are redelivered,
// and a failed handler's message comes back after a growing pause.
//
// Requeue moves dead letters back onto their queue once their cause is
// fixed (the command feedd requeue-dead).
package rabbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/feedd/feedd/internal/feed"
)

var _ feed.Broker = (*Broker)(nil)

// Options tune a Broker.
type Options struct {
	// Prefix namespaces every queue and exchange name: "feedd." turns the
	// queue "posts" into "feedd.posts". Tests use a random one.
	Prefix string
	// QueueType is "quorum" (the default: replicated by Raft across a
	// cluster, and counting deliveries for the delivery limit) or
	// "classic" (one node; feedd counts attempts itself, see work).
	QueueType string
	// PublishChannels bounds the confirm channels publishing at once
	// (default 16). Each is used by one Publish call at a time, so this is
	// also how many publishes proceed in parallel; the rest wait.
	PublishChannels int
}

// Broker is a feed.Broker on RabbitMQ. It is safe for concurrent use.
type Broker struct {
	prefix  string
	classic bool
	logger  *slog.Logger

	pub *link // publishing and the small synchronous calls (declare, counts, ping)
	sub *link // consuming

	// slots bounds the live publishing channels; free holds the idle ones.
	// A channel is borrowed by one call at a time, which keeps its confirm
	// sequence and its returned messages private to that call.
	slots chan struct{}
	free  chan *pubChan

	tags atomic.Uint64 // consumer tag sequence
	// declaring serialises first declarations across both connections.
	declaring sync.Mutex
	// known records every queue declared by this Broker, across
	// reconnects, so that tests can delete what they created.
	known sync.Map
	// requeued, set by tests only, runs after each batch Requeue moves,
	// so that a test can fail messages again in the middle of a run.
	requeued func()
}

// Dial connects to the RabbitMQ at url (amqp://user:pass@host:5672/vhost)
// and returns a Broker. url may list the nodes of a cluster, separated by
// commas: every (re)connection tries them in turn, from the last one that
// worked. The consuming connection is dialed on the first Consume, so a
// publish-only process holds one connection.
//
// The connections are named "feedd <prefix>publish" and "feedd
// <prefix>consume" (client property connection_name), so that an operator
// can tell the processes of one deployment apart in rabbitmqctl
// list_connections and close exactly theirs.
func Dial(ctx context.Context, url string, opts Options, logger *slog.Logger) (*Broker, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "rabbit")
	n := opts.PublishChannels
	if n <= 0 {
		n = 16
	}
	var urls []string
	for _, u := range strings.Split(url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, errors.New("rabbit: dial: no URL")
	}
	switch opts.QueueType {
	case "", amqp.QueueTypeQuorum, amqp.QueueTypeClassic:
	default:
		return nil, fmt.Errorf("rabbit: queue type %q: want quorum or classic", opts.QueueType)
	}
	b := &Broker{
		prefix:  opts.Prefix,
		classic: opts.QueueType == amqp.QueueTypeClassic,
		logger:  logger,
		pub:     newLink(urls, "feedd "+opts.Prefix+"publish", logger),
		sub:     newLink(urls, "feedd "+opts.Prefix+"consume", logger),
		slots:   make(chan struct{}, n),
		free:    make(chan *pubChan, n),
	}
	// Fail fast on a wrong address or credentials instead of at the first
	// publish.
	if _, err := b.pub.session(ctx); err != nil {
		return nil, fmt.Errorf("rabbit: dial: %w", err)
	}
	return b, nil
}

// Close closes both connections. Consume calls still running return an
// error; their unacked messages go back to their queues.
func (b *Broker) Close() error {
	return errors.Join(b.pub.close(), b.sub.close())
}

// Ping checks the publishing connection with a round trip to the broker.
func (b *Broker) Ping(ctx context.Context) error {
	err := b.withChannel(ctx, func(pc *pubChan) error {
		// A passive declare of an exchange every broker has: the cheapest
		// synchronous call there is.
		return pc.ch.ExchangeDeclarePassive("amq.direct", amqp.ExchangeDirect, true, false, false, false, nil)
	})
	if err != nil {
		return fmt.Errorf("rabbit: ping: %w", err)
	}
	return nil
}

// Pending returns how many messages are ready in queue (not counting
// those delivered and not yet acked).
func (b *Broker) Pending(ctx context.Context, queue string) (int, error) {
	n, err := b.count(ctx, queue, b.prefix+queue)
	if err != nil {
		return 0, fmt.Errorf("rabbit: pending in %s: %w", queue, err)
	}
	return n, nil
}

// DeadLetters returns how many messages are ready in queue's dead-letter
// queue.
func (b *Broker) DeadLetters(ctx context.Context, queue string) (int, error) {
	n, err := b.count(ctx, queue, b.deadName(queue))
	if err != nil {
		return 0, fmt.Errorf("rabbit: dead letters of %s: %w", queue, err)
	}
	return n, nil
}

func (b *Broker) count(ctx context.Context, queue, name string) (int, error) {
	var n int
	err := b.withChannel(ctx, func(pc *pubChan) error {
		if err := b.declare(pc.s, pc.ch, queue); err != nil {
			return err
		}
		q, err := pc.ch.QueueDeclarePassive(name, true, false, false, false, nil)
		n = q.Messages
		return err
	})
	return n, err
}

func (b *Broker) deadName(queue string) string { return b.prefix + queue + ".dead" }
func (b *Broker) dlxName() string              { return b.prefix + "dlx" }

// declare declares queue's topology once per connection. Every call is
// idempotent on the server, so two goroutines racing here is harmless. On
// error the channel is closed by the server and must be discarded.
func (b *Broker) declare(s *session, ch *amqp.Channel, queue string) error {
	if _, ok := s.declared.Load(queue); ok {
		return nil
	}
	// One declaration at a time: a second channel declaring a quorum queue
	// that is still electing its first leader gets declare-ok at once, and
	// its publishes are nacked until the election ends (seen on 3.10).
	// Another process can still race us once, when the queue is new; its
	// publish fails and is retried by its caller.
	b.declaring.Lock()
	defer b.declaring.Unlock()
	if _, ok := s.declared.Load(queue); ok {
		return nil
	}
	name, dead, dlx := b.prefix+queue, b.deadName(queue), b.dlxName()
	// Quorum queues are replicated by Raft across the cluster and count
	// deliveries, which is what the delivery limit below needs.
	typ := amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum}
	if b.classic {
		typ = amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeClassic}
	}
	if err := ch.ExchangeDeclare(dlx, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %s: %w", dlx, err)
	}
	if _, err := ch.QueueDeclare(dead, true, false, false, false, typ); err != nil {
		return fmt.Errorf("declare queue %s: %w", dead, err)
	}
	if err := ch.QueueBind(dead, dead, dlx, false, nil); err != nil {
		return fmt.Errorf("bind queue %s: %w", dead, err)
	}
	args := amqp.Table{
		amqp.QueueTypeArg: amqp.QueueTypeQuorum,
		// RabbitMQ counts returns (nack with requeue, or the consumer's
		// channel closing) and dead-letters a message when the count
		// exceeds the limit: limit MaxAttempts-1 allows MaxAttempts
		// deliveries in all.
		"x-delivery-limit":          feed.MaxAttempts - 1,
		"x-dead-letter-exchange":    dlx,
		"x-dead-letter-routing-key": dead,
		// At-least-once dead-lettering keeps a message in the source queue
		// until the dead-letter queue has confirmed it, so a dead letter
		// is never lost in transit. RabbitMQ requires reject-publish
		// overflow for it; without a length limit that never triggers.
		"x-dead-letter-strategy": "at-least-once",
		amqp.QueueOverflowArg:    amqp.QueueOverflowRejectPublish,
	}
	if b.classic {
		// A classic queue counts no deliveries and has no at-least-once
		// dead-lettering: feedd counts attempts in a header and rejects
		// the last one into the dead-letter exchange (work).
		args = amqp.Table{
			amqp.QueueTypeArg:           amqp.QueueTypeClassic,
			"x-dead-letter-exchange":    dlx,
			"x-dead-letter-routing-key": dead,
		}
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, args); err != nil {
		return fmt.Errorf("declare queue %s: %w", name, err)
	}
	s.declared.Store(queue, struct{}{})
	b.known.Store(queue, struct{}{})
	return nil
}

// permanent reports whether err is a broker refusal that retrying cannot
// fix: wrong credentials or permissions, or a queue that exists with
// other arguments.
func permanent(err error) bool {
	var e *amqp.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code == amqp.AccessRefused || e.Code == amqp.PreconditionFailed
}
