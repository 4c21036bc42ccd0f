package social

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// PurgeStore is what a Purger needs of SQL (sqlstore.Store).
type PurgeStore interface {
	ClaimPurge(ctx context.Context, owner string, lease time.Duration) (int64, bool, error)
	PurgeBatch(ctx context.Context, user int64, owner string, lease time.Duration) (feed.PurgeBatch, error)
}

// LikeCounters drops cached like counters and recent sets (the caches'
// DropLikes); their next read loads them from SQL.
type LikeCounters interface {
	DropLikes(ctx context.Context, user, post int64) error
}

// PurgerConfig tunes a Purger; zero values take the defaults.
type PurgerConfig struct {
	// Lease is how long a worker owns a purge without renewing it (each
	// batch renews it): the time another worker waits before resuming
	// the purge of a worker that died.
	Lease time.Duration
	// Poll is how often an idle worker looks for a purge to run.
	Poll time.Duration
	// PostTTL is the post cache's lifetime, for the tombstones of the
	// deleted posts.
	PostTTL time.Duration
	// ForgetHidden drops the user's shared mute and block set
	// (timeline.ForgetHidden: the key is the read engine's); nil leaves
	// it to expire.
	ForgetHidden func(ctx context.Context, kv feed.KV, user int64) error
}

// DefaultPurgeLease is PurgerConfig.Lease's default (FEEDD_PURGE_LEASE).
const DefaultPurgeLease = 15 * time.Second

// Purger runs the purges of deleted users, on the work role: it claims one
// at a time, runs its batches, and after each makes the caches forget what
// the batch deleted. Several purgers (in several processes) share the
// queue; one that dies leaves its purge to another once its lease ends.
type Purger struct {
	cfg         PurgerConfig
	store       PurgeStore
	cache       feed.Cache
	authorLists feed.Inboxes
	likes       LikeCounters
	logger      *slog.Logger
	owner       string
	batches     atomic.Int64
}

// NewPurger returns a Purger. authorLists and likes may be nil.
func NewPurger(logger *slog.Logger, cfg PurgerConfig, store PurgeStore, cache feed.Cache, authorLists feed.Inboxes, likes LikeCounters) *Purger {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultPurgeLease
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.PostTTL <= 0 {
		cfg.PostTTL = time.Hour // the timeline's default
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Purger{cfg: cfg, store: store, cache: cache, authorLists: authorLists, likes: likes,
		logger: logger.With("component", "purger"), owner: hex.EncodeToString(b[:])}
}

// Run runs purges until ctx is done.
func (p *Purger) Run(ctx context.Context) {
	for ctx.Err() == nil {
		user, ok, err := p.store.ClaimPurge(ctx, p.owner, p.cfg.Lease)
		if err != nil && ctx.Err() == nil {
			p.logger.Warn("could not claim a purge; retrying", "err", err)
		}
		if err != nil || !ok {
			select {
			case <-ctx.Done():
			case <-time.After(p.cfg.Poll):
			}
			continue
		}
		p.purge(ctx, user)
	}
}

// purge runs user's batches until the purge is done, the lease is lost
// or ctx ends; a failed batch leaves the purge to a later claim.
func (p *Purger) purge(ctx context.Context, user int64) {
	start := time.Now()
	p.logger.Info("purge started", "user", user)
	for ctx.Err() == nil {
		b, err := p.store.PurgeBatch(ctx, user, p.owner, p.cfg.Lease)
		if err != nil {
			if ctx.Err() == nil {
				p.logger.Warn("purge batch failed; the purge resumes after its lease", "user", user, "err", err)
			}
			return
		}
		p.batches.Add(1)
		p.forget(ctx, user, b)
		if b.Done {
			p.logger.Info("purge done", "user", user, "took", time.Since(start))
			return
		}
	}
}

// forget makes the caches forget what a batch deleted. A failure is
// logged and left to the caches' TTLs: the posts stay hidden by the
// deleted-users set meanwhile (goneKeep), a counter is off until it
// expires.
func (p *Purger) forget(ctx context.Context, user int64, b feed.PurgeBatch) {
	if len(b.Posts) > 0 {
		dead := make([]feed.Post, len(b.Posts))
		for i, id := range b.Posts {
			dead[i] = feed.Post{ID: id, AuthorID: user, Deleted: true}
		}
		if err := p.cache.CachePosts(ctx, dead, p.cfg.PostTTL); err != nil {
			p.logger.Warn("purge: deleted posts not tombstoned in the post cache", "user", user, "err", err)
		}
	}
	if p.likes != nil {
		for _, post := range b.Counted {
			if err := p.likes.DropLikes(ctx, 0, post); err != nil {
				p.logger.Warn("purge: like counter not dropped; it is off by one until it expires", "post", post, "err", err)
				break
			}
		}
	}
	if !b.Done {
		return
	}
	if err := p.cache.DropInbox(ctx, user); err != nil {
		p.logger.Warn("purge: inbox not dropped; it expires", "user", user, "err", err)
	}
	if p.authorLists != nil {
		if err := p.authorLists.DropInbox(ctx, user); err != nil {
			p.logger.Warn("purge: author list not dropped; it expires", "user", user, "err", err)
		}
	}
	// The user's own mute and block set: a user created later with the id
	// starts with none.
	if p.cfg.ForgetHidden != nil {
		if err := p.cfg.ForgetHidden(ctx, p.cache, user); err != nil {
			p.logger.Warn("purge: mute and block set not dropped; it expires", "user", user, "err", err)
		}
	}
	if p.likes != nil {
		if err := p.likes.DropLikes(ctx, user, 0); err != nil {
			p.logger.Warn("purge: recent likes not dropped; they expire", "user", user, "err", err)
		}
	}
	// The token standing needs nothing: it says "no such user" since the
	// deletion, and a user created again with the id overwrites it.
}
