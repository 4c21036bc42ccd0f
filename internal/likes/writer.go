package likes

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
)

// Applier writes a batch of like events to SQL idempotently and reports
// what it did (sqlstore.Store.ApplyLikes).
type Applier interface {
	ApplyLikes(ctx context.Context, evs []feed.LikeEvent) (feed.LikesWritten, error)
}

// Settler is the cache's half of a written batch (feed.LikeCache's
// SettleLikes): the counters take SQL's tallies in and the batch's moves
// out.
type Settler interface {
	SettleLikes(ctx context.Context, tallies map[int64]feed.LikeTally, evs []feed.LikeEvent, ttl time.Duration) error
}

// WriterConfig tunes a Writer.
type WriterConfig struct {
	// MaxBatch flushes a batch once it holds this many events
	// (DefaultMaxBatch).
	MaxBatch int
	// Linger is how long the first event of a batch waits for company
	// (DefaultLinger for a broker consumer). Zero is group commit: a
	// batch is written as soon as the previous one is done, holding
	// everything that arrived meanwhile.
	Linger time.Duration
	// RetryFor is how long a failed batch is retried, with backoff, before
	// its callers get the error. A broker consumer retries for minutes
	// while holding the messages unacked, so that a database restart does
	// not use up their delivery attempts and send them to the dead-letter
	// queue; a synchronous writer (an HTTP request waits) fails at once.
	RetryFor time.Duration
	// Done, when closed, ends the retries at once (shutdown): the callers
	// get the error, and a broker redelivers their messages.
	Done <-chan struct{}
	// Cache, when set, is settled after each batch; CountTTL renews the
	// counters it touches (DefaultCountTTL).
	Cache    Settler
	CountTTL time.Duration
	// Resettle lists when a batch is settled again after its first
	// settle (DefaultResettle). A Redis master that fails over before it
	// replicated a settle loses it, while the moves the settle took back
	// may have reached its replica: the counter would count those likes
	// twice until it expires. Settling is idempotent, so a batch is
	// settled again once the failover is over.
	Resettle []time.Duration
}

// DefaultResettle is WriterConfig.Resettle's default: after a failover
// of a Redis Cluster master with a short node timeout, and after one with
// Redis's default of 15 s.
var DefaultResettle = []time.Duration{5 * time.Second, 30 * time.Second}

// The Writer's defaults, which feedd's flags start from. A zero MaxBatch
// takes DefaultMaxBatch; a zero Linger is group commit, which a
// synchronous writer uses (an HTTP request waits for its batch).
const (
	DefaultMaxBatch = 500
	DefaultLinger   = 500 * time.Millisecond
)

// Writer persists like events in batches: one SQL transaction (two write
// statements) per batch. Submit and Handle return only once the batch
// that holds their event committed, so a broker acks a message after its
// write, and a synchronous caller answers after it.
type Writer struct {
	cfg     WriterConfig
	group   *group
	store   Applier
	logger  *slog.Logger
	metrics *writerMetrics
}

// NewWriter returns a Writer. Run it as the consumer of feed.QueueLikes
// with ConsumeOptions{Concurrency: w.Concurrency()}, or call Submit. reg
// may be nil.
func NewWriter(logger *slog.Logger, cfg WriterConfig, store Applier, reg prometheus.Registerer) *Writer {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.CountTTL <= 0 {
		cfg.CountTTL = DefaultCountTTL
	}
	if cfg.Resettle == nil {
		cfg.Resettle = DefaultResettle
	}
	w := &Writer{cfg: cfg, store: store, logger: logger.With("component", "likes-writer"), metrics: newWriterMetrics(reg)}
	w.group = newGroup(cfg.MaxBatch, cfg.Linger, w.write)
	return w
}

// Concurrency is how many deliveries a consumer should hand the Writer at
// once: two batches' worth, so that one fills while the other is written.
func (w *Writer) Concurrency() int { return 2 * w.group.maxBatch }

// Handle is the broker handler of feed.QueueLikes: it returns (and the
// message is acked) after the event's batch committed; an error requeues
// it, and the batch's other messages with it.
func (w *Writer) Handle(ctx context.Context, d feed.Delivery) error {
	ev, err := feed.DecodeLikeEvent(d.Body)
	if err != nil {
		// It can never succeed: after MaxAttempts it is dead-lettered,
		// kept for an operator rather than dropped.
		return fmt.Errorf("likes: malformed like event %q: %v", d.Body, err)
	}
	return w.Submit(ctx, ev)
}

// Submit adds ev to the next batch and waits until that batch is written.
func (w *Writer) Submit(ctx context.Context, ev feed.LikeEvent) error { return w.group.submit(ev) }

