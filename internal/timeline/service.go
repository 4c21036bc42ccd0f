// Package timeline is feedd's domain service: it publishes posts, keeps the
// follow graph, and serves home feeds. SQL is the truth; the cache is an
// accelerator whose loss a reader never notices: a missing inbox is rebuilt,
// a stale one is refreshed, and paging past its trimmed end continues in SQL.
package timeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/lru"
)

// Store is what the service needs of the SQL source of truth.
type Store interface {
	CreateUser(ctx context.Context, u feed.User) (feed.User, error)
	User(ctx context.Context, id int64) (feed.User, error)
	Users(ctx context.Context, ids []int64) (map[int64]feed.User, error)
	Follow(ctx context.Context, follower, followee int64) (bool, error)
	Unfollow(ctx context.Context, follower, followee int64) (bool, error)
	Followers(ctx context.Context, user, after int64, n int) ([]int64, error)
	Following(ctx context.Context, user, after int64, n int) ([]int64, error)
	CreatePost(ctx context.Context, p feed.Post, idemKey string) (feed.Post, bool, error)
	Post(ctx context.Context, id int64) (feed.Post, error)
	Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error)
	DeletePost(ctx context.Context, id, author int64) error
	AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, error)
	AuthorPostIDs(ctx context.Context, author, after, before int64, n int) ([]int64, error)
	FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error)
	PushedFeedPostIDs(ctx context.Context, reader, high, low, after, before int64, n int) ([]int64, error)
	AuthorsPostIDs(ctx context.Context, authors []int64, before int64, n int) ([]int64, error)
	PullFollowees(ctx context.Context, reader, high, low int64) ([]int64, error)
	NewestPostsFloor(ctx context.Context, k int) (int64, error)
	SetPullMode(ctx context.Context, author int64, pull bool, refan int) (bool, error)
	Ping(ctx context.Context) error
}

// Config tunes the service. Zero values take the defaults in withDefaults.
type Config struct {
	InboxMax        int           // entries kept per inbox (FEEDD_INBOX_MAX)
	InboxTTL        time.Duration // an unread inbox expires after this and is rebuilt on return
	EmptyTTL        time.Duration // how long an empty feed is remembered
	PostTTL         time.Duration // post body cache lifetime
	RefreshInterval time.Duration // at most one smart refresh per reader per interval
	RefreshLookback time.Duration // refresh also re-checks this far below the inbox's newest entry
	// RefreshHorizon bounds how far back a refresh looks, whatever the
	// inbox's newest entry: the refresh query's cost grows with the posts
	// in its window (see refresh).
	RefreshHorizon time.Duration
	// RefreshMaxPosts bounds a refresh's window by count as the horizon
	// does by time: it opens no earlier than the RefreshMaxPosts-th newest
	// post by anyone, so that a deployment taking thousands of posts a
	// second does not make every refresh walk a horizon's worth of them.
	RefreshMaxPosts int
	BackfillPosts   int // a follow copies at least this many of the followee's newest posts

	// Policy picks push or pull per author (FEEDD_FANOUT_MODE,
	// FEEDD_PULL_THRESHOLD).
	Policy feed.DeliveryPolicy
	// OutboxMax is how many of a pulled author's newest post ids its
	// cached outbox keeps; older ones are read from SQL.
	OutboxMax int
	// MaxMergedOutboxes bounds the outboxes one read merges from the
	// cache; a reader following more pulled authors gets the rest from
	// one SQL query, so no read costs thousands of cache lookups.
	MaxMergedOutboxes int
	// PulleesTTL is how long a reader's list of pulled followees is cached.
	PulleesTTL time.Duration
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.InboxMax <= 0 {
		c.InboxMax = feed.DefaultInboxMax
	}
	if c.BackfillPosts <= 0 {
		c.BackfillPosts = 10
	}
	if c.RefreshMaxPosts <= 0 {
		c.RefreshMaxPosts = 2000
	}
	if c.Policy.Mode == "" {
		c.Policy.Mode = feed.ModeHybrid
	}
	if c.Policy.PullThreshold <= 0 {
		c.Policy.PullThreshold = 100_000
	}
	if c.OutboxMax <= 0 {
		c.OutboxMax = 100
	}
	if c.MaxMergedOutboxes <= 0 {
		c.MaxMergedOutboxes = 64
	}
	def(&c.PulleesTTL, 30*time.Second)
	def(&c.InboxTTL, 30*24*time.Hour)
	def(&c.EmptyTTL, 30*time.Second)
	def(&c.PostTTL, time.Hour)
	def(&c.RefreshInterval, 5*time.Second)
	def(&c.RefreshLookback, time.Minute)
	def(&c.RefreshHorizon, 10*time.Minute)
	return c
}

