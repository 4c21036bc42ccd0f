// Package inmemqueue implements feed.Broker inside the process: the
// embedded default, where a single feedd runs without RabbitMQ. Messages
// live in memory, so they are lost with the process; everything else
// (attempts, requeue on failure, dead letters, drain on shutdown) behaves
// like the RabbitMQ broker, and both pass the suite in package feedtest.
// Dead letters are kept, up to deadMax per queue, so that Requeue can put
// them back.
package inmemqueue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/feedd/feedd/internal/feed"
)

var _ feed.Broker = (*Queue)(nil)

var errClosed = errors.New("inmemqueue: closed")

// Queue is an in-process feed.Broker. It is safe for concurrent use.
type Queue struct {
	mu     sync.Mutex
	queues map[string]*fifo // guarded by mu
	closed bool             // guarded by mu
}

// New returns an empty Queue.
func New() *Queue {
	return &Queue{queues: make(map[string]*fifo)}
}

type message struct {
	body     []byte
	attempts int // deliveries so far
}

// deadMax bounds the dead letters kept per queue; past it the oldest is
// dropped, as RabbitMQ's x-max-length drops the head. feedd's messages are
// events and task ranges of a few hundred bytes, so that is a few MB.
const deadMax = 10_000

// fifo is one named queue. Its fields are guarded by Queue.mu.
type fifo struct {
	items []*message // ready messages from head on
	head  int
	dead  []*message // dead letters, oldest first, at most deadMax
	// ready is signalled when a message is pushed and broadcast when
	// waiting consumers must recheck whether to stop.
	ready *sync.Cond
}

func (f *fifo) push(m *message) {
	f.items = append(f.items, m)
	f.ready.Signal()
}

func (f *fifo) pop() *message {
	if f.head == len(f.items) {
		return nil
	}
	m := f.items[f.head]
	f.items[f.head] = nil
	f.head++
	switch {
	case f.head == len(f.items):
		f.items, f.head = f.items[:0], 0
	case f.head >= 1024 && 2*f.head >= len(f.items):
		// Reclaim the consumed front once it is at least half the slice.
		f.items = append(f.items[:0], f.items[f.head:]...)
		f.head = 0
	}
	return m
}

func (f *fifo) len() int { return len(f.items) - f.head }

// bury keeps m as a dead letter.
func (f *fifo) bury(m *message) {
	if len(f.dead) == deadMax {
		// Dropping from the front reslices; append then copies the kept
		// letters into a new array once in a while, so memory stays
		// about twice the bound.
		f.dead[0] = nil
		f.dead = f.dead[1:]
	}
	f.dead = append(f.dead, m)
}

// fifo returns the named queue, creating it: like the RabbitMQ broker, a
// queue exists from its first use. Call with q.mu held.
func (q *Queue) fifo(name string) *fifo {
	f, ok := q.queues[name]
	if !ok {
		f = &fifo{ready: sync.NewCond(&q.mu)}
		q.queues[name] = f
	}
	return f
}

// Publish appends copies of bodies to queue; they are "confirmed" once
// enqueued.
func (q *Queue) Publish(ctx context.Context, queue string, bodies ...[]byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("inmemqueue: publish to %s: %w", queue, err)
	}
	// Copy outside the lock; the caller may reuse its buffers once we
	// return, as it may with a network broker.
	ms := make([]*message, len(bodies))
	for i, b := range bodies {
		ms[i] = &message{body: bytes.Clone(b)}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return fmt.Errorf("inmemqueue: publish to %s: %w", queue, errClosed)
	}
	f := q.fifo(queue)
	for _, m := range ms {
		f.push(m)
	}
	return nil
}

// Consume runs h on queue's messages with opts.Concurrency workers until
// ctx is done, then lets the handlers in flight finish and settle (their
// ctx is feed.DrainContext's) and returns nil. A failed message goes to
// the back of the queue with its attempt counted; after feed.MaxAttempts
// deliveries it is dead-lettered. Prefetch does not apply: workers take
// messages one at a time. After Close, Consume returns an error once its
// handlers have finished.
func (q *Queue) Consume(ctx context.Context, queue string, opts feed.ConsumeOptions, h feed.Handler) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return fmt.Errorf("inmemqueue: consume %s: %w", queue, errClosed)
	}
	f := q.fifo(queue)
	q.mu.Unlock()

	// Waiting workers sleep on the cond; wake them when ctx ends so they
	// notice.
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		f.ready.Broadcast()
		q.mu.Unlock()
	})
	defer stop()

	hctx, cancel := feed.DrainContext(ctx, opts)
	defer cancel()
	var wg sync.WaitGroup
	for range max(opts.Concurrency, 1) {
		wg.Go(func() {
			for {
				m, ok := q.take(ctx, f)
				if !ok {
					return
				}
				err := h(hctx, feed.Delivery{Body: m.body, Attempt: m.attempts})
				q.settle(f, m, err)
			}
		})
	}
	wg.Wait()

	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("inmemqueue: consume %s: %w", queue, errClosed)
}

// take waits for the next message, or reports false once ctx is done or
// the Queue is closed.
func (q *Queue) take(ctx context.Context, f *fifo) (*message, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.closed || ctx.Err() != nil {
			if f.len() > 0 {
				// We may have taken the wakeup meant for a live consumer's
				// worker: pass it on.
				f.ready.Signal()
			}
			return nil, false
		}
		if m := f.pop(); m != nil {
			m.attempts++
			return m, true
		}
		f.ready.Wait()
	}
}

// settle acks (err nil) or requeues m, dead-lettering it once it has had
// its feed.MaxAttempts.
func (q *Queue) settle(f *fifo, m *message, err error) {
	if err == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if m.attempts >= feed.MaxAttempts {
		f.bury(m)
		return
	}
	f.push(m)
}

// Pending returns how many messages wait in queue, not counting those
// being handled.
func (q *Queue) Pending(ctx context.Context, queue string) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.fifo(queue).len(), nil
}

// DeadLetters returns how many dead letters of queue are kept (at most
// deadMax).
func (q *Queue) DeadLetters(ctx context.Context, queue string) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.fifo(queue).dead), nil
}

// Requeue moves queue's dead letters, oldest first and at most max if
// max > 0, to the back of queue with their attempts reset, and returns how
// many it moved. It moves them under one lock, so a message failing again
// cannot come back during the run.
func (q *Queue) Requeue(ctx context.Context, queue string, max int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("inmemqueue: requeue dead letters of %s: %w", queue, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return 0, fmt.Errorf("inmemqueue: requeue dead letters of %s: %w", queue, errClosed)
	}
	f := q.fifo(queue)
	n := len(f.dead)
	if max > 0 {
		n = min(n, max)
	}
	for _, m := range f.dead[:n] {
		m.attempts = 0
		f.push(m)
	}
	// A fresh slice: the moved letters must not stay reachable from the
	// old array.
	f.dead = slices.Clone(f.dead[n:])
	return n, nil
}

// Ping reports whether the Queue is open.
func (q *Queue) Ping(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return errClosed
	}
	return nil
}

// Close stops every consumer from taking new messages and refuses new
// publishes. Handlers in flight finish on their own; the messages still
// queued are dropped with the Queue.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for _, f := range q.queues {
		f.ready.Broadcast()
	}
	return nil
}
