// Package likes is feedd's likes service: exact like counts and "liked by
// me" on every post a client sees, at hot-event write rates.
//
// The write path decides a like in the cache (the user's recent set makes
// it idempotent), makes the event durable, then moves the post's cached
// counter and answers. Durable means one of two things, chosen by the
// deployment:
//
//   - with RabbitMQ, the event is published with a publisher confirm (a
//     quorum of the queue's replicas has it) before the API answers;
//     concurrent likes share one publish and its confirm (ViaBroker); a
//     Writer consumes the queue, batches events for up to 500 ms or 500
//     events, writes each batch to SQL in one transaction and acks the
//     messages only after the commit;
//   - with the in-process queue, which dies with the process, the event
//     goes straight to the Writer and the API answers after the batch that
//     holds it committed (group commit: concurrent likes share one
//     transaction), so an answered like is in SQL.
//
// Why not a transactional outbox: it costs a SQL write per like, which is
// exactly the load the batching removes; a confirmed publish is as durable
// (replicated on disk before the answer) for one network round trip.
//
// The read path answers a page's counts and the reader's liked state in
// one cache round trip, and asks SQL (one query per page at most) only for
// posts the cache does not know.
//
// The files follow those concerns: service.go builds the Service, like.go
// is the write path, writer.go makes events durable (the batch Writer and
// the confirmed publish), states.go answers a page, counts.go keeps the
// process's own copy of counts, lists.go pages likers, liked posts and the
// top posts, leaving out what a block hides (visible.go).
package likes

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/lru"
)

// Store is what the service needs of SQL.
type Store interface {
	LikeCounts(ctx context.Context, posts []int64) (map[int64]int64, error)
	// LikeTallies is LikeCounts with each count's sequence, which the
	// cache's counters are loaded from (feed.LikeTally).
	LikeTallies(ctx context.Context, posts []int64) (map[int64]feed.LikeTally, error)
	UserLikeEntries(ctx context.Context, user int64, recentN int, posts []int64) (recent []feed.LikeEntry, complete bool, on map[int64]feed.LikeEntry, err error)
	UserLikes(ctx context.Context, user, before int64, n int) ([]feed.LikeEntry, error)
	PostLikers(ctx context.Context, post, version, user int64, n int) (users, versions []int64, err error)
	TopLiked(ctx context.Context, since time.Time, n int) ([]int64, map[int64]int64, error)
	User(ctx context.Context, id int64) (feed.User, error)
	Users(ctx context.Context, ids []int64) (map[int64]feed.User, error)
}

// Posts hydrates post ids into live posts and says what a viewer does not
// see (the timeline service).
type Posts interface {
	LivePosts(ctx context.Context, ids []int64) ([]feed.Post, error)
	Visibility
}

// ReplyCounter is the reply and repost counts of posts and a reader's
// reposts (replies.Service).
type ReplyCounter interface {
	Counts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error)
	RepostedBy(ctx context.Context, reader int64, ids []int64) (map[int64]bool, error)
}

// Recorder makes a like event durable before a like is answered: a
// confirmed publish to the broker (ViaBroker), or a synchronous batch
// write (Writer.Submit).
type Recorder func(ctx context.Context, ev feed.LikeEvent) error

// Switches is what the service needs of the degradation switches
// (*degrade.Switches).
type Switches interface {
	// Enrich is false while switch L1 drops non-essential enrichment.
	Enrich() bool
}