// Service implements the API's operations.
type Service struct {
	cfg   Config
	store Store
	cache feed.Cache
	// outboxes caches pulled authors' newest post ids, keyed by author:
	// the same structure as an inbox, in its own key space.
	outboxes feed.Inboxes
	ids      *feed.IDGen
	logger   *slog.Logger
	metrics  *metrics
	ready    []readyCheck
	// published is told (without blocking) that the outbox has a new
	// event, so an in-process relay need not wait for its next poll.
	published func()
	rebuilds  singleflight.Group
	modes     modesEpoch

	// The defences (defence.go): the SQL breaker (nil: none), the
	// degradation switches (nil: all off), the in-process cache of hot
	// post bodies (nil: none), and the collapsing of concurrent misses.
	breaker     *breaker.Breaker
	switches    *degrade.Switches
	hot         *lru.Cache[int64, feed.Post]
	lastSaved   *lru.Cache[int64, struct{}]
	flights     flights
	users       singleflight.Group
	outboxFills singleflight.Group
	pulleeLoads singleflight.Group

	// heads is the process's copy of pulled authors' outbox heads
	// (outboxHead), loaded once per author at a time.
	heads     *lru.Cache[int64, outboxHead]
	headLoads singleflight.Group

	// gates remembers, per reader, until when the smart refresh's gate
	// is known to be taken (gateRefreshOnce).
	gates *lru.Cache[int64, time.Time]
	// floor is the process's copy of the store's NewestPostsFloor for
	// RefreshMaxPosts (refreshFloor), loaded once at a time.
	floor      atomic.Pointer[postsFloor]
	floorLoads singleflight.Group
	now        func() time.Time // the clock of gates and floor; tests set it
}

// readyCheck is one named dependency of Checks.
type readyCheck struct {
	name     string
	required bool
	ping     func(context.Context) error
}

// Option configures a Service.
type Option func(*Service)

// WithPublishHook sets a function called after every committed publish.
func WithPublishHook(f func()) Option { return func(s *Service) { s.published = f } }

// WithReadyCheck adds a named dependency check to Ready and Checks; a
// required one failing makes the service not ready.
func WithReadyCheck(name string, required bool, f func(context.Context) error) Option {
	return func(s *Service) { s.ready = append(s.ready, readyCheck{name, required, f}) }
}

// New returns a Service. outboxes holds pulled authors' outboxes; reg may
// be nil.
func New(logger *slog.Logger, cfg Config, store Store, cache feed.Cache, outboxes feed.Inboxes, ids *feed.IDGen, reg prometheus.Registerer, opts ...Option) *Service {
	s := &Service{
		cfg:       cfg.withDefaults(),
		store:     store,
		cache:     cache,
		outboxes:  outboxes,
		ids:       ids,
		logger:    logger.With("component", "timeline"),
		metrics:   newMetrics(reg),
		published: func() {},
		heads:     lru.New[int64, outboxHead](outboxHeads, outboxHeadTTL, nil),
		now:       time.Now,
	}
	s.gates = lru.New[int64, time.Time](refreshGates, s.cfg.RefreshInterval, func() time.Time { return s.now() })
	// SQL is required: without it the API cannot take a write. The cache
	// is not: every read falls back to SQL.
	s.ready = []readyCheck{{"sql", true, store.Ping}, {"cache", false, cache.Ping}}
	for _, o := range opts {
		o(s)
	}
	if s.breaker != nil {
		s.store = guardedStore{Store: s.store, b: s.breaker}
	}
	return s
}

// Ready reports whether every required backend answers.
func (s *Service) Ready(ctx context.Context) error {
	for _, c := range s.Checks(ctx) {
		if c.Required && c.Err != nil {
			return feed.Errorf(feed.EUNAVAILABLE, "%s is not reachable", c.Name)
		}
	}
	return nil
}

// Checks pings every dependency, concurrently, each bounded to a second so
// that one hung backend cannot hang the probe.
func (s *Service) Checks(ctx context.Context) []feed.Check {
	out := make([]feed.Check, len(s.ready))
	var wg sync.WaitGroup
	for i, c := range s.ready {
		out[i] = feed.Check{Name: c.name, Required: c.required}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			out[i].Err = c.ping(ctx)
		})
	}
	wg.Wait()
	return out
}
