package feed

import (
	"context"
	"sync"
	"time"
)

// Queue names. A broker may prefix them (a namespace) but callers use these.
const (
	QueuePosts = "posts" // post events from the relay, consumed by the dispatcher
	QueueTasks = "tasks" // fan-out batch tasks, consumed by workers
)

// Delivery is one message handed to a consumer.
type Delivery struct {
	Body []byte
	// Attempt counts deliveries of this message, starting at 1; a message
	// requeued because its consumer died or failed comes back with a
	// higher Attempt.
	Attempt int
}

// Handler processes one delivery. Returning nil acks it; returning an
// error requeues it, until the broker's attempt limit sends it to the
// dead-letter queue. A handler must be idempotent: delivery is
// at-least-once.
type Handler func(ctx context.Context, d Delivery) error

// ConsumeOptions tune a consumer.
type ConsumeOptions struct {
	// Concurrency is how many handlers run at once (default 1).
	Concurrency int
	// Prefetch is how many unacked messages the broker hands over ahead of
	// the handlers (default 2 * Concurrency).
	Prefetch int
	// Drain bounds how long handlers in flight run on after the consume
	// ctx ends (default DefaultDrain); see DrainContext.
	Drain time.Duration
}

// DefaultDrain is the default ConsumeOptions.Drain.
const DefaultDrain = 10 * time.Second

// DrainContext returns the ctx a consumer gives its handlers. It is not
// cancelled with ctx, so a message in hand completes when the consumer is
// told to stop. It is cancelled drain after ctx ends (opts.Drain, or
// DefaultDrain), so a handler that waits on something that stopped with
// the process (a queue no worker drains any more, a lock) cannot hold a
// shutdown forever: it fails, and its message goes back to its queue for
// another process. Handlers are idempotent, so that costs a redo at most.
// cancel releases the ctx's resources.
func DrainContext(ctx context.Context, opts ConsumeOptions) (context.Context, context.CancelFunc) {
	drain := opts.Drain
	if drain <= 0 {
		drain = DefaultDrain
	}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var timer *time.Timer
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		timer = time.AfterFunc(drain, cancel)
		mu.Unlock()
	})
	return hctx, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// Publisher sends messages to a queue: the side of a Broker that the relay
// and the dispatcher use.
type Publisher interface {
	// Publish sends bodies to queue and returns once the broker has
	// confirmed every one of them as durably accepted.
	Publish(ctx context.Context, queue string, bodies ...[]byte) error
}

// QueueDepth reads how far a queue's consumers are behind. A Publisher
// that also implements it gives its producer back-pressure: the producer
// slows down while the queue is deep instead of piling more into it.
type QueueDepth interface {
	// Pending returns how many messages wait in queue (ready, not in flight).
	Pending(ctx context.Context, queue string) (int, error)
}

// Broker carries messages between processes: RabbitMQ in production, an
// in-process queue on the embedded default. Both pass the suite in package
// feedtest.
type Broker interface {
	Publisher
	QueueDepth
	// Consume runs h on queue's messages until ctx is done, then stops
	// taking new ones, waits for the handlers in flight to finish and
	// settle their messages, and returns nil. A message whose handler
	// fails MaxAttempts times goes to the queue's dead-letter queue.
	Consume(ctx context.Context, queue string, opts ConsumeOptions, h Handler) error
	// DeadLetters returns how many messages sit in queue's dead-letter queue.
	DeadLetters(ctx context.Context, queue string) (int, error)
	Ping(ctx context.Context) error
	Close() error
}

// MaxAttempts is how many times a message is delivered before it is
// dead-lettered.
const MaxAttempts = 5
