// Package census is how a feedd deployment sees itself whole: every
// process (serve, work or all) writes a heartbeat every few seconds into
// the shared cache, with its role and its own figures of the last minute,
// and the ops console's overview (Console) sums the live heartbeats and
// adds what the shared backends say themselves (the SQL outbox, the broker's
// queues, the degradation switches).
//
// A heartbeat carries counts and histogram buckets over its window, not
// rates or percentiles alone: rates then add up across processes, and the
// latency histograms merge, so the deployment's p99 is the p99 of all its
// requests rather than a guess from each process's.
package census

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/breaker"
)

// Board is where the heartbeats meet: the deployment's shared cache (Redis,
// or the embedded cache for the one process of the embedded default).
// Both caches pass feedtest.TestBeats.
type Board interface {
	// Beat stores body as name's heartbeat until ttl from now, replacing
	// name's last one.
	Beat(ctx context.Context, name string, body []byte, ttl time.Duration) error
	// Forget deletes name's heartbeat, if any.
	Forget(ctx context.Context, name string) error
	// Beats returns the heartbeats whose ttl has not run out, by name.
	Beats(ctx context.Context) (map[string][]byte, error)
}

// Defaults of Config.
const (
	// DefaultInterval is often enough for a console refreshed every few
	// seconds, and costs the cache one small write per process per
	// interval.
	DefaultInterval = 2 * time.Second
	// DefaultWindow is the span the rates and percentiles cover.
	DefaultWindow = time.Minute
	// missed is how many intervals a heartbeat outlives its writer.
	missed = 3
)

// Config describes the process that reports.
type Config struct {
	Role    string // all, serve or work
	Version string
	// Host and PID name the process (os.Hostname and os.Getpid if empty).
	Host string
	PID  int
	// Interval is how often it reports (DefaultInterval if 0), Window the
	// span of its figures (DefaultWindow if 0).
	Interval time.Duration
	Window   time.Duration
	// Now reads the clock (time.Now if nil).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	if c.PID == 0 {
		c.PID = os.Getpid()
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// BreakerStates lists breakers that the metrics do not show one by one:
// the likes' SQL breaker, one per Redis server.
type BreakerStates func() map[string]breaker.State

// Reporter writes this process's heartbeat. Run it in a goroutine of its
// own; it stops with its context.
type Reporter struct {
	logger   *slog.Logger
	cfg      Config
	board    Board
	metrics  prometheus.Gatherer
	breakers BreakerStates
	started  time.Time

	mu   sync.Mutex
	ring []sample // oldest first, spanning about cfg.Window
	last beat     // the newest heartbeat, for the console of this process
}

// NewReporter returns the heartbeat of the process cfg describes. It reads
// its figures from metrics (feedd's own registry of the metrics it uses,
// so that gathering does not also ask the broker and SQL for their gauges)
// and breakers (nil: none but the SQL breaker's gauge).
func NewReporter(logger *slog.Logger, cfg Config, board Board, metrics prometheus.Gatherer, breakers BreakerStates) *Reporter {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Reporter{
		logger: logger.With("component", "census"), cfg: cfg, board: board,
		metrics: metrics, breakers: breakers, started: cfg.Now(),
	}
}

// id is the process's name among the heartbeats: host:pid.
func (r *Reporter) id() string { return fmt.Sprintf("%s:%d", r.cfg.Host, r.cfg.PID) }

// Run reports at once and then every interval until ctx is done, then
// deletes the heartbeat, so that the console stops listing the process at
// once. A failed write is logged once per outage and retried at the next
// tick: the console then shows the process as gone, which is the truth as
// far as the cache can tell.
func (r *Reporter) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	failing := false
	for {
		err := r.Beat(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			r.logger.Warn("census: heartbeat not written; the ops console will not list this process until it is", "err", err)
			failing = true
		case err == nil && failing:
			r.logger.Info("census: heartbeat written again")
			failing = false
		}
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Interval)
			defer cancel()
			if err := r.board.Forget(fctx, r.id()); err != nil {
				r.logger.Debug("census: heartbeat not deleted; it runs out by itself", "err", err)
			}
			return
		case <-t.C:
		}
	}
}

