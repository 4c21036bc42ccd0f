// Package timeline is feedd's read engine: it serves home feeds, posts,
// markers and mute and block sets, and keeps the caches that serve them.
// SQL is the truth; the cache is an accelerator whose loss a reader never
// notices: a missing inbox is rebuilt, a stale one is refreshed, and
// paging past its trimmed end continues in SQL. The writes (users,
// tokens, follows, mutes and blocks, posts, account deletion) are package
// social's; each tells the read engine what it committed through the
// cache-keeping methods listed on Service.
//
// The files follow a feed read in the order it happens: feed.go (Feed and
// its page loop), modes.go (which pulled authors the reader follows),
// sources.go (the streams of post ids: the inbox, the pulled authors'
// author lists, SQL), rebuild.go and refresh.go (a missing inbox rebuilt,
// a first page refreshed), merge.go (the streams merged into one page),
// hydrate.go (ids turned into posts, without the deleted users' of
// deleted.go), and degraded.go (the same read without SQL). sqlbreaker.go
// puts the SQL breaker in front of the store. What the writes tell it:
// posts.go (a post created, edited, deleted), follows.go and
// followbatch.go (inbox backfill and removal, delivery modes), relations.go
// (mute and block sets), deleted.go (a user deleted), and stale.go (a
// reader whose cache missed a change). markers.go keeps read markers and
// counts what is unread with the feed's own page loop.
package timeline

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/lru"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// Store is what the read engine needs of the SQL source of truth.
type Store interface {
	User(ctx context.Context, id int64) (feed.User, error)
	Post(ctx context.Context, id int64) (feed.Post, error)
	Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error)
	AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, error)
	AuthorPostIDs(ctx context.Context, author, after, before int64, n int) ([]int64, error)
	FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error)
	Marker(ctx context.Context, user int64) (feed.Marker, error)
	SetMarker(ctx context.Context, user, lastRead int64, at time.Time) (feed.Marker, error)
	PushedFeedPostIDs(ctx context.Context, reader, high, low, after, before int64, n int) ([]int64, error)
	AuthorsPostIDs(ctx context.Context, authors []int64, before int64, n int) ([]int64, error)
	PullFollowees(ctx context.Context, reader, high, low int64) ([]int64, error)
	NewestPostsFloor(ctx context.Context, k int) (int64, error)
	SetPullMode(ctx context.Context, author int64, pull bool, refan int) (bool, error)
	Hidden(ctx context.Context, user int64) (feed.Hidden, error)
	FollowingAmong(ctx context.Context, user int64, ids []int64) ([]int64, error)
	ListMembers(ctx context.Context, owner, list, after int64, n int) ([]int64, error)
	List(ctx context.Context, owner, id int64) (feed.List, error)
	ListMarker(ctx context.Context, owner, list int64) (feed.Marker, error)
	SetListMarker(ctx context.Context, owner, list, lastRead int64, at time.Time) (feed.Marker, error)
	DeletedUsers(ctx context.Context, since time.Time) ([]int64, error)
	MarkFeedStale(ctx context.Context, user int64) error
	StaleFeeds(ctx context.Context, n int) ([]feed.StaleFeed, error)
	ClearStaleFeeds(ctx context.Context, fs []feed.StaleFeed) error
	Ping(ctx context.Context) error
}

// AuthorLists is what the service needs of the author lists: for each
// pulled author (hybrid mode), its newest post ids, which reads merge into
// the reader's inbox. They have the inbox's structure, in their own key
// space, keyed by author; a list that is missing or trimmed is read on
// from SQL. (Not to be confused with the SQL outbox, which carries events
// to the broker.)
type AuthorLists interface {
	InboxPage(ctx context.Context, author, before int64, n int) (feed.InboxPage, error)
	InboxPages(ctx context.Context, authors []int64, n int) (map[int64]feed.InboxPage, error)
	FillInbox(ctx context.Context, author int64, ids []int64, complete bool, ttl time.Duration) error
	RemoveFromInbox(ctx context.Context, author int64, ids []int64) error
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
	// AuthorListMax is how many of a pulled author's newest post ids its
	// author list keeps; older ones are read from SQL.
	AuthorListMax int
	// MaxMergedAuthorLists bounds the author lists one read merges from
	// the cache; a reader following more pulled authors gets the rest from
	// one SQL query, so no read costs thousands of cache lookups.
	MaxMergedAuthorLists int
	// PulleesTTL is how long a reader's list of pulled followees is cached.
	PulleesTTL time.Duration
	// UnreadCap is how far a marker's unread count counts
	// (FEEDD_UNREAD_CAP): past it the count says "at least this many".
	UnreadCap int
	// HiddenTTL is how long a process keeps a reader's mute and block set
	// in memory (relations.go): a change shows at once on the process
	// that took it, and within HiddenTTL on the others.
	HiddenTTL time.Duration
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
	c.Policy = c.Policy.WithDefaults()
	if c.AuthorListMax <= 0 {
		c.AuthorListMax = 100
	}
	if c.UnreadCap <= 0 {
		c.UnreadCap = DefaultUnreadCap
	}
	if c.MaxMergedAuthorLists <= 0 {
		c.MaxMergedAuthorLists = 64
	}
	def(&c.PulleesTTL, 30*time.Second)
	def(&c.HiddenTTL, time.Second)
	def(&c.InboxTTL, 30*24*time.Hour)
	def(&c.EmptyTTL, 30*time.Second)
	def(&c.PostTTL, time.Hour)
	def(&c.RefreshInterval, 5*time.Second)
	def(&c.RefreshLookback, time.Minute)
	def(&c.RefreshHorizon, 10*time.Minute)
	return c
}

