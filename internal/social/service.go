// Package social is feedd's write side and social graph: users and their
// tokens, follows (one at a time or a batch), mutes and blocks, posts'
// publish, edit and delete, and account deletion with its purge. SQL is
// the truth: each write commits there first, then tells the read engine
// (package timeline, through Timeline) what changed so that its caches
// keep up, then the live streams (feed.Announcer).
//
// The files follow a write in the order it happens: service.go (the
// Service, and Timeline: what a write tells the read engine), then the
// writes, each with the store interface it needs: users.go (creating and
// reading users, and the graph's lists), tokens.go (token standing and
// revocation), follows.go and followbatch.go, relations.go (mutes and
// blocks), posts.go (publish, edit, delete), deletion.go (account
// deletion) and purge.go (the Purger of a deleted account's data, in the
// work role); export.go (a user's data as JSON Lines); announce.go tells
// the live streams; sqlbreaker.go puts the SQL breaker in front of the
// store; keysweep.go sweeps the publishes' expired idempotency keys (in
// the work role).
package social

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/lru"
)

// Store is what the service needs of SQL (sqlstore.Store): one small
// interface per job, each declared with the writes that use it.
type Store interface {
	UserStore
	TokenStore
	GraphStore
	RelationStore
	PostStore
	DeletionStore
	ExportStore
	ListStore
	HandleStore
	SettingsStore
	RepostStore
}

// Timeline is what the writes tell the read engine (timeline.Service)
// after their commit, so that its caches (inboxes, pulled authors, mute
// and block sets, hot posts, deleted users) keep up. Each call is the
// cache side of one committed write: it logs its failures and returns
// nothing, since the write stands.
type Timeline interface {
	// Followed and Unfollowed follow a single follow and unfollow;
	// changed is whether the edge changed (a repeat redoes the inbox part
	// only, so that a retry repairs what a crash left).
	Followed(ctx context.Context, follower, followee int64, changed bool)
	Unfollowed(ctx context.Context, follower, followee int64, changed bool)
	// BatchFollowed follows a follow batch, with its outcomes.
	BatchFollowed(ctx context.Context, follow []feed.Edge, followed []string, unfollow []feed.Edge, unfollowed []string)
	Muted(ctx context.Context, user, target int64)
	Unmuted(ctx context.Context, user int64)
	Blocked(ctx context.Context, blocker, blocked int64)
	Unblocked(ctx context.Context, blocker, blocked int64)
	// PostCreated follows a publish that created p; PostEdited an edit
	// (p as edited), PostDeleted a delete.
	PostCreated(p feed.Post)
	PostEdited(ctx context.Context, p feed.Post)
	PostDeleted(ctx context.Context, author, id int64)
	// ExclusiveChanged follows a change of the members of owner's
	// exclusive lists, which its home feed leaves out.
	ExclusiveChanged(ctx context.Context, owner int64)
	// ListChanged follows a change of the members of owner's list id, or
	// its deletion.
	ListChanged(owner, list int64)
	// Hidden is what viewer does not see (a list takes no member a block
	// stands between).
	Hidden(ctx context.Context, viewer int64) (feed.Hidden, error)
	// SettingsChanged follows a change of user's settings, or of what
	// else its hidden set carries (a first repost).
	SettingsChanged(ctx context.Context, user int64)
	// UserDeleted follows an account deletion: the user's posts are
	// hidden at once on this process.
	UserDeleted(user int64)
	// CacheFailed logs a failed cache call the service continued without,
	// and counts it with the read engine's (feedd_cache_errors_total).
	CacheFailed(what string, err error)
}

// Config tunes the service. Zero values take the defaults.
type Config struct {
	// Policy picks push or pull per author: a user's DeliveryMode.
	Policy feed.DeliveryPolicy
	// IdempotencyTTL is how long a publish's idempotency key is kept
	// (FEEDD_IDEMPOTENCY_TTL): within it a retry gets the first answer,
	// after it the key is new.
	IdempotencyTTL time.Duration
	// Shards is the number of logical shards the SQL truth is spread
	// over (FEEDD_SHARDS; 0 or 1: one database): a post's id carries its
	// author's shard (feed.IDGen.NextOn), so that it is found by id.
	Shards int
}

func (c Config) withDefaults() Config {
	c.Policy = c.Policy.WithDefaults()
	if c.IdempotencyTTL <= 0 {
		// A day, as the IETF Idempotency-Key draft and Stripe suggest:
		// longer than any client's retries.
		c.IdempotencyTTL = 24 * time.Hour
	}
	return c
}

// DefaultConfig is the configuration a zero Config stands for, which
// feedd's flags start from.
func DefaultConfig() Config { return Config{}.withDefaults() }

// Service implements the API's writes and the social graph's reads.
type Service struct {
	// replied follows the writes that move a reply count (WithReplyHook).
	replied  func(ctx context.Context, id, parent int64)
	cfg      Config
	store    Store
	kv       feed.KV
	timeline Timeline
	ids      *feed.IDGen
	logger   *slog.Logger
	// announcer tells the live streams of committed changes (nil: none).
	announcer feed.Announcer
	// breaker is the SQL breaker (nil: none), shared with the timeline.
	breaker     *breaker.Breaker
	tokenChecks *prometheus.CounterVec
	users       singleflight.Group
	// standings is the process's copy of users' token standing
	// (tokens.go), loaded once per user at a time.
	standings     *lru.Cache[int64, tokenStanding]
	standingLoads singleflight.Group
	now           func() time.Time // the clock of standings; tests set it
}

// Option configures a Service.
type Option func(*Service)

// WithBreaker puts b, the SQL breaker the timeline also goes through
// (timeline.Service.SQLBreaker), in front of every SQL call of the service.
func WithBreaker(b *breaker.Breaker) Option { return func(s *Service) { s.breaker = b } }

// New returns a Service. kv is the shared cache of token standings; tl
// is the read engine the writes keep in step; reg may be nil.
func New(logger *slog.Logger, cfg Config, store Store, kv feed.KV, tl Timeline, ids *feed.IDGen, reg prometheus.Registerer, opts ...Option) *Service {
	s := &Service{
		cfg:      cfg.withDefaults(),
		store:    store,
		kv:       kv,
		timeline: tl,
		ids:      ids,
		logger:   logger.With("component", "social"),
		now:      time.Now,
		tokenChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "feedd_token_checks_total", Help: "User-token checks of the user's standing, by where the answer came from: memory (the process's copy, at most 1 s old), cache, sql, last_known (SQL unavailable: the process's last answer).",
		}, []string{"source"}),
	}
	if reg != nil {
		reg.MustRegister(s.tokenChecks)
	}
	s.standings = lru.New[int64, tokenStanding](tokenStandings, tokenLastKnown, func() time.Time { return s.now() })
	for _, o := range opts {
		o(s)
	}
	if s.breaker != nil {
		s.store = breakerStore{store: s.store, b: s.breaker}
	}
	return s
}

func (s *Service) cacheFailed(what string, err error) { s.timeline.CacheFailed(what, err) }

// detached gives work that must finish even if the request that started
// it is cancelled (a load shared by several callers) a bounded context.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}
