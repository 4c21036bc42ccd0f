// Package limit is feedd's admission control at the edge: token buckets
// per user and per route class (Rates), a bound on the requests in flight
// per class (Shedder), and one on each user's requests in flight
// (UserSlots). Each answers at once or after a short, bounded wait, and
// tells the caller how long to wait before retrying, so an
// overloaded process turns excess into cheap 429s and 503s instead of into
// latency for everyone.
//
// Limits are per process. With N serve processes behind a balancer the
// effective global limit is N times the configured one, and a user's
// budget is N times theirs when the balancer spreads their requests. That
// is deliberate: a Redis round trip per request to share the buckets would
// put the accelerator on the critical path of every write, and would make
// Redis the thing that fails first under exactly the load the limits are
// there to absorb. Configure the limits per process (divide by N).
package limit

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Class is a route class: the unit of global limits and of load shedding.
type Class string

// The route classes. Admin and probe routes have no class and are never
// limited, so an operator can always reach a process that is shedding.
const (
	Read  Class = "read"
	Write Class = "write"
)

// Rule is a token bucket: Rate tokens per second, up to Burst at once. A
// Rate of 0 means unlimited.
type Rule struct {
	Rate  float64
	Burst int
}

func (r Rule) limited() bool { return r.Rate > 0 }

func (r Rule) bucket() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(r.Rate), max(r.Burst, 1))
}

// Config is the limits of one process.
type Config struct {
	// PerUser applies to each user's requests of a class (writes, by
	// default: posts, follows, likes).
	PerUser map[Class]Rule
	// Global applies to all requests of a class together.
	Global map[Class]Rule
	// MaxUsers bounds the per-user buckets kept in memory: past it, the
	// least recently active user's bucket is dropped. A dropped bucket is
	// full when it comes back, which only ever errs towards letting a
	// request through.
	MaxUsers int
	// IdleAfter drops a user's bucket once it has been unused this long
	// (it would be full again by then anyway).
	IdleAfter time.Duration
	// Now is the clock; nil means time.Now. Tests pin it.
	Now func() time.Time
}

// The defaults of Config, which feedd's flags start from. A zero MaxUsers
// takes DefaultMaxUsers. PerUser has none in the package (no rule: no
// limit); feedd's flags give each user's writes a bucket of
// DefaultUserWriteRate a second, DefaultUserWriteBurst at once, and their
// reads one of DefaultUserReadRate and DefaultUserReadBurst: more than a
// person scrolling or an app's server acting for one user asks for, and
// slow enough that walking through every user's profile one id after
// another takes days, not minutes.
const (
	DefaultMaxUsers       = 100_000
	DefaultUserWriteRate  = 20
	DefaultUserWriteBurst = 200
	DefaultUserReadRate   = 50
	DefaultUserReadBurst  = 200
)

// Rates holds the buckets. It is safe for concurrent use; a nil *Rates
// allows everything.
type Rates struct {
	cfg    Config
	global map[Class]*rate.Limiter

	mu    sync.Mutex
	users map[userKey]*list.Element // of *userBucket; guarded by mu
	lru   *list.List                // most recently used at the front; guarded by mu
}

type userKey struct {
	class Class
	user  int64
}

type userBucket struct {
	key  userKey
	lim  *rate.Limiter
	used time.Time
}

// NewRates returns the buckets of cfg.
func NewRates(cfg Config) *Rates {
	if cfg.MaxUsers <= 0 {
		cfg.MaxUsers = DefaultMaxUsers
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	r := &Rates{cfg: cfg, global: map[Class]*rate.Limiter{}, users: map[userKey]*list.Element{}, lru: list.New()}
	for c, rule := range cfg.Global {
		if rule.limited() {
			r.global[c] = rule.bucket()
		}
	}
	return r
}

// Verdict says why a request was refused, and when to come back.
type Verdict struct {
	OK         bool
	Scope      string // "user" or "global" when refused
	RetryAfter time.Duration
}

// Allow takes a token for user (0: no user, only the global bucket) in
// class, or refuses without taking any. The user's bucket is checked
// first, so one user over their budget cannot drain the global bucket
// that everyone else shares.
func (r *Rates) Allow(class Class, user int64) Verdict {
	if r == nil {
		return Verdict{OK: true}
	}
	now := r.cfg.Now()
	var ur *rate.Reservation
	if rule, ok := r.cfg.PerUser[class]; ok && rule.limited() && user != 0 {
		ur = r.userBucket(class, user, rule, now).ReserveN(now, 1)
		if d := ur.DelayFrom(now); d > 0 {
			ur.CancelAt(now)
			return Verdict{Scope: "user", RetryAfter: d}
		}
	}
	if g := r.global[class]; g != nil {
		gr := g.ReserveN(now, 1)
		if d := gr.DelayFrom(now); d > 0 {
			gr.CancelAt(now)
			if ur != nil {
				ur.CancelAt(now) // give the user's token back: nothing ran
			}
			return Verdict{Scope: "global", RetryAfter: d}
		}
	}
	return Verdict{OK: true}
}

// Users returns how many per-user buckets are held.
func (r *Rates) Users() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lru.Len()
}

func (r *Rates) userBucket(class Class, user int64, rule Rule, now time.Time) *rate.Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := userKey{class, user}
	if el, ok := r.users[k]; ok {
		b := el.Value.(*userBucket)
		b.used = now
		r.lru.MoveToFront(el)
		return b.lim
	}
	// Evict from the back: idle users first, and beyond MaxUsers the
	// least recently seen. Amortized O(1) per call.
	for el := r.lru.Back(); el != nil; el = r.lru.Back() {
		b := el.Value.(*userBucket)
		if r.lru.Len() < r.cfg.MaxUsers && now.Sub(b.used) < r.cfg.IdleAfter {
			break
		}
		r.lru.Remove(el)
		delete(r.users, b.key)
	}
	b := &userBucket{key: k, lim: rule.bucket(), used: now}
	r.users[k] = r.lru.PushFront(b)
	return b.lim
}
