package timeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/feedd/feedd/internal/feed"
)

// How hydrate may load the posts memory and the post cache do not hold.
const (
	withSQL   = true  // the normal read path: one SQL query for the misses
	cacheOnly = false // the degraded path: SQL is unavailable or not wanted
)

// hydrate returns the live posts among ids in the order of ids, and the ids
// that are deleted or unknown. It looks in process memory (hot posts), then
// in the post cache, and then, if sql is set, loads the misses from SQL in
// one query (joining loads already in flight) and caches them for the next
// reader. Without sql, a post that neither memory nor the cache holds is
// left out and not counted dead (only SQL could tell), and hydrate never
// fails.
func (s *Service) hydrate(ctx context.Context, ids []int64, sql bool) ([]feed.Post, []int64, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	found := make(map[int64]feed.Post, len(ids))
	// A reader who wrote within the hot posts' lifetime (an edit, a
	// delete, through another process maybe) may be newer than this
	// process's copies; the shared cache has the newest version.
	if !s.wroteSince(ctx, 2*s.hotTTL) {
		found = s.hotPosts(ids)
	}
	var cold []int64
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			cold = append(cold, id)
		}
	}
	var miss []int64
	if len(cold) > 0 {
		cached, err := s.cache.CachedPosts(ctx, cold)
		if err != nil {
			s.cacheFailed("read post cache", err)
		}
		s.countPostCache(len(cached), len(cold)-len(cached))
		for id, p := range cached {
			found[id] = p
			s.keepHot(p)
		}
		for _, id := range cold {
			if _, ok := cached[id]; !ok {
				miss = append(miss, id)
			}
		}
	}
	if len(miss) > 0 && sql {
		fromSQL, err := s.loadPosts(ctx, miss)
		if err != nil {
			return nil, nil, fmt.Errorf("timeline: hydrate %d posts: %w", len(miss), err)
		}
		fill := make([]feed.Post, 0, len(fromSQL))
		for id, p := range fromSQL {
			found[id] = p
			fill = append(fill, p)
			s.keepHot(p)
		}
		if len(fill) > 0 {
			if err := s.cache.CachePosts(ctx, fill, s.cfg.PostTTL); err != nil {
				s.cacheFailed("fill post cache", err)
			}
		}
	}
	// A deleted user's posts are dead from the deletion on, whichever
	// copy of them a cache still holds (deleted.go).
	gone := s.goneSet(ctx, sql)
	gaps := feed.GapsOf(ctx)
	live := make([]feed.Post, 0, len(ids))
	var dead []int64
	for _, id := range ids {
		p, ok := found[id]
		_, authorGone := gone[p.AuthorID]
		switch {
		case !ok && (!sql || gaps.Unknown(id)):
			// Not known to the cache, and SQL was not asked or its shard
			// did not answer: maybe live, maybe not.
		case !ok || p.Deleted || authorGone:
			dead = append(dead, id)
		default:
			live = append(live, p)
		}
	}
	// A repost shows its original, and dies with it (reposts.go).
	live, deadReposts, err := s.attachOriginals(ctx, live, sql)
	if err != nil {
		return nil, nil, err
	}
	return live, append(dead, deadReposts...), nil
}

// hotPosts returns the posts among ids held in process memory.
func (s *Service) hotPosts(ids []int64) map[int64]feed.Post {
	found := make(map[int64]feed.Post, len(ids))
	if s.hot == nil {
		return found
	}
	for _, id := range ids {
		if p, ok := s.hot.Get(id); ok {
			found[id] = p
		}
	}
	s.metrics.cacheLookups.WithLabelValues("hot_post", "hit").Add(float64(len(found)))
	s.metrics.cacheLookups.WithLabelValues("hot_post", "miss").Add(float64(len(ids) - len(found)))
	return found
}

func (s *Service) countPostCache(hits, misses int) {
	s.metrics.cacheLookups.WithLabelValues("post", "hit").Add(float64(hits))
	s.metrics.cacheLookups.WithLabelValues("post", "miss").Add(float64(misses))
}

// flights collapses concurrent SQL loads of the same post ids: a reader
// whose misses another reader is already loading waits for that load
// instead of sending its own, so a celebrity post whose cache key just
// expired costs SQL one query, not one per concurrent reader.
type flights struct {
	mu sync.Mutex
	m  map[int64]*flight // guarded by mu
}

// flight is one SQL load of a set of posts; done closes when posts and
// err are set.
type flight struct {
	done  chan struct{}
	posts map[int64]feed.Post
	err   error
}

// loadPosts returns the posts among ids from SQL, joining loads already in
// flight for some of them and loading the rest itself in one query.
func (s *Service) loadPosts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	mine := &flight{done: make(chan struct{})}
	var own []int64
	joined := map[*flight]bool{}
	s.flights.mu.Lock()
	if s.flights.m == nil {
		s.flights.m = map[int64]*flight{}
	}
	for _, id := range ids {
		if f, ok := s.flights.m[id]; ok {
			joined[f] = true
			continue
		}
		s.flights.m[id] = mine
		own = append(own, id)
	}
	s.flights.mu.Unlock()
	s.metrics.collapsed.Add(float64(len(ids) - len(own)))

	out := map[int64]feed.Post{}
	if len(own) > 0 {
		// Detached: readers that joined this load must get an answer even
		// if the reader that started it goes away.
		lctx, cancel := detached(ctx)
		mine.posts, mine.err = s.store.Posts(lctx, own)
		cancel()
		s.flights.mu.Lock()
		for _, id := range own {
			delete(s.flights.m, id)
		}
		s.flights.mu.Unlock()
		close(mine.done)
		if mine.err != nil {
			return nil, mine.err
		}
		for id, p := range mine.posts {
			out[id] = p
		}
	}
	for f := range joined {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err != nil {
			return nil, f.err
		}
		for _, id := range ids {
			if p, ok := f.posts[id]; ok {
				out[id] = p
			}
		}
	}
	return out, nil
}
