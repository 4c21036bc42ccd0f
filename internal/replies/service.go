// Package replies is the read side of replies (docs/replies.md): a post's
// reply count, as every post object shows it, a post's page of direct
// replies, and its thread (ancestors and descendants). The replies
// themselves are posts, written by package social; their index and
// counts live in SQL on the parent's shard (sqlstore/replies.go).
package replies

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/lru"
)

// Store is what the replies need of SQL (sqlstore.Store, shards.Store).
type Store interface {
	PostCounts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error)
	PostCountsPrimary(ctx context.Context, ids []int64) (map[int64]feed.Counts, error)
	RepostedAmong(ctx context.Context, user int64, ids []int64) ([]int64, error)
	ReplyIDs(ctx context.Context, parent, after int64, n int) ([]int64, error)
	ChildReplies(ctx context.Context, parents []int64, n int) (map[int64][]int64, error)
	Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error)
}

// Posts is what the replies need of the read engine (timeline.Service):
// posts from its caches, and what a viewer does not see.
type Posts interface {
	Post(ctx context.Context, id int64) (feed.Post, error)
	LivePosts(ctx context.Context, ids []int64) ([]feed.Post, error)
	Hidden(ctx context.Context, viewer int64) (feed.Hidden, error)
}

// Config tunes the service.
type Config struct {
	// LocalCountTTL is how long this process keeps a reply count it read
	// from SQL (the like counts' FEEDD_LIKE_COUNT_TTL): a hot post's count
	// is read once per ttl per process, and a reply handled elsewhere shows
	// here within it; one handled here at once. 0: no local copy.
	LocalCountTTL time.Duration
	// LocalCounts bounds the posts whose counts are kept (100,000).
	LocalCounts int
	// Breaker guards the SQL reads of the counts (nil: none).
	Breaker *breaker.Breaker
}

// Service reads replies.
type Service struct {
	store  Store
	posts  Posts
	cfg    Config
	logger *slog.Logger
	// counts is the process's copy of reply counts (nil: none); writes
	// numbers the counts this process's own replies put there, so that a
	// read that began before one cannot overwrite it (likes/counts.go).
	counts *lru.Cache[int64, localCount]
	writes atomic.Uint64
}

type localCount struct {
	n   feed.Counts
	seq uint64
}

// New returns a Service.
func New(logger *slog.Logger, cfg Config, store Store, posts Posts) *Service {
	if cfg.LocalCounts <= 0 {
		cfg.LocalCounts = 100_000
	}
	return &Service{
		store: store, posts: posts, cfg: cfg,
		logger: logger.With("component", "replies"),
		counts: lru.New[int64, localCount](cfg.LocalCounts, cfg.LocalCountTTL, nil),
	}
}

// Counts returns the live direct replies and reposts of each of ids
// (zero for none): those this process holds, and one SQL query per shard
// for the rest, whatever the page's size. Both counters sit on the post's
// row, so one read gives both.
func (s *Service) Counts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	out := make(map[int64]feed.Counts, len(ids))
	var miss []int64
	for _, id := range ids {
		if c, ok := s.held(id); ok {
			out[id] = c
		} else {
			miss = append(miss, id)
		}
	}
	if len(miss) == 0 {
		return out, nil
	}
	from := s.writes.Load()
	counts, err := breaker.Do(ctx, s.cfg.Breaker, func(ctx context.Context) (map[int64]feed.Counts, error) {
		return s.store.PostCounts(ctx, miss)
	})
	if err != nil {
		return out, fmt.Errorf("replies: counts of %d posts: %w", len(miss), err)
	}
	for _, id := range miss {
		out[id] = counts[id]
		s.learn(from, id, counts[id])
	}
	return out, nil
}

// RepostedBy returns which of ids reader has reposted: one primary-key
// read on the reader's shard, and none for a reader who never reposted.
func (s *Service) RepostedBy(ctx context.Context, reader int64, ids []int64) (map[int64]bool, error) {
	// A reader who never reposted (its hidden set says so, which the page
	// read already) costs no query.
	if h, err := s.posts.Hidden(ctx, reader); err == nil && !h.Reposter() {
		return map[int64]bool{}, nil
	}
	got, err := breaker.Do(ctx, s.cfg.Breaker, func(ctx context.Context) ([]int64, error) {
		return s.store.RepostedAmong(ctx, reader, ids)
	})
	if err != nil {
		return nil, fmt.Errorf("replies: reposts of %d among %d posts: %w", reader, len(ids), err)
	}
	out := make(map[int64]bool, len(got))
	for _, id := range got {
		out[id] = true
	}
	return out, nil
}

func (s *Service) held(id int64) (feed.Counts, bool) {
	if s.counts == nil {
		return feed.Counts{}, false
	}
	c, ok := s.counts.Get(id)
	return c.n, ok
}

// learn holds n, read when s.writes was from, unless a reply of this
// process put a count since.
func (s *Service) learn(from uint64, id int64, n feed.Counts) {
	if s.counts == nil {
		return
	}
	s.counts.Update(id, func(old localCount, ok bool) (localCount, bool) {
		return localCount{n: n}, !ok || old.seq <= from
	})
}

// PostWritten follows a committed reply or repost (parent: the post it
// answers or reposts) or delete of post id (parent 0: read here): the
// parent's counts as the primary now has them are held, so that this
// process shows the change at once.
func (s *Service) PostWritten(ctx context.Context, id, parent int64) {
	if s.counts == nil {
		return
	}
	if parent == 0 {
		posts, err := s.store.Posts(ctx, []int64{id})
		if err != nil {
			s.logger.Warn("replies: read a deleted post's parent", "post", id, "err", err)
			return
		}
		if parent = max(posts[id].InReplyToID, posts[id].RepostOfID); parent == 0 {
			return
		}
	}
	// Numbered before the read: a later write's count, read after this
	// one's, must win whatever order the two puts land in.
	seq := s.writes.Add(1)
	counts, err := s.store.PostCountsPrimary(ctx, []int64{parent})
	if err != nil {
		// Held counts expire within LocalCountTTL.
		s.counts.Delete(parent)
		s.logger.Warn("replies: read a reply count", "post", parent, "err", err)
		return
	}
	s.counts.Update(parent, func(old localCount, ok bool) (localCount, bool) {
		return localCount{n: counts[parent], seq: seq}, !ok || old.seq < seq
	})
}
