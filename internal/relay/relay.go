// Package relay moves events from the SQL outbox to the broker. An event
// is marked sent only after the broker confirmed it, so a crash anywhere
// means at worst a second publish, never a lost one; consumers are
// idempotent. Several relays in several processes run at once: the store
// hands each a disjoint set of rows (FOR UPDATE SKIP LOCKED).
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
)

// Outbox is the store side of the relay.
type Outbox interface {
	RelayOutbox(ctx context.Context, n int, publish func(ctx context.Context, evs []feed.OutboxEvent) error) (int, error)
	SweepOutbox(ctx context.Context, sentBefore time.Time) (int64, error)
	OutboxBacklog(ctx context.Context) (int64, error)
}

// Listener is an Outbox that hears when another process wrote events
// (PostgreSQL's LISTEN, told by a Waker's NOTIFY): the relay then
// publishes them at once rather than at its next poll, which stays as the
// floor for a notification lost with its connection. ListenOutbox runs
// until ctx ends or its connection fails, and returns
// errors.ErrUnsupported at once where the database cannot notify.
type Listener interface {
	ListenOutbox(ctx context.Context, wake func()) error
}

// Config tunes the relay. Zero values take defaults.
type Config struct {
	Workers int           // concurrent relay loops in this process
	Batch   int           // events per transaction and per confirmed publish
	Poll    time.Duration // idle poll interval when nothing wakes the relay
	Retain  time.Duration // sent events are kept this long, then swept
	// MaxPending pauses relaying while the posts queue holds more than
	// this many messages (0: never). The queue depth is read at most
	// every DepthEvery.
	MaxPending int
	DepthEvery time.Duration
	// Announce, when set, tells the live streams of each post the broker
	// confirmed (PostCreated), once its batch is marked
	// sent: the dispatcher announces it too, but only when it takes the
	// event up, which behind a celebrity's fan-out being split can be
	// long. It is best effort: if this process dies first, the
	// dispatcher's announcement still comes (a stream sends a post once).
	Announce feed.Announcer
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.Batch <= 0 {
		c.Batch = 200
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Retain <= 0 {
		c.Retain = 24 * time.Hour
	}
	if c.DepthEvery <= 0 {
		c.DepthEvery = 250 * time.Millisecond
	}
	return c
}

// The defaults of Config, which feedd's flags start from. A zero Workers
// takes its default; a zero MaxPending means never pause.
const (
	DefaultWorkers    = 2
	DefaultMaxPending = 10_000
	DefaultPoll       = 50 * time.Millisecond
)

// Relay runs the outbox → broker loops.
type Relay struct {
	cfg     Config
	outbox  Outbox
	pub     feed.Publisher
	logger  *slog.Logger
	wake    chan struct{}
	relayed prometheus.Counter
	failed  prometheus.Counter
	paused  prometheus.Counter
	// depth is pub's queue depth (nil: no back-pressure). With it the
	// relay slows down while the dispatchers fall behind, instead of
	// piling the backlog into the broker: it stays in the outbox, on
	// disk, where it costs nothing.
	depth feed.QueueDepth

	depthMu   sync.Mutex
	depthAt   time.Time // guarded by depthMu
	depthSeen int       // guarded by depthMu
}

// New returns a relay; reg may be nil.
func New(logger *slog.Logger, cfg Config, outbox Outbox, pub feed.Publisher, reg prometheus.Registerer) *Relay {
	r := &Relay{
		cfg: cfg.withDefaults(), outbox: outbox, pub: pub,
		logger: logger.With("component", "relay"),
		wake:   make(chan struct{}, 1),
		relayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_relay_events_total", Help: "Outbox events published and confirmed.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_relay_errors_total", Help: "Relay batches that failed and were retried.",
		}),
		paused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_relay_backpressure_pauses_total", Help: "Times the relay paused because the posts queue was deeper than FEEDD_RELAY_MAX_PENDING.",
		}),
	}
	if d, ok := pub.(feed.QueueDepth); ok && r.cfg.MaxPending > 0 {
		r.depth = d
	}
	if reg != nil {
		reg.MustRegister(r.relayed, r.failed, r.paused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "feedd_outbox_backlog", Help: "Outbox events not yet confirmed by the broker.",
		}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			n, err := outbox.OutboxBacklog(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}))
	}
	return r
}

// Notify wakes an idle relay loop at once; it never blocks. The API calls
// it after a publish so that fan-out starts without waiting for a poll.
func (r *Relay) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run relays until ctx is done, then lets the batch in flight finish. When
// the outbox is a Listener, its notifications wake the loops.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i := 0; i < r.cfg.Workers; i++ {
		wg.Go(func() { r.loop(ctx) })
	}
	wg.Go(func() { r.sweep(ctx) })
	if l, ok := r.outbox.(Listener); ok {
		wg.Go(func() { r.listen(ctx, l) })
	}
	wg.Wait()
	return nil
}

