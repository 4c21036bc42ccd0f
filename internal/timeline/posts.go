package timeline

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// PostCreated tells the read engine of a post a publish committed
// (social.Service.Publish): it is kept hot in this process, and the
// in-process relay is woken (WithPublishHook) to hand its outbox event
// on. Nothing is written to the shared cache here: while a big fan-out
// runs, Redis works through the workers' pipelines, and one SET queued
// behind them cost publish tens of milliseconds (bench: p50 30 ms with
// it, 5 ms without, next to a 100,000-follower fan-out). The first
// reader's miss caches the post, one SQL query per post and process
// (misses collapse).
func (s *Service) PostCreated(p feed.Post) {
	s.keepHot(p)
	s.published()
}

// Post returns a live post; deleted and unknown posts are ENOTFOUND.
func (s *Service) Post(ctx context.Context, id int64) (feed.Post, error) {
	posts, _, err := s.hydrate(ctx, []int64{id}, withSQL)
	if err != nil {
		return feed.Post{}, err
	}
	if len(posts) == 0 {
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	return posts[0], nil
}

// PostVersion is Post of a copy at version v (feed.Post.Version) or later:
// for a live stream told of an edit made on another process, whose hot
// copy here may predate it. Past that copy it reads the shared cache, which
// the edit wrote, and then SQL; what it finds replaces the hot copy, so the
// process's other streams told of the same edit read it from memory.
func (s *Service) PostVersion(ctx context.Context, id, v int64) (feed.Post, error) {
	p, err := s.Post(ctx, id)
	if err != nil || p.Version() >= v {
		return p, err
	}
	cached, err := s.cache.CachedPosts(ctx, []int64{id})
	if err != nil {
		s.cacheFailed("read edited post", err)
	}
	p, ok := cached[id]
	if !ok || p.Version() < v {
		if p, err = s.store.Post(ctx, id); err != nil {
			return feed.Post{}, fmt.Errorf("timeline: edited post %d: %w", id, err)
		}
	}
	s.keepHot(p)
	if p.Deleted {
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	return p, nil
}

// PostDeleted serves a tombstone for a post a delete committed, so that
// cached copies stop being served at once. Inboxes are not touched: a
// read that meets the post skips it and removes it from that inbox (lazy
// delete), so a delete costs the same for an author with 10 followers or
// 10 million.
func (s *Service) PostDeleted(ctx context.Context, author, id int64) {
	tomb := feed.Post{ID: id, AuthorID: author, Deleted: true, CreatedAt: feed.IDTime(id)}
	s.keepHot(tomb)
	if err := s.cache.CachePosts(ctx, []feed.Post{tomb}, s.cfg.PostTTL); err != nil {
		s.cacheFailed("cache tombstone", err)
	}
}

// PostEdited replaces the read engine's copies of a post with p, as an
// edit committed it.
//
// How every process shows the edit within FEEDD_HOT_POST_TTL: the edit is
// committed to SQL first, then written over the shared post cache entry
// and into this process's hot posts, both keeping the newest version of a
// post (feed.PostCache.CachePosts), so that a reader in any process that
// read the old row or the old entry before the commit, and fills a cache
// after the edit's write, cannot put the old copy back. Other processes
// hold the old copy in their hot posts (WithHotPosts) for at most the hot
// ttl since they loaded it; their next load reads the edit from the shared
// cache, or from SQL if the cache lost it. A failed cache write is logged
// (as for a delete's tombstone): the old entry then lives until it
// expires (PostTTL).
func (s *Service) PostEdited(ctx context.Context, p feed.Post) {
	s.keepHot(p)
	if err := s.cache.CachePosts(ctx, []feed.Post{p}, s.cfg.PostTTL); err != nil {
		s.cacheFailed("cache edited post", err)
	}
}

// keepHot puts p in this process's hot posts unless they hold a newer
// version of it (feed.Post.Supersedes): a reader that loaded the old copy
// before an edit in this process must not replace the edit's.
func (s *Service) keepHot(p feed.Post) {
	s.hot.Update(p.ID, func(old feed.Post, ok bool) (feed.Post, bool) {
		if ok && !p.Supersedes(old) {
			return old, false
		}
		return p, true
	})
}

// AuthorPosts lists an author's live posts below before, newest first.
func (s *Service) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, bool, error) {
	if _, err := s.store.User(ctx, author); err != nil {
		return nil, false, err
	}
	posts, err := s.store.AuthorPosts(ctx, author, before, n+1)
	if err != nil {
		return nil, false, err
	}
	more := len(posts) > n
	if more {
		posts = posts[:n]
	}
	// The author's reposts show their originals; one of a deleted
	// original is left out (reposts.go). The cursor stays the last id
	// kept, so a page may be short, never repeated.
	kept, _, err := s.attachOriginals(ctx, posts, withSQL)
	if err != nil {
		return nil, false, err
	}
	return kept, more, nil
}

// LivePosts returns the live posts among ids, in the order of ids, from
// the post cache and one SQL query for the misses: for other services
// (likes) that show posts.
func (s *Service) LivePosts(ctx context.Context, ids []int64) ([]feed.Post, error) {
	live, _, err := s.hydrate(ctx, ids, withSQL)
	return live, err
}

// LivePostsOrCached is LivePosts that, while SQL is unavailable, answers
// from process memory and the post cache alone (degraded true), as a
// latest feed's page does: a post neither holds is left out.
func (s *Service) LivePostsOrCached(ctx context.Context, ids []int64) (posts []feed.Post, degraded bool, err error) {
	if s.breaker == nil || !s.breaker.Open() {
		live, _, err := s.hydrate(ctx, ids, withSQL)
		if err == nil || !sqlbreaker.IsUnavailable(err) {
			return live, false, err
		}
	}
	live, _, err := s.hydrate(ctx, ids, cacheOnly)
	return live, true, err
}