// write applies a batch, retrying with backoff for RetryFor.
func (w *Writer) write(evs []feed.LikeEvent) error {
	deadline := time.Now().Add(w.cfg.RetryFor)
	backoff := 100 * time.Millisecond
	for {
		err := w.apply(evs)
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		w.logger.Warn("writing a batch of likes failed; retrying", "events", len(evs), "retry_in", backoff, "err", err)
		select {
		case <-w.cfg.Done:
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (w *Writer) apply(evs []feed.LikeEvent) error {
	// Detached: the batch holds other callers' events too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	written, err := w.store.ApplyLikes(ctx, evs)
	if err != nil {
		w.metrics.batchErrors.Inc()
		return err
	}
	w.metrics.batches.Inc()
	w.metrics.events.Add(float64(len(evs)))
	w.metrics.sqlWrites.Add(float64(written.Writes))
	w.metrics.batchSize.Observe(float64(len(evs)))
	w.metrics.batchSeconds.Observe(time.Since(start).Seconds())
	w.metrics.moved.Add(float64(len(written.Deltas)))
	if w.cfg.Cache != nil {
		w.settle(ctx, written.Tallies, evs)
		for _, d := range w.cfg.Resettle {
			time.AfterFunc(d, func() {
				select {
				case <-w.cfg.Done:
				default:
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					w.settle(ctx, written.Tallies, evs)
				}
			})
		}
	}
	return nil
}

// settle tells the cache what a written batch did. A failure is not a
// reason to write the batch again: SQL has it. A counter it leaves off is
// settled again (WriterConfig.Resettle), or dropped once its moves wait
// past feed.LikePendingLimit and loaded again.
func (w *Writer) settle(ctx context.Context, tallies map[int64]feed.LikeTally, evs []feed.LikeEvent) {
	if err := w.cfg.Cache.SettleLikes(ctx, tallies, evs, w.cfg.CountTTL); err != nil {
		w.metrics.settleErrors.Inc()
		w.logger.Warn("settling a batch of likes in the cache failed", "events", len(evs), "err", err)
	}
}

// ViaBroker returns a Recorder that publishes like events to
// feed.QueueLikes, returning once the broker confirmed them. Concurrent
// likes share one publish: while one is waiting for its confirm, the next
// gathers everything that arrives, so the confirm round trip (a quorum
// queue's replicated disk write) is paid per group, not per like.
func ViaBroker(b feed.Publisher, maxBatch int) Recorder {
	g := newGroup(max(maxBatch, 1), 0, func(evs []feed.LikeEvent) error {
		bodies := make([][]byte, len(evs))
		for i, ev := range evs {
			bodies[i] = ev.Encode()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return b.Publish(ctx, feed.QueueLikes, bodies...)
	})
	return func(ctx context.Context, ev feed.LikeEvent) error { return g.submit(ev) }
}

// group gathers events from concurrent callers into batches and hands
// each batch to flush, one at a time; every caller waits for the outcome
// of the batch that holds its event.
type group struct {
	maxBatch int
	// linger is how long a batch's first event waits for company; 0
	// flushes at once, gathering whatever arrived while the previous
	// flush ran (group commit).
	linger time.Duration
	flush  func([]feed.LikeEvent) error

	// flushing serializes flushes: one at a time, while the next batch
	// fills.
	flushing sync.Mutex

	mu      sync.Mutex
	pending []waiter
	gen     uint64 // bumped whenever pending is taken, so a stale timer does nothing
}

type waiter struct {
	ev   feed.LikeEvent
	done chan error
}

func newGroup(maxBatch int, linger time.Duration, flush func([]feed.LikeEvent) error) *group {
	return &group{maxBatch: maxBatch, linger: max(linger, 0), flush: flush}
}

// submit adds ev to the next batch and waits for that batch's outcome.
// There is no ctx: once in a batch, the event's outcome is the caller's
// answer (a broker handler's ctx is never cancelled anyway).
func (g *group) submit(ev feed.LikeEvent) error {
	wt := waiter{ev: ev, done: make(chan error, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, wt)
	n, gen := len(g.pending), g.gen
	g.mu.Unlock()
	switch {
	case n >= g.maxBatch || g.linger == 0:
		g.run(0, false)
	case n == 1:
		time.AfterFunc(g.linger, func() { g.run(gen, true) })
	}
	return <-wt.done
}

// run flushes what is pending. A timer's run (timed) only takes the batch
// it was started for.
func (g *group) run(gen uint64, timed bool) {
	g.flushing.Lock()
	defer g.flushing.Unlock()
	g.mu.Lock()
	if timed && g.gen != gen {
		g.mu.Unlock()
		return // that batch left with a full one
	}
	batch := g.pending
	g.pending = nil
	g.gen++
	g.mu.Unlock()
	if len(batch) == 0 {
		return // an earlier run took this caller's event
	}
	evs := make([]feed.LikeEvent, len(batch))
	for i, wt := range batch {
		evs[i] = wt.ev
	}
	err := g.flush(evs)
	for _, wt := range batch {
		wt.done <- err
	}
}
