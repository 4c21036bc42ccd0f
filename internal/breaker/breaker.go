// Package breaker is a circuit breaker for one backend (feedd puts one in
// front of SQL, and one in front of each Redis server). While the backend
// fails or is slow, callers stop queueing behind it: the breaker opens and
// refuses calls at once for a cool-down, then lets a single probe through;
// the probe's success closes it again.
//
// It is written here rather than taken from a library because what feedd
// needs is small and specific: a call that exceeds a timeout counts as a
// failure (slowness is the usual way a database fails under load), a
// caller's own cancellation and a domain error ("not found") do not, and
// the state is a Prometheus gauge. That is about a hundred lines; the
// well-known libraries (sony/gobreaker) would still need the timeout and
// the classification around them.
package breaker

import (
	"context"
	"errors"
	"sync"
	"time"
)

// State is the breaker's state; the values are those of the
// feedd_sql_breaker_state and feedd_cache_breaker_state gauges.
type State int

const (
	Closed   State = 0 // calls go through
	HalfOpen State = 1 // one probe call goes through, the rest are refused
	Open     State = 2 // calls are refused at once
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half-open"
	}
	return "open"
}

// ErrOpen is returned, without calling the backend, while the breaker is
// open.
var ErrOpen = errors.New("breaker: open: the backend is failing or slow")

// Config tunes a breaker. Zero values take defaults.
type Config struct {
	// Failures is how many consecutive failed or slow calls open it.
	Failures int
	// Timeout bounds each call; a call that takes longer fails and counts.
	Timeout time.Duration
	// Cooldown is how long it stays open before letting a probe through.
	Cooldown time.Duration
	// Ignore reports errors that say nothing about the backend's health
	// (a row that does not exist, a constraint): they count as successes.
	Ignore func(error) bool
	// OnChange is called (outside the lock) after each state change.
	OnChange func(from, to State)
	Now      func() time.Time
}

// Breaker is safe for concurrent use.
type Breaker struct {
	cfg Config

	mu       sync.Mutex
	state    State     // guarded by mu
	fails    int       // consecutive failures while closed; guarded by mu
	openedAt time.Time // guarded by mu
	probing  bool      // a half-open probe is in flight; guarded by mu
}

// New returns a closed breaker.
func New(cfg Config) *Breaker {
	if cfg.Failures <= 0 {
		cfg.Failures = 5
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = 5 * time.Second
	}
	if cfg.Ignore == nil {
		cfg.Ignore = func(error) bool { return false }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breaker{cfg: cfg}
}

// State returns the current state (open turns half-open once the cool-down
// has passed, at the next call).
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Open reports whether calls are being refused now, without taking a probe
// slot: a reader uses it to go to its fallback without trying.
func (b *Breaker) Open() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == Open && b.cfg.Now().Sub(b.openedAt) < b.cfg.Cooldown
}

// Do runs fn with a context bounded by the call timeout, unless the
// breaker refuses it (ErrOpen), and records the outcome.
func Do[T any](ctx context.Context, b *Breaker, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if b == nil {
		return fn(ctx)
	}
	probe, err := b.admit()
	if err != nil {
		return zero, err
	}
	cctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	v, err := fn(cctx)
	b.record(ctx, probe, err)
	return v, err
}

// Call is one call let through by Admit; its outcome goes to Done.
type Call struct {
	b     *Breaker
	probe bool
}

// Admit lets one call through, or refuses it with ErrOpen, without running
// it: for callers that cannot hand the call over as a function (a go-redis
// hook) or whose client already bounds each call with timeouts of its own,
// so that Do's timeout would time it twice. Config.Timeout is not applied;
// the caller must pass every admitted call's outcome to Done.
func (b *Breaker) Admit() (Call, error) {
	probe, err := b.admit()
	return Call{b, probe}, err
}

// Done records the outcome of the call; ctx is the caller's, so that its
// cancellation does not count against the backend.
func (c Call) Done(ctx context.Context, err error) { c.b.record(ctx, c.probe, err) }

func (b *Breaker) admit() (probe bool, err error) {
	b.mu.Lock()
	var change func()
	defer func() {
		b.mu.Unlock()
		if change != nil {
			change()
		}
	}()
	switch b.state {
	case Closed:
		return false, nil
	case Open:
		if b.cfg.Now().Sub(b.openedAt) < b.cfg.Cooldown {
			return false, ErrOpen
		}
		change = b.setLocked(HalfOpen)
		fallthrough
	default: // half-open: one probe at a time
		if b.probing {
			return false, ErrOpen
		}
		b.probing = true
		return true, nil
	}
}

func (b *Breaker) record(ctx context.Context, probe bool, err error) {
	// The caller gave up (client went away, request deadline): that says
	// nothing about the backend unless our own timeout fired first.
	callerGone := err != nil && ctx.Err() != nil
	failed := err != nil && !callerGone && !b.cfg.Ignore(err)
	b.mu.Lock()
	var change func()
	defer func() {
		b.mu.Unlock()
		if change != nil {
			change()
		}
	}()
	if probe {
		b.probing = false
		switch {
		case callerGone:
			// No verdict: the next call probes again.
		case failed:
			b.openedAt = b.cfg.Now()
			change = b.setLocked(Open)
		default:
			b.fails = 0
			change = b.setLocked(Closed)
		}
		return
	}
	if b.state != Closed {
		return
	}
	if !failed {
		if err == nil {
			b.fails = 0
		}
		return
	}
	b.fails++
	if b.fails >= b.cfg.Failures {
		b.openedAt = b.cfg.Now()
		change = b.setLocked(Open)
	}
}

// setLocked moves to s and returns the notification to run after unlock.
func (b *Breaker) setLocked(s State) func() {
	from := b.state
	if from == s {
		return nil
	}
	b.state = s
	if b.cfg.OnChange == nil {
		return nil
	}
	return func() { b.cfg.OnChange(from, s) }
}
