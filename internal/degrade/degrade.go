// Package degrade holds feedd's degradation switches L1–L4 (docs/design.md,
// "Degradation switches L1–L4"): planned ways to give up part of the
// service to keep the rest alive during an incident. An operator flips
// them at run time through the admin API; every process of a deployment
// follows within one poll interval, because the switches live in the
// shared cache (Redis) and each process polls them. The cache is the
// right home: it is already shared by every process, the switches are
// tiny, and when the cache itself is down a process keeps the last
// switches it saw, and a PUT takes effect on the process that received it
// and reaches the others once the cache answers.
package degrade

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Switch names a degradation level.
type Switch string

const (
	// L1 drops non-essential enrichment: like counts and "liked by me".
	L1 Switch = "L1"
	// L2 stops the pull half of the hybrid read: feeds come from the
	// inbox only, without merging pulled authors' posts.
	L2 Switch = "L2"
	// L3 is read-only: every write answers 503.
	L3 Switch = "L3"
	// L4 serves the last good first page of each feed from the cache.
	L4 Switch = "L4"
)

// All is every switch, in order.
var All = []Switch{L1, L2, L3, L4}

// Meaning is a sentence per switch, for the admin API and the docs.
var Meaning = map[Switch]string{
	L1: "drop non-essential enrichment (like counts, liked state)",
	L2: "stop the pull half of the hybrid read: feeds from the inbox only",
	L3: "read-only: writes answer 503",
	L4: "serve the last good first page of each feed from the cache",
}

// Store is the shared key-value store the switches live in.
type Store interface {
	Get(ctx context.Context, key string) (string, bool, error)
	Set(ctx context.Context, key, value string, ttl time.Duration) error
}

// key is where the switches live in the cache's key space.
const key = "degrade:switches"

// Switches is a process's view of the switches. It is safe for concurrent
// use; a nil *Switches has every switch off.
type Switches struct {
	store  Store // nil: this process only
	logger *slog.Logger

	mu sync.RWMutex
	on map[Switch]bool // guarded by mu
	// unshared is set while a change made here has not reached the
	// store: polls then push this process's switches instead of pulling
	// the store's older ones over them. Guarded by mu.
	unshared bool
}

// New returns switches, all off, shared through store (nil: local only);
// reg may be nil.
func New(logger *slog.Logger, store Store, reg prometheus.Registerer) *Switches {
	s := &Switches{store: store, logger: logger.With("component", "degrade"), on: map[Switch]bool{}}
	if reg != nil {
		for _, sw := range All {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "feedd_degradation_switch",
				Help:        "1 while a degradation switch (L1-L4) is on in this process.",
				ConstLabels: prometheus.Labels{"switch": string(sw)},
			}, func() float64 {
				if s.On(sw) {
					return 1
				}
				return 0
			}))
		}
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "feedd_degradation_level",
			Help: "The highest degradation switch on in this process (0: none).",
		}, func() float64 { return float64(s.Level()) }))
	}
	return s
}

// On reports whether sw is on.
func (s *Switches) On(sw Switch) bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.on[sw]
}

// Enrich reports whether non-essential enrichment (like counts, liked
// state) should be computed: false under L1. The likes code asks this.
func (s *Switches) Enrich() bool { return !s.On(L1) }

// Level returns the highest switch on: 1..4, 0 for none.
func (s *Switches) Level() int {
	for i := len(All) - 1; i >= 0; i-- {
		if s.On(All[i]) {
			return i + 1
		}
	}
	return 0
}

// Snapshot returns every switch's state.
func (s *Switches) Snapshot() map[Switch]bool {
	out := make(map[Switch]bool, len(All))
	for _, sw := range All {
		out[sw] = s.On(sw)
	}
	return out
}

// Valid reports whether name is a switch.
func Valid(name Switch) bool {
	_, ok := Meaning[name]
	return ok
}

// Set changes the named switches (the others keep their state), here at
// once and in the shared store for the other processes. It returns
// shared=false when the store could not be written: the change then holds
// in this process only.
func (s *Switches) Set(ctx context.Context, change map[Switch]bool) (shared bool, err error) {
	for sw := range change {
		if !Valid(sw) {
			return false, fmt.Errorf("degrade: unknown switch %q", sw)
		}
	}
	// Start from the shared switches, so a change made elsewhere since
	// the last poll is not overwritten with this process's older view.
	_ = s.Sync(ctx)
	s.mu.Lock()
	for sw, v := range change {
		s.on[sw] = v
	}
	s.unshared = true
	s.mu.Unlock()
	s.logger.Warn("degradation switches changed", "switches", s.Snapshot())
	if s.store == nil {
		return false, nil
	}
	if err := s.share(ctx); err != nil {
		s.logger.Warn("degradation switches not shared yet: the cache did not take them; they hold in this process and are shared when the cache answers", "err", err)
		return false, nil
	}
	return true, nil
}

// share writes this process's switches to the store.
func (s *Switches) share(ctx context.Context) error {
	b, _ := json.Marshal(s.Snapshot())
	// No TTL: a switch stays as the operator left it.
	if err := s.store.Set(ctx, key, string(b), 0); err != nil {
		return fmt.Errorf("degrade: share switches: %w", err)
	}
	s.mu.Lock()
	s.unshared = false
	s.mu.Unlock()
	return nil
}

// Sync loads the shared switches once; after a change the store did not
// take, it shares this process's switches instead.
func (s *Switches) Sync(ctx context.Context) error {
	if s.store == nil {
		return nil
	}
	s.mu.RLock()
	unshared := s.unshared
	s.mu.RUnlock()
	if unshared {
		return s.share(ctx)
	}
	v, ok, err := s.store.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("degrade: load switches: %w", err)
	}
	next := map[Switch]bool{}
	if ok {
		if err := json.Unmarshal([]byte(v), &next); err != nil {
			return fmt.Errorf("degrade: load switches: %w", err)
		}
	}
	s.mu.Lock()
	if s.unshared { // a Set raced this poll: keep it
		s.mu.Unlock()
		return nil
	}
	changed := false
	for _, sw := range All {
		if s.on[sw] != next[sw] {
			changed = true
		}
		s.on[sw] = next[sw]
	}
	s.mu.Unlock()
	if changed {
		s.logger.Warn("degradation switches changed by another process", "switches", next)
	}
	return nil
}

// DefaultPoll is the interval feedd's processes poll the switches at
// unless told otherwise: a change reaches every process within it.
const DefaultPoll = 2 * time.Second

// Run polls the shared switches every interval until ctx is done. While
// the store fails the process keeps the switches it last saw.
func (s *Switches) Run(ctx context.Context, interval time.Duration) {
	if s.store == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
			s.logger.Debug("polling degradation switches failed; keeping the last ones", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
