package timeline

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/lru"
)

// WithBreaker puts a circuit breaker in front of every SQL call of the
// service (see guardedStore). The store's domain answers (not found,
// conflict) never count against it; its state is the gauge
// feedd_sql_breaker_state.
func WithBreaker(cfg breaker.Config) Option {
	return func(s *Service) {
		cfg.Ignore = domainError
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

// WithSwitches makes the service obey the degradation switches: L2 drops
// the pull half of hybrid reads, L4 serves each reader's last good first
// page from the cache. (L3 is enforced by the API, L1 by the likes code.)
//
// So that L4 has something to serve, each reader's first page is saved
// (as ids) at most once per lastGoodEvery per process.
func WithSwitches(sw *degrade.Switches) Option {
	return func(s *Service) {
		s.switches = sw
		s.lastSaved = lru.New[int64, struct{}](lastGoodReaders, lastGoodEvery, nil)
	}
}

const (
	// lastGoodEvery is how stale an L4 page may be; it bounds the cache
	// writes saving pages to one per reader per interval per process.
	lastGoodEvery = 30 * time.Second
	// lastGoodReaders bounds the memory of that gate.
	lastGoodReaders = 100_000
)

// WithHotPosts keeps up to n post bodies in process memory for ttl, in
// front of the cache: a hot post survives the expiry of its cache key, and
// a cache outage, without every reader going to SQL at once. Deletes in
// this process update it at once; other processes serve a deleted post
// for at most ttl.
func WithHotPosts(n int, ttl time.Duration) Option {
	return func(s *Service) { s.hot = lru.New[int64, feed.Post](n, ttl, nil) }
}

// Enrich reports whether non-essential enrichment (like counts, liked
// state) should be computed: false while switch L1 is on.
func (s *Service) Enrich() bool { return s.switches.Enrich() }

// lastGoodTTL is how long a reader's last good first page is kept for L4.
const lastGoodTTL = 24 * time.Hour

func lastGoodKey(reader int64) string { return "lastgood:{" + strconv.FormatInt(reader, 10) + "}" }

// saveLastGood remembers the ids of a first page served in full, for L4.
// An in-process gate makes it at most one cache write per reader per
// RefreshInterval (the same rhythm at which a first page can change).
func (s *Service) saveLastGood(ctx context.Context, reader int64, posts []feed.Post, more bool) {
	if _, recent := s.lastSaved.Get(reader); recent {
		return
	}
	s.lastSaved.Put(reader, struct{}{})
	ids := make([]int64, 0, len(posts)+1)
	for _, p := range posts {
		ids = append(ids, p.ID)
	}
	if more {
		ids = append(ids, 0) // 0 is no post id: it says "more exist"
	}
	if err := s.cache.Set(ctx, lastGoodKey(reader), formatIDList("", ids), lastGoodTTL); err != nil {
		s.cacheFailed("save last good page", err)
	}
}

// lastGood returns the reader's saved first page, hydrated from memory and
// the cache only. ok is false when none was saved.
func (s *Service) lastGood(ctx context.Context, reader int64, n int) ([]feed.Post, bool, bool) {
	v, ok, err := s.cache.Get(ctx, lastGoodKey(reader))
	if err != nil || !ok {
		return nil, false, false
	}
	ids, ok := parseIDList(v, "")
	if !ok {
		return nil, false, false
	}
	more := false
	if len(ids) > 0 && ids[len(ids)-1] == 0 {
		ids, more = ids[:len(ids)-1], true
	}
	if len(ids) > n {
		ids, more = ids[:n], true
	}
	posts := s.hydrateCached(ctx, ids)
	return posts, more, true
}

// cachedFeed is the read path without SQL: the inbox (and, in hybrid
// mode, the cached outboxes of the pulled authors the reader follows, as
// far as the cache knows them), hydrated from memory and the cache. The
// page is marked degraded: it may miss posts the cache does not have, and
// it ends where the inbox ends. The reader's last good first page is
// served instead of a first page when saved is set (switch L4), or when
// the inbox is gone.
func (s *Service) cachedFeed(ctx context.Context, reader, before int64, n int, saved bool) ([]feed.Post, bool, error) {
	feed.MarkDegraded(ctx)
	s.metrics.reads.WithLabelValues(pathDegraded).Inc()
	if before == 0 && saved {
		if posts, more, ok := s.lastGood(ctx, reader, n); ok && len(posts) > 0 {
			return posts, more, nil
		}
	}
	want := n + 1
	pg, err := s.cache.InboxPage(ctx, reader, before, want)
	if err != nil {
		return nil, false, fmt.Errorf("timeline: degraded read of %d: SQL and cache both failed: %w", reader, err)
	}
	if !pg.Exists && before == 0 && !saved {
		if posts, more, ok := s.lastGood(ctx, reader, n); ok {
			return posts, more, nil
		}
	}
	lists := [][]int64{pg.IDs}
	if s.merges() && !s.switches.On(degrade.L2) {
		if v, ok, err := s.cache.Get(ctx, pulleesKey(reader)); err == nil && ok {
			pullees, _ := parseIDList(v, s.epoch(ctx))
			for i, a := range pullees {
				if i == s.cfg.MaxMergedOutboxes {
					break
				}
				if op, err := s.outboxes.InboxPage(ctx, a, before, want); err == nil {
					lists = append(lists, op.IDs)
				}
			}
		}
	}
	ids := mergeK(lists, want)
	posts := s.hydrateCached(ctx, ids)
	if len(posts) > n {
		return posts[:n], true, nil
	}
	// Past the inbox's end only SQL knows more: the page says it is the
	// last, and says it is degraded.
	return posts, false, nil
}

// hydrateCached returns the live posts among ids found in memory or the
// cache, in order; the others are left out.
func (s *Service) hydrateCached(ctx context.Context, ids []int64) []feed.Post {
	found := s.hotPosts(ids)
	var miss []int64
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			miss = append(miss, id)
		}
	}
	if len(miss) > 0 {
		cached, err := s.cache.CachedPosts(ctx, miss)
		if err != nil {
			s.cacheFailed("read post cache", err)
		}
		s.countPostCache(len(cached), len(miss)-len(cached))
		for id, p := range cached {
			found[id] = p
			s.hot.Put(id, p)
		}
	}
	out := make([]feed.Post, 0, len(ids))
	for _, id := range ids {
		if p, ok := found[id]; ok && !p.Deleted {
			out = append(out, p)
		}
	}
	return out
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
