package fanout

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Worker executes batch tasks.
type Worker struct {
	cfg     Config
	store   Store
	logger  *slog.Logger
	metrics *metrics
	pusher  pusher
}

// newWorker returns a worker.
func newWorker(logger *slog.Logger, cfg Config, store Store, inboxes Inboxes, m *metrics) *Worker {
	cfg = cfg.withDefaults()
	return &Worker{
		cfg: cfg, store: store, metrics: m,
		logger: logger.With("component", "worker"),
		pusher: pusher{inboxes: inboxes, metrics: m, batch: cfg.BatchSize},
	}
}

// Handle is the feed.Handler for QueueTasks: read the task's follower
// range from SQL, then write the post into every existing inbox among
// them in one pipelined round trip. The broker acks only after it returns.
func (w *Worker) Handle(ctx context.Context, del feed.Delivery) error {
	if del.Attempt > 1 {
		w.metrics.redeliveries.WithLabelValues(feed.QueueTasks).Inc()
	}
	t, err := feed.DecodeFanoutTask(del.Body)
	if err != nil {
		w.metrics.tasks.WithLabelValues("invalid").Inc()
		w.logger.Error("dropping malformed task", "body", string(del.Body), "err", err)
		return nil
	}
	var ids []int64
	err = hold(w.cfg, w.logger, w.metrics.retries.WithLabelValues(feed.QueueTasks), func() (err error) {
		if ids, err = w.store.FollowersInRange(ctx, t.AuthorID, t.After, t.Upto); err != nil {
			return fmt.Errorf("worker: task %s: followers: %w", t.ID, err)
		}
		if err := w.pusher.push(ctx, ids, t.PostID); err != nil {
			return fmt.Errorf("worker: task %s: push: %w", t.ID, err)
		}
		return nil
	})
	if err != nil {
		w.metrics.tasks.WithLabelValues("failed").Inc()
		return err
	}
	w.metrics.tasks.WithLabelValues("done").Inc()
	ctx = feed.WithRequestID(ctx, t.RequestID)
	w.logger.DebugContext(ctx, "task done", "task", t.ID, "post", t.PostID, "inboxes", len(ids), "attempt", del.Attempt)
	if t.Last {
		w.metrics.delivered.Observe(time.Since(feed.IDTime(t.PostID)).Seconds())
		w.logger.DebugContext(ctx, "post delivered", "post", t.PostID, "how", "split")
	}
	return nil
}
