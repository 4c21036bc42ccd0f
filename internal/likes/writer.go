package likes

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
)

// Applier writes a batch of like events to SQL idempotently and reports
// each post's count delta and the write statements it took
// (sqlstore.Store.ApplyLikes).
type Applier interface {
	ApplyLikes(ctx context.Context, evs []feed.LikeEvent) (deltas map[int64]int64, writes int, err error)
}

// WriterConfig tunes a Writer.
type WriterConfig struct {
	// MaxBatch flushes a batch once it holds this many events (500).
	MaxBatch int
	// Linger is how long the first event of a batch waits for company
	// (500 ms). Zero is group commit: a batch is written as soon as the
	// previous one is done, holding everything that arrived meanwhile.
	Linger time.Duration
}

// Writer persists like events in batches: one SQL transaction (two write
// statements) per batch. Submit and Handle return only once the batch
// that holds their event committed, so a broker acks a message after its
// write, and a synchronous caller answers after it.
type Writer struct {
	cfg     WriterConfig
	store   Applier
	logger  *slog.Logger
	metrics *writerMetrics

	// flushing serializes batch writes: one transaction at a time per
	// process, while the next batch fills.
	flushing sync.Mutex

	mu      sync.Mutex
	pending []waiter
	gen     uint64 // bumped whenever pending is taken, so a stale timer does nothing
}

type waiter struct {
	ev   feed.LikeEvent
	done chan error
}

// NewWriter returns a Writer. Run it as the consumer of feed.QueueLikes
// with ConsumeOptions{Concurrency: w.Concurrency()}, or call Submit. reg
// may be nil.
func NewWriter(logger *slog.Logger, cfg WriterConfig, store Applier, reg prometheus.Registerer) *Writer {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 500
	}
	if cfg.Linger < 0 {
		cfg.Linger = 0
	}
	return &Writer{cfg: cfg, store: store, logger: logger.With("component", "likes-writer"), metrics: newWriterMetrics(reg)}
}

// Concurrency is how many deliveries a consumer should hand the Writer at
// once: two batches' worth, so that one fills while the other is written.
func (w *Writer) Concurrency() int { return 2 * w.cfg.MaxBatch }

// Handle is the broker handler of feed.QueueLikes: it returns (and the
// message is acked) after the event's batch committed; an error requeues
// it, and the batch's other messages with it.
func (w *Writer) Handle(ctx context.Context, d feed.Delivery) error {
	var ev feed.LikeEvent
	if err := json.Unmarshal(d.Body, &ev); err != nil || ev.User <= 0 || ev.Post <= 0 || ev.Version <= 0 {
		// It can never succeed: after MaxAttempts it is dead-lettered,
		// kept for an operator rather than dropped.
		return fmt.Errorf("likes: malformed like event %q: %v", d.Body, err)
	}
	return w.Submit(ctx, ev)
}

// Submit adds ev to the next batch and waits until that batch is written.
func (w *Writer) Submit(ctx context.Context, ev feed.LikeEvent) error {
	wt := waiter{ev: ev, done: make(chan error, 1)}
	w.mu.Lock()
	w.pending = append(w.pending, wt)
	n, gen := len(w.pending), w.gen
	w.mu.Unlock()
	switch {
	case n >= w.cfg.MaxBatch || w.cfg.Linger == 0:
		w.flush(0, false)
	case n == 1:
		time.AfterFunc(w.cfg.Linger, func() { w.flush(gen, true) })
	}
	// No ctx case: the event is in a batch now and its outcome is the
	// caller's answer (a broker handler's ctx is never cancelled anyway).
	return <-wt.done
}

// flush writes what is pending. A timer's flush (timed) only takes the
// batch it was started for.
func (w *Writer) flush(gen uint64, timed bool) {
	w.flushing.Lock()
	defer w.flushing.Unlock()
	w.mu.Lock()
	if timed && w.gen != gen {
		w.mu.Unlock()
		return // that batch left with a full one
	}
	batch := w.pending
	w.pending = nil
	w.gen++
	w.mu.Unlock()
	if len(batch) == 0 {
		return // an earlier flush took this caller's event
	}
	evs := make([]feed.LikeEvent, len(batch))
	for i, wt := range batch {
		evs[i] = wt.ev
	}
	// Detached: the batch holds other callers' events too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	deltas, writes, err := w.store.ApplyLikes(ctx, evs)
	if err != nil {
		w.metrics.batchErrors.Inc()
		w.logger.Warn("writing a batch of likes failed; its events are retried", "events", len(evs), "err", err)
	} else {
		w.metrics.batches.Inc()
		w.metrics.events.Add(float64(len(evs)))
		w.metrics.sqlWrites.Add(float64(writes))
		w.metrics.batchSize.Observe(float64(len(evs)))
		w.metrics.batchSeconds.Observe(time.Since(start).Seconds())
		w.metrics.moved.Add(float64(len(deltas)))
	}
	for _, wt := range batch {
		wt.done <- err
	}
}