// DefaultConfig is the configuration a zero Config stands for, which
// feedd's flags start from.
func DefaultConfig() Config { return Config{}.withDefaults() }

// Service is the read engine: home feeds, posts, markers and mute and
// block sets, with the caches that serve them; the writes
// (social.Service) tell it what they changed through its cache-keeping
// methods (Followed, Unfollowed, BatchFollowed, Muted, Unmuted, Blocked,
// Unblocked, PostCreated, PostEdited, PostDeleted, UserDeleted).
type Service struct {
	cfg   Config
	store Store
	cache feed.Cache
	// authorLists holds pulled authors' newest post ids (nil: no author
	// is pulled).
	authorLists AuthorLists
	logger      *slog.Logger
	metrics     *metrics
	ready       []feed.Probe
	// published is told (without blocking) that the outbox has a new
	// event, so an in-process relay need not wait for its next poll.
	published func()
	// graphChanged is told that a follow or unfollow of a reader
	// committed (nil: nobody listens): the ranked feed drops what it
	// gathered of the reader's feed.
	graphChanged func(ctx context.Context, reader int64)
	rebuilds     singleflight.Group
	modes        modesEpoch

	// The defences: the SQL breaker (nil: none, sqlbreaker.go), the
	// degradation switches (nil: all off, degraded.go), the in-process
	// cache of hot post bodies (nil: none) and the collapsing of
	// concurrent misses (hydrate.go).
	breaker     *breaker.Breaker
	switches    *degrade.Switches
	hot         *lru.Cache[int64, feed.Post]
	hotTTL      time.Duration
	lastSaved   *lru.Cache[int64, struct{}]
	flights     flights
	listFills   singleflight.Group
	pulleeLoads singleflight.Group

	// heads is the process's copy of the heads of pulled authors' lists
	// (listHead), loaded once per author at a time.
	heads     *lru.Cache[int64, listHead]
	headLoads singleflight.Group

	// gates remembers, per reader, until when the smart refresh's gate
	// is known to be taken (gateRefreshOnce).
	gates *lru.Cache[int64, time.Time]
	// floor is the process's copy of the store's NewestPostsFloor for
	// RefreshMaxPosts (refreshFloor), loaded once at a time.
	floor      atomic.Pointer[postsFloor]
	floorLoads singleflight.Group
	// hidden is the process's copy of readers' mute and block sets.
	hidden *lru.Cache[int64, feed.Hidden]
	// members is the process's copy of lists' members and reply rules
	// (listState).
	members *lru.Cache[listKey, listState]
	// followAnswers is the process's copy of whether readers follow the
	// users their feeds' replies answer (replies.go).
	followAnswers *lru.Cache[followPair, bool]
	// gone is the process's copy of the deleted users, whose posts no
	// read shows (deleted.go).
	gone      atomic.Pointer[goneAuthors]
	goneLoads singleflight.Group
	now       func() time.Time // the clock of gates, floor and hidden sets; tests set it
}

// Option configures a Service.
type Option func(*Service)

// WithPublishHook sets a function called after every committed publish
// (PostCreated) and every switch of an author back to push (its queued
// catch-up fan-out).
func WithPublishHook(f func()) Option { return func(s *Service) { s.published = f } }

// WithGraphHook has f told, after a follow or unfollow by a reader
// committed, that what the reader's feed holds changed.
func WithGraphHook(f func(ctx context.Context, reader int64)) Option {
	return func(s *Service) { s.graphChanged = f }
}