// Config tunes the service; zero values take defaults.
type Config struct {
	// Window is how many of a user's newest actions the recent set keeps.
	Window int
	// CountTTL is how long an untouched counter stays cached (7 days).
	CountTTL time.Duration
	// SetTTL is how long an untouched recent set stays cached (30 days).
	SetTTL time.Duration
	// MaxTopWindow bounds ?window= of the top posts (30 days).
	MaxTopWindow time.Duration
	// LocalCountTTL is how long this process keeps a like count it
	// learned (from the cache, from SQL, or from a like it handled)
	// before asking the cache again, so a page asks only for the counts
	// it does not hold and a hot post's counter is read once per ttl per
	// process, not once per reader. Likes handled by other processes show
	// here within it; this process's own at once. Unlike the other
	// fields, 0 means off (no local copy), not DefaultLocalCountTTL.
	LocalCountTTL time.Duration
	// LocalCounts bounds how many posts' counts are kept (100,000).
	LocalCounts int
	// Breaker guards the SQL reads of a page's likes (nil: none): while
	// SQL fails or hangs they fail fast, and the page is answered from
	// the cache, marked degraded, rather than waiting on SQL.
	Breaker *breaker.Breaker
	// Replies gives each state its post's reply count (package replies;
	// nil: 0).
	Replies ReplyCounter
	// Switches are the degradation switches (nil: all off). While L1
	// drops non-essential enrichment, LikeStates answers nothing: pages
	// cost no likes lookup and their posts carry no likes fields.
	Switches Switches
}

// DefaultCountTTL is Config.CountTTL's default: the cached counters'
// lifetime, which feedd import renews when it corrects one.
const DefaultCountTTL = 7 * 24 * time.Hour

// DefaultLocalCountTTL is the Config.LocalCountTTL feedd's flag starts
// from: other processes' likes show in this one's counts within a second.
const DefaultLocalCountTTL = time.Second

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = 1000
	}
	if c.CountTTL <= 0 {
		c.CountTTL = DefaultCountTTL
	}
	if c.SetTTL <= 0 {
		c.SetTTL = 30 * 24 * time.Hour
	}
	if c.MaxTopWindow <= 0 {
		c.MaxTopWindow = 30 * 24 * time.Hour
	}
	if c.LocalCounts <= 0 {
		c.LocalCounts = 100_000
	}
	return c
}

// Service implements the likes API.
type Service struct {
	cfg     Config
	store   Store
	cache   feed.LikeCache
	posts   Posts
	record  Recorder
	logger  *slog.Logger
	metrics *metrics

	// counts is the process's copy of like counts (nil: none). writes
	// numbers the counts this process's likes put there: a read that
	// began before such a put must not overwrite it with an older value.
	counts *lru.Cache[int64, localCount]
	writes atomic.Uint64
	// moving counts this process's likes in flight per post: two that
	// overlap cannot tell whose counter value is the newer.
	mu     sync.Mutex
	moving map[int64]*moving // guarded by mu
}

// New returns a Service. reg may be nil.
func New(logger *slog.Logger, cfg Config, store Store, cache feed.LikeCache, posts Posts, record Recorder, reg prometheus.Registerer) *Service {
	cfg = cfg.withDefaults()
	return &Service{
		cfg:     cfg,
		counts:  lru.New[int64, localCount](cfg.LocalCounts, cfg.LocalCountTTL, nil),
		moving:  map[int64]*moving{},
		store:   store,
		cache:   cache,
		posts:   posts,
		record:  record,
		logger:  logger.With("component", "likes"),
		metrics: newMetrics(reg),
	}
}

func (s *Service) livePost(ctx context.Context, id int64) (feed.Post, error) {
	posts, err := s.posts.LivePosts(ctx, []int64{id})
	if err != nil {
		return feed.Post{}, err
	}
	if len(posts) == 0 {
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	return posts[0], nil
}

func (s *Service) cacheFailed(what string, err error) {
	s.metrics.cacheErrors.Inc()
	s.logger.Warn("likes cache call failed; continuing without it", "op", what, "err", err)
}

// unavailable marks err as a backend outage for the client (503) unless
// it already carries a domain code.
func unavailable(err error) error {
	if feed.ErrorCode(err) != feed.EINTERNAL {
		return err
	}
	return fmt.Errorf("%w: %w", feed.Errorf(feed.EUNAVAILABLE, "likes are unavailable for a moment; try again"), err)
}