// Beat takes a sample and writes the heartbeat now.
func (r *Reporter) Beat(ctx context.Context) error {
	b, err := r.take()
	if err != nil {
		return err
	}
	body, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("census: encode heartbeat: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Interval)
	defer cancel()
	if err := r.board.Beat(ctx, b.ID, body, missed*r.cfg.Interval); err != nil {
		return fmt.Errorf("census: write heartbeat: %w", err)
	}
	return nil
}

// take reads the metrics into the ring and returns the heartbeat of the
// window the ring now spans.
func (r *Reporter) take() (beat, error) {
	families, err := r.metrics.Gather()
	if err != nil {
		// Gather returns what it could with the error; a figure missing
		// is shown as zero rather than the whole heartbeat lost.
		r.logger.Debug("census: gathering metrics", "err", err)
	}
	now := r.cfg.Now()
	s := read(families)
	s.at = now.UnixNano()

	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring = append(r.ring, s)
	// Keep the newest sample at least a window old, so that the window
	// is whole once the process has run that long.
	cut := now.Add(-r.cfg.Window).UnixNano()
	for len(r.ring) > 1 && r.ring[1].at <= cut {
		r.ring = r.ring[1:]
	}
	old := r.ring[0]
	b := beat{
		ID: r.id(), Role: r.cfg.Role, Host: r.cfg.Host, PID: r.cfg.PID, Version: r.cfg.Version,
		Started: r.started.UTC(), At: now.UTC(),
		Window:        time.Duration(s.at - old.at).Seconds(),
		Publish:       s.publish.since(old.publish),
		Read:          s.read.since(old.read),
		Lag:           s.lag.since(old.lag),
		PublishErrors: s.publishErrors - min(old.publishErrors, s.publishErrors),
		ReadErrors:    s.readErrors - min(old.readErrors, s.readErrors),
		InboxWrites:   max(s.inboxWrites-old.inboxWrites, 0),
		Breakers:      r.breakerList(s),
		ReplicaLag:    s.replicaLag,
		ShardsDown:    s.shardsDown,
	}
	r.last = b
	return b, nil
}

func (r *Reporter) breakerList(s sample) []BreakerState {
	var out []BreakerState
	if s.sqlBreaker != nil {
		out = append(out, BreakerState{Name: "sql", State: breaker.State(*s.sqlBreaker).String()})
	}
	if r.breakers != nil {
		for name, st := range r.breakers() {
			out = append(out, BreakerState{Name: name, State: st.String()})
		}
	}
	slices.SortFunc(out, func(a, b BreakerState) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// lastBeat is the newest heartbeat, and whether there is one yet.
func (r *Reporter) lastBeat() (beat, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.last.ID != ""
}

// beat is a heartbeat as the cache holds it: the process and the counts
// of its window, from which the console makes rates and percentiles.
type beat struct {
	ID      string    `json:"id"`
	Role    string    `json:"role"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	At      time.Time `json:"at"`
	// Window is the span in seconds the counts cover.
	Window        float64        `json:"window"`
	Publish       hist           `json:"publish"`
	Read          hist           `json:"read"`
	Lag           hist           `json:"lag"`
	PublishErrors uint64         `json:"publish_errors"`
	ReadErrors    uint64         `json:"read_errors"`
	InboxWrites   float64        `json:"inbox_writes"`
	Breakers      []BreakerState `json:"breakers"`
	// ReplicaLag is the SQL read replica's lag in seconds; nil without
	// a replica.
	ReplicaLag *float64 `json:"replica_lag,omitempty"`
	// ShardsDown are the logical SQL shards the process sees down.
	ShardsDown []int `json:"shards_down,omitempty"`
}

// perSecond is n over the beat's window, 0 for an empty window.
func (b beat) perSecond(n float64) float64 {
	if b.Window <= 0 {
		return 0
	}
	return n / b.Window
}

func (b beat) process() Process {
	return Process{
		ID: b.ID, Role: b.Role, Host: b.Host, PID: b.PID, Version: b.Version,
		StartedAt: Time{b.Started}, LastSeen: Time{b.At}, WindowSeconds: round(b.Window),
		Publish:           traffic(b.perSecond(float64(b.Publish.total())), b.perSecond(float64(b.PublishErrors)), b.Publish),
		Read:              traffic(b.perSecond(float64(b.Read.total())), b.perSecond(float64(b.ReadErrors)), b.Read),
		Fanout:            fanout(b.perSecond(b.InboxWrites), b.Lag),
		Breakers:          orEmpty(b.Breakers),
		ReplicaLagSeconds: b.ReplicaLag,
		ShardsDown:        b.ShardsDown,
	}
}

func traffic(perSecond, errors float64, h hist) Traffic {
	return Traffic{PerSecond: round(perSecond), ErrorsPerSecond: round(errors), P50Ms: h.quantileMs(0.5), P99Ms: h.quantileMs(0.99)}
}

func fanout(writes float64, lag hist) Fanout {
	return Fanout{InboxWritesPerSecond: round(writes), LagP50Ms: lag.quantileMs(0.5), LagP99Ms: lag.quantileMs(0.99)}
}

// round keeps three decimals: a console has no use for more, and the JSON
// stays readable.
func round(v float64) float64 { return math.Round(v*1000) / 1000 }

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
