// Package fanout delivers a new post into its readers' inboxes: the
// dispatcher, the first consumer of a post event, turns it into inbox
// writes, directly for a small audience or as batch tasks over follower-id
// ranges for a big one, and the worker, the consumer of those tasks,
// executes one with one pipelined round trip (docs/design.md, "Fan-out in
// batch tasks"). Every step is idempotent, so the at-least-once delivery
// of the broker never shows up as a duplicate in an inbox.
package fanout

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
)

// Store is what fan-out reads of the follow graph.
type Store interface {
	User(ctx context.Context, id int64) (feed.User, error)
	Followers(ctx context.Context, user, after int64, n int) ([]int64, error)
	FollowersInRange(ctx context.Context, user, after, upto int64) ([]int64, error)
	FollowerRangeEnd(ctx context.Context, user, after int64, n int) (int64, int, error)
}

// Inboxes is the write side of the inbox cache.
type Inboxes interface {
	PushToInboxes(ctx context.Context, readers []int64, id int64) error
}

// Config tunes fan-out. Zero values take defaults.
type Config struct {
	DirectFanout int           // below this many followers the dispatcher writes inboxes itself (FEEDD_DIRECT_FANOUT)
	BatchSize    int           // followers per batch task and per pipelined write (FEEDD_BATCH_SIZE)
	LockTTL      time.Duration // a split lock of a dead dispatcher frees itself after this
	DoneTTL      time.Duration // how long a finished split is remembered against redelivery
	// Policy decides whether an author's posts are pushed at all; a
	// pulled author's post only goes into its own author list.
	Policy feed.DeliveryPolicy
	// MaxPendingTasks pauses a split while the tasks queue holds more
	// than this many messages (0: never), so a burst of big fan-outs
	// waits in the posts queue instead of flooding the tasks queue.
	MaxPendingTasks int
	// SQLReads bounds the follower reads of this process's fan-out that
	// run at once (FEEDD_FANOUT_SQL_READS, default 2). They go to the SQL
	// primary the API writes to: with one per worker, a big fan-out's
	// reads crowded out publishes (bench, 1M followers on 2 cores, with the
	// work process's SQL pool capped at 8 and at 2 connections: publish p99
	// 16 ms and 7 ms at the same fan-out rate).
	SQLReads int
	// RetryFor is how long a handler retries a failed event or task, with
	// backoff, while it holds the message, before handing it back to the
	// broker (0: no retries in hand). The broker's own redeliveries
	// (feed.MaxAttempts, 3.75 s of pauses in all) are spent by a Redis or
	// SQL outage of a few seconds, and the fan-out of every post published
	// during it would go to the dead-letter queue; held, it completes as
	// soon as the backend is back. Keep it well under the broker's
	// consumer timeout (RabbitMQ: 30 minutes).
	RetryFor time.Duration
	// Done, when closed, ends the retries at once (shutdown): the handler
	// returns its error and the broker redelivers the message.
	Done <-chan struct{}
	// Announce, when set, tells the live streams of each post as its
	// event is handled: one message per post, whatever its author's
	// follower count (PostCreated). It is best effort:
	// a failure is logged, and a stream's client that missed the post
	// finds it in its feed.
	Announce feed.Announcer
}

func (c Config) withDefaults() Config {
	if c.DirectFanout <= 0 {
		c.DirectFanout = DefaultDirectFanout
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.LockTTL <= 0 {
		c.LockTTL = 15 * time.Second
	}
	if c.DoneTTL <= 0 {
		c.DoneTTL = 24 * time.Hour
	}
	if c.SQLReads <= 0 {
		c.SQLReads = DefaultSQLReads
	}
	if c.Policy.Mode == "" {
		c.Policy = feed.DeliveryPolicy{Mode: feed.ModePush}
	}
	return c
}

// The defaults of Config, which feedd's flags start from. A zero field
// takes its default, except MaxPendingTasks and RetryFor, whose zero
// means something of its own (never pause; no retries in hand).
const (
	DefaultDirectFanout    = 5000
	DefaultBatchSize       = 1000
	DefaultSQLReads        = 2
	DefaultMaxPendingTasks = 10_000
	DefaultRetryFor        = 5 * time.Minute
)

// The pause between two tries of a held message doubles from firstBackoff
// to maxBackoff: the cache breaker probes Redis every second, so a longer
// pause would only delay the recovery.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// hold runs fn, and while it fails retries it with backoff for
// cfg.RetryFor, unless cfg.Done closes first. Every fan-out step is
// idempotent, so a retry is as safe as a redelivery.
func hold(cfg Config, logger *slog.Logger, retries prometheus.Counter, fn func() error) error {
	deadline := time.Now().Add(cfg.RetryFor)
	backoff := firstBackoff
	for {
		err := fn()
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		retries.Inc()
		logger.Warn("fan-out step failed; retrying while holding the message", "retry_in", backoff, "err", err)
		select {
		case <-cfg.Done:
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

type metrics struct {
	retries      *prometheus.CounterVec
	delivered    prometheus.Histogram
	redeliveries *prometheus.CounterVec
	waits        prometheus.Counter
	writes       prometheus.Counter
	tasks        *prometheus.CounterVec
	events       *prometheus.CounterVec
	lag          prometheus.Histogram
	splitDur     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		delivered: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "feedd_fanout_delivered_seconds",
			Help:    "Time from a post's creation to its last inbox write: the end of a direct fan-out, or the task of the highest follower range of a split one.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_fanout_retries_total", Help: "Failed tries of a post event or task retried in hand, holding the message (a Redis or SQL outage), by queue.",
		}, []string{"queue"}),
		redeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_queue_redeliveries_total", Help: "Messages delivered again after a failure or a consumer's death, by queue.",
		}, []string{"queue"}),
		waits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_fanout_backpressure_waits_total", Help: "Times a split waited because the tasks queue was deeper than FEEDD_TASKS_MAX_PENDING.",
		}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_fanout_inbox_writes_total", Help: "Inboxes a post was pushed to (existing or not).",
		}),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_fanout_tasks_total", Help: "Batch tasks, by outcome (created, done, failed).",
		}, []string{"outcome"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_fanout_events_total", Help: "Post events the dispatcher handled, by how (direct, split, pulled, duplicate, invalid).",
		}, []string{"how"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "feedd_fanout_lag_seconds",
			Help:    "Time from a post's creation to a batch of its inbox writes.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		splitDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "feedd_fanout_split_seconds",
			Help:    "Time to split one big author's followers into batch tasks.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.writes, m.tasks, m.events, m.lag, m.splitDur, m.delivered, m.redeliveries, m.retries, m.waits)
	}
	return m
}

// pusher writes one post into many inboxes, chunked to the batch size, and
// counts it. Shared by the dispatcher's direct path and the worker.
type pusher struct {
	inboxes Inboxes
	metrics *metrics
	batch   int
}

func (p pusher) push(ctx context.Context, readers []int64, post int64) error {
	for len(readers) > 0 {
		n := min(len(readers), p.batch)
		if err := p.inboxes.PushToInboxes(ctx, readers[:n], post); err != nil {
			return err
		}
		p.metrics.writes.Add(float64(n))
		readers = readers[n:]
	}
	p.metrics.lag.Observe(time.Since(feed.IDTime(post)).Seconds())
	return nil
}