// listen wakes the loops on each notification of l, listening again with
// a growing pause whenever its connection fails; the loops poll meanwhile.
func (r *Relay) listen(ctx context.Context, l Listener) {
	const first, most = 100 * time.Millisecond, 10 * time.Second
	pause := first
	for {
		err := l.ListenOutbox(ctx, func() {
			pause = first // it listens: the next failure is a new one
			r.Notify()
		})
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errors.ErrUnsupported):
			return
		case err != nil:
			r.logger.Warn("lost the outbox notifications; polling until they are back", "err", err, "retry_in", pause)
		}
		if !sleep(ctx, pause, nil) {
			return
		}
		pause = min(pause*2, most)
	}
}

func (r *Relay) loop(ctx context.Context) {
	backoff := r.cfg.Poll
	for ctx.Err() == nil {
		if r.congested(ctx) {
			r.paused.Inc()
			sleep(ctx, r.cfg.DepthEvery, nil)
			continue
		}
		n, err := r.Once(ctx)
		switch {
		case err != nil:
			r.failed.Inc()
			r.logger.Warn("relay batch failed; retrying", "err", err, "in", backoff)
			sleep(ctx, backoff, nil)
			backoff = min(backoff*2, 5*time.Second)
			continue
		case n == r.cfg.Batch:
			backoff = r.cfg.Poll
			continue // more waiting: go again at once
		}
		backoff = r.cfg.Poll
		sleep(ctx, r.cfg.Poll, r.wake)
	}
}

// congested reports whether the posts queue is deeper than MaxPending. The
// depth is shared by the loops and read at most every DepthEvery; when it
// cannot be read the relay carries on (the broker's own flow control and
// publisher confirms still bound what is in flight).
func (r *Relay) congested(ctx context.Context) bool {
	if r.depth == nil {
		return false
	}
	r.depthMu.Lock()
	defer r.depthMu.Unlock()
	if time.Since(r.depthAt) >= r.cfg.DepthEvery {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		n, err := r.depth.Pending(dctx, feed.QueuePosts)
		cancel()
		r.depthAt = time.Now()
		if err != nil {
			n = 0
		}
		if n > r.cfg.MaxPending && r.depthSeen <= r.cfg.MaxPending {
			r.logger.Warn("posts queue is deep: relay pauses until the dispatchers catch up", "pending", n, "max", r.cfg.MaxPending)
		}
		r.depthSeen = n
	}
	return r.depthSeen > r.cfg.MaxPending
}

// Once relays one batch and returns how many events it moved. The batch
// is finished even if ctx ends meanwhile, so shutdown does not leave a
// published batch unmarked.
func (r *Relay) Once(ctx context.Context) (int, error) {
	work, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var confirmed [][]byte
	n, err := r.outbox.RelayOutbox(work, r.cfg.Batch, func(ctx context.Context, evs []feed.OutboxEvent) error {
		bodies := make([][]byte, len(evs))
		for i, ev := range evs {
			bodies[i] = ev.Payload
		}
		if err := r.pub.Publish(ctx, feed.QueuePosts, bodies...); err != nil {
			return err
		}
		r.logRelayed(ctx, evs)
		confirmed = append(confirmed, bodies...)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("relay: %w", err)
	}
	r.relayed.Add(float64(n))
	r.announce(work, confirmed)
	return n, nil
}

// announceBudget bounds the time a relayed batch's announcements may add
// to the relay's round.
const announceBudget = 250 * time.Millisecond

// announce tells the live streams of the new posts among bodies, the
// events of a batch the broker confirmed and the outbox marked sent.
func (r *Relay) announce(ctx context.Context, bodies [][]byte) {
	if r.cfg.Announce == nil || len(bodies) == 0 {
		return
	}
	// The outbox must never wait on the streams' backend: a Redis outage
	// would hold every post's fan-out behind announcements that cannot
	// be made. So a batch's announcements get announceBudget in all, and
	// the first failure ends them; the dispatcher announces each post
	// anyway.
	ctx, cancel := context.WithTimeout(ctx, announceBudget)
	defer cancel()
	for _, b := range bodies {
		ev, err := feed.DecodeEvent(b)
		if err != nil || ev.Kind != feed.EventPostCreated {
			continue // the dispatcher reports it
		}
		if err := r.cfg.Announce.PostCreated(ctx, ev.AuthorID, ev.PostID); err != nil {
			r.logger.Warn("could not announce relayed posts to the live streams; their dispatcher will", "post", ev.PostID, "err", err)
			return
		}
	}
}

// logRelayed writes a debug line per event naming the request that
// published it, so one post can be followed from the API to the workers.
func (r *Relay) logRelayed(ctx context.Context, evs []feed.OutboxEvent) {
	if !r.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	for _, e := range evs {
		ev, err := feed.DecodeEvent(e.Payload)
		if err != nil {
			continue
		}
		r.logger.DebugContext(feed.WithRequestID(ctx, ev.RequestID), "relayed post event", "post", ev.PostID, "outbox_id", e.ID)
	}
}

func (r *Relay) sweep(ctx context.Context) {
	for {
		if n, err := r.outbox.SweepOutbox(ctx, time.Now().Add(-r.cfg.Retain)); err != nil && ctx.Err() == nil {
			r.logger.Warn("sweeping sent outbox events failed", "err", err)
		} else if n > 0 {
			r.logger.Debug("swept sent outbox events", "n", n)
		}
		if !sleep(ctx, 10*time.Minute, nil) {
			return
		}
	}
}

// sleep waits for d, a wake-up, or ctx; it reports false if ctx ended.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}