// WithReadyCheck adds a named dependency check to Ready and Checks; a
// required one failing makes the service not ready.
func WithReadyCheck(name string, required bool, f func(context.Context) error) Option {
	return func(s *Service) { s.ready = append(s.ready, feed.Probe{Name: name, Required: required, Ping: f}) }
}

// New returns a Service. authorLists holds pulled authors' lists of post
// ids (nil unless the mode is hybrid); reg may be nil.
func New(logger *slog.Logger, cfg Config, store Store, cache feed.Cache, authorLists AuthorLists, reg prometheus.Registerer, opts ...Option) *Service {
	s := &Service{
		cfg:         cfg.withDefaults(),
		store:       store,
		cache:       cache,
		authorLists: authorLists,
		logger:      logger.With("component", "timeline"),
		metrics:     newMetrics(reg),
		published:   func() {},
		heads:       lru.New[int64, listHead](listHeads, listHeadTTL, nil),
		now:         time.Now,
	}
	s.hidden = lru.New[int64, feed.Hidden](hiddenSets, s.cfg.HiddenTTL, func() time.Time { return s.now() })
	s.members = lru.New[listKey, listState](memberSets, s.cfg.HiddenTTL, func() time.Time { return s.now() })
	s.followAnswers = lru.New[followPair, bool](followAnswers, s.cfg.HiddenTTL, func() time.Time { return s.now() })
	s.gates = lru.New[int64, time.Time](refreshGates, s.cfg.RefreshInterval, func() time.Time { return s.now() })
	// SQL is required: without it the API cannot take a write. The cache
	// is not: every read falls back to SQL.
	s.ready = []feed.Probe{{Name: "sql", Required: true, Ping: store.Ping}, {Name: "cache", Required: false, Ping: cache.Ping}}
	for _, o := range opts {
		o(s)
	}
	if s.breaker != nil {
		s.store = breakerStore{store: s.store, b: s.breaker}
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

// Checks pings every dependency (feed.RunProbes).
func (s *Service) Checks(ctx context.Context) []feed.Check { return feed.RunProbes(ctx, s.ready) }

// WithBreaker puts a circuit breaker in front of every SQL call of the
// service (see breakerStore). The store's domain answers (not found,
// conflict) never count against it; its state is the gauge
// feedd_sql_breaker_state.
func WithBreaker(cfg breaker.Config) Option {
	return func(s *Service) {
		cfg.Ignore = sqlbreaker.DomainError
		cfg.OnChange = func(from, to breaker.State) {
			s.metrics.breakerChanges.WithLabelValues(to.String()).Inc()
			if to == breaker.Open {
				s.logger.Error("SQL breaker opened: SQL is failing or slow; reads come from the cache alone, writes answer 503", "from", from.String())
			} else {
				s.logger.Warn("SQL breaker changed state", "from", from.String(), "to", to.String())
			}
		}
		s.breaker = breaker.New(cfg)
		s.metrics.breakerState(s.breaker)
	}
}

// SQLBreaker is the breaker WithBreaker set (nil: none), for the writes
// (social.WithBreaker) to go through the same one: one SQL, one state.
func (s *Service) SQLBreaker() *breaker.Breaker { return s.breaker }

// WithSwitches makes the service obey the degradation switches: L2 drops
// the pull half of hybrid reads, L4 serves each reader's last good first
// page from the cache. (L3 is enforced by the API, L1 by the likes service.)
//
// So that L4 has something to serve, each reader's first page is saved
// (as ids) at most once per lastGoodEvery per process.
func WithSwitches(sw *degrade.Switches) Option {
	return func(s *Service) {
		s.switches = sw
		s.lastSaved = lru.New[int64, struct{}](lastGoodReaders, lastGoodEvery, nil)
	}
}

// WithHotPosts keeps up to n post bodies in process memory for ttl, in
// front of the cache: a hot post survives the expiry of its cache key, and
// a cache outage, without every reader going to SQL at once. Deletes and
// edits in this process update it at once; other processes serve a
// deleted post, or a post's version before an edit, for at most ttl.
func WithHotPosts(n int, ttl time.Duration) Option {
	return func(s *Service) { s.hot, s.hotTTL = lru.New[int64, feed.Post](n, ttl, nil), ttl }
}

func (s *Service) cacheFailed(what string, err error) {
	s.metrics.cacheErrors.Inc()
	s.logger.Warn("cache call failed; continuing without it", "op", what, "err", err)
}

// CacheFailed is cacheFailed for the writes (social.Service), whose
// failed cache calls count with the read engine's.
func (s *Service) CacheFailed(what string, err error) { s.cacheFailed(what, err) }

// detached gives work that must finish even if the request that started
// it is cancelled (a rebuild shared by several readers) a bounded context.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}
