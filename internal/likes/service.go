// Package likes is feedd's likes service (note 002, "V2.0"): exact like
// counts and "liked by me" on every post a client sees, at hot-event write
// rates.
//
// The write path decides a like in the cache (the user's recent set makes
// it idempotent), makes the event durable, then moves the post's cached
// counter and answers. Durable means one of two things, chosen by the
// deployment:
//
//   - with RabbitMQ, the event is published with a publisher confirm (a
//     quorum of the queue's replicas has it) before the API answers;
//     concurrent likes share one publish and its confirm (GroupPublisher); a
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
package likes

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
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
	UserLikeEntries(ctx context.Context, user int64, recentN int, posts []int64) (recent []feed.LikeEntry, complete bool, on map[int64]feed.LikeEntry, err error)
	UserLikes(ctx context.Context, user, before int64, n int) ([]feed.LikeEntry, error)
	PostLikers(ctx context.Context, post, version, user int64, n int) (users, versions []int64, err error)
	TopLiked(ctx context.Context, since time.Time, n int) ([]int64, map[int64]int64, error)
	User(ctx context.Context, id int64) (feed.User, error)
	Users(ctx context.Context, ids []int64) (map[int64]feed.User, error)
}

// Posts hydrates post ids into live posts (the timeline service).
type Posts interface {
	LivePosts(ctx context.Context, ids []int64) ([]feed.Post, error)
}

// Publisher makes a like event durable: a confirmed publish to the
// broker, or a synchronous batch write (Writer.Submit).
type Publisher func(ctx context.Context, ev feed.LikeEvent) error

// Config tunes the service; zero values take defaults.
type Config struct {
	// Window is how many of a user's newest actions the recent set keeps.
	Window int
	// CountTTL is how long an untouched counter stays cached (7 days).
	CountTTL time.Duration
	// SetTTL is how long an untouched recent set stays cached (30 days).
	SetTTL time.Duration
	// MaxTopWindow bounds ?window= of the top posts.
	MaxTopWindow time.Duration
	// LocalCountTTL is how long this process keeps a like count it
	// learned (from the cache, from SQL, or from a like it handled)
	// before asking the cache again, so a page asks only for the counts
	// it does not hold and a hot post's counter is read once per ttl per
	// process, not once per reader. Likes handled by other processes show
	// here within it; this process's own at once. Unlike the other
	// fields, 0 means off (no local copy), not a default.
	LocalCountTTL time.Duration
	// LocalCounts bounds how many posts' counts are kept (100,000).
	LocalCounts int
	// Breaker guards the SQL reads of a page's likes (nil: none): while
	// SQL fails or hangs they fail fast, and the page is answered from
	// the cache, marked degraded, rather than waiting on SQL.
	Breaker *breaker.Breaker
}

func (c Config) withDefaults() Config {
	if c.Window <= 0 {
		c.Window = 1000
	}
	if c.CountTTL <= 0 {
		c.CountTTL = 7 * 24 * time.Hour
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
	publish Publisher
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

// localCount is a like count held in process; seq is the writes number
// of the like that put it, 0 if a read did. unknown marks a post whose
// counter overlapping likes moved: a page asks the cache for it.
type localCount struct {
	n       int64
	seq     uint64
	unknown bool
}

type moving struct {
	n       int  // likes of the post in flight
	overlap bool // some of them overlapped
}

// New returns a Service. reg may be nil.
func New(logger *slog.Logger, cfg Config, store Store, cache feed.LikeCache, posts Posts, publish Publisher, reg prometheus.Registerer) *Service {
	cfg = cfg.withDefaults()
	return &Service{
		cfg:     cfg,
		counts:  lru.New[int64, localCount](cfg.LocalCounts, cfg.LocalCountTTL, nil),
		moving:  map[int64]*moving{},
		store:   store,
		cache:   cache,
		posts:   posts,
		publish: publish,
		logger:  logger.With("component", "likes"),
		metrics: newMetrics(reg),
	}
}

// Like makes user like post; liking twice counts once.
func (s *Service) Like(ctx context.Context, user, post int64) (feed.LikeState, error) {
	return s.set(ctx, user, post, true)
}

// Unlike takes user's like of post back; unliking what one never liked
// changes nothing.
func (s *Service) Unlike(ctx context.Context, user, post int64) (feed.LikeState, error) {
	return s.set(ctx, user, post, false)
}

func (s *Service) set(ctx context.Context, user, id int64, liked bool) (feed.LikeState, error) {
	p, err := s.livePost(ctx, id)
	if err != nil {
		return feed.LikeState{}, err
	}
	// From here the steps run to the end even if the client goes away: a
	// decision in the cache without its event, or an event without its
	// counter move, would leave the cache disagreeing with SQL.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	ch, err := s.decide(ctx, user, p, liked)
	if err != nil {
		return feed.LikeState{}, unavailable(fmt.Errorf("likes: decide %d on %d: %w", user, id, err))
	}
	if ch.Outcome != feed.LikeChanged {
		n, err := s.count(ctx, id)
		if err != nil {
			return feed.LikeState{}, err
		}
		return feed.LikeState{Count: n, LikedByMe: liked}, nil
	}
	// The counter is cached before the event can reach SQL: loaded
	// afterwards it could already hold this like and count it twice. A
	// counter therefore exists whenever an event of its post is in
	// flight (its ttl is days, the flight milliseconds), which is why a
	// counter loaded from SQL on a miss is exact.
	if _, err := s.count(ctx, id); err != nil {
		s.revert(ctx, user, id, ch)
		return feed.LikeState{}, err
	}
	ev := feed.LikeEvent{User: user, Post: id, Liked: liked, Version: ch.Version}
	if err := s.publish(ctx, ev); err != nil {
		s.revert(ctx, user, id, ch)
		return feed.LikeState{}, unavailable(fmt.Errorf("likes: persist %d on %d: %w", user, id, err))
	}
	delta := int64(1)
	if !liked {
		delta = -1
	}
	s.metrics.accepted.WithLabelValues(op(liked)).Inc()
	s.startMove(id)
	n, ok, err := s.cache.AddLikeCount(ctx, id, delta, s.cfg.CountTTL)
	s.endMove(id, n, err == nil && ok)
	if err != nil || !ok {
		// Lost between the load and now (Redis failed over): SQL will
		// have the like within a batch window; answer from it.
		s.cacheFailed("count like", err)
		n, err = s.count(ctx, id)
		if err != nil {
			return feed.LikeState{}, err
		}
	}
	return feed.LikeState{Count: max(n, 0), LikedByMe: liked}, nil
}

func op(liked bool) string {
	if liked {
		return "like"
	}
	return "unlike"
}

// decide runs SetLiked, filling the user's recent set from SQL when it is
// absent and passing SQL's state when the set does not know the post.
func (s *Service) decide(ctx context.Context, user int64, p feed.Post, liked bool) (feed.LikeChange, error) {
	var cold *feed.LikeEntry
	for range 3 {
		ch, err := s.cache.SetLiked(ctx, user, p.ID, feed.IDTime(p.ID), liked, cold, s.cfg.Window, s.cfg.SetTTL)
		if err != nil {
			return ch, err
		}
		switch ch.Outcome {
		case feed.LikeAbsent:
			recent, complete, on, err := s.store.UserLikeEntries(ctx, user, s.cfg.Window, []int64{p.ID})
			if err != nil {
				return ch, err
			}
			if err := s.cache.FillUserLikes(ctx, user, recent, complete, s.cfg.SetTTL); err != nil {
				return ch, err
			}
			s.metrics.setFills.Inc()
			e := on[p.ID]
			cold = &e
		case feed.LikeCold:
			_, _, on, err := s.store.UserLikeEntries(ctx, user, 0, []int64{p.ID})
			if err != nil {
				return ch, err
			}
			e := on[p.ID]
			cold = &e
		default:
			return ch, nil
		}
	}
	return feed.LikeChange{}, fmt.Errorf("the recent set of %d keeps vanishing", user)
}

// revert undoes a decided change whose event could not be made durable,
// so that the cache does not show a like SQL will never have.
func (s *Service) revert(ctx context.Context, user, post int64, ch feed.LikeChange) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.cache.RevertLike(ctx, user, post, ch); err != nil {
		s.logger.Error("could not revert a like that was not persisted; the cache shows it until the user's set expires",
			"user", user, "post", post, "err", err)
	}
}

// count returns post's like count from the cache, loading it from SQL on
// a miss. It always asks the cache, never the local copy: the write path
// needs the cached counter to exist before its event is published.
func (s *Service) count(ctx context.Context, post int64) (int64, error) {
	from := s.writes.Load()
	st, err := s.cache.LikeStates(ctx, 0, nil, nil, []int64{post}, s.cfg.CountTTL)
	if err != nil {
		return 0, unavailable(fmt.Errorf("likes: count of %d: %w", post, err))
	}
	if n, ok := st.Counts[post]; ok {
		s.learn(from, st.Counts)
		return n, nil
	}
	counts, err := s.store.LikeCounts(ctx, []int64{post})
	if err != nil {
		return 0, err
	}
	s.metrics.countLoads.Add(1)
	if err := s.cache.FillLikeCounts(ctx, counts, s.cfg.CountTTL); err != nil {
		return 0, unavailable(fmt.Errorf("likes: cache count of %d: %w", post, err))
	}
	s.learn(from, counts)
	return counts[post], nil
}

// startMove and endMove bracket a like's move of post's counter. endMove
// holds the counter's value just after the like in process, so that this
// process shows it at once — unless another like of the post in this
// process overlapped it: then either value may be the older, and the
// post is marked for the next page to ask the cache. Holding it under mu
// orders it before any later like's.
func (s *Service) startMove(post int64) {
	if s.counts == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.moving[post]
	if m == nil {
		m = &moving{}
		s.moving[post] = m
	}
	m.n++
	m.overlap = m.overlap || m.n > 1
}

func (s *Service) endMove(post, n int64, known bool) {
	if s.counts == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.moving[post]
	s.counts.Put(post, localCount{n: n, seq: s.writes.Add(1), unknown: !known || m.overlap})
	if m.n--; m.n == 0 {
		delete(s.moving, post)
	}
}

// learn keeps counts read from the cache or SQL in process, except where
// a like of this process put a count since from (s.writes when the read
// began): the read may have happened before that like.
func (s *Service) learn(from uint64, counts map[int64]int64) {
	if s.counts == nil {
		return
	}
	for id, n := range counts {
		s.counts.Update(id, func(old localCount, ok bool) (localCount, bool) {
			return localCount{n: n}, !ok || old.seq <= from
		})
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

// LikeStates returns each post's like count and whether reader (0: no
// one) likes it: one cache round trip for the page, which asks for the
// counters the process does not hold (LocalCountTTL) and for the
// reader's state, always; SQL only for counters the cache lost (one
// query) and for posts the reader's recent set does not know (one query,
// which also refills an absent set). If the cache fails, both come from
// SQL.
func (s *Service) LikeStates(ctx context.Context, reader int64, posts []feed.Post) (map[int64]feed.LikeState, error) {
	out := make(map[int64]feed.LikeState, len(posts))
	if len(posts) == 0 {
		return out, nil
	}
	ids := make([]int64, len(posts))
	times := make([]time.Time, len(posts))
	for i, p := range posts {
		ids[i], times[i] = p.ID, feed.IDTime(p.ID)
	}
	from := s.writes.Load()
	held := make(map[int64]int64, len(ids))
	var counted []int64
	for _, id := range ids {
		if c, ok := s.counts.Get(id); ok && !c.unknown {
			held[id] = c.n
		} else {
			counted = append(counted, id)
		}
	}
	st, err := s.cache.LikeStates(ctx, reader, ids, times, counted, s.cfg.CountTTL)
	if err != nil {
		s.cacheFailed("read like states", err)
		return s.statesFromSQL(ctx, reader, ids)
	}
	s.learn(from, st.Counts)
	for id, n := range held {
		st.Counts[id] = n
	}
	var miss []int64
	for _, id := range ids {
		if _, ok := st.Counts[id]; !ok {
			miss = append(miss, id)
		}
	}
	if len(miss) > 0 {
		counts, err := breaker.Do(ctx, s.cfg.Breaker, func(ctx context.Context) (map[int64]int64, error) {
			return s.store.LikeCounts(ctx, miss)
		})
		if err != nil {
			return s.partial(ctx, ids, st, err), nil
		}
		s.metrics.countLoads.Add(float64(len(miss)))
		for id, n := range counts {
			st.Counts[id] = n
		}
		s.learn(from, counts)
		if err := s.cache.FillLikeCounts(ctx, counts, s.cfg.CountTTL); err != nil {
			s.cacheFailed("fill like counts", err)
		}
	}
	if reader != 0 && len(st.Cold) > 0 {
		recentN := 0
		if !st.SetExists {
			recentN = s.cfg.Window
		}
		var (
			recent   []feed.LikeEntry
			complete bool
			on       map[int64]feed.LikeEntry
		)
		_, err := breaker.Do(ctx, s.cfg.Breaker, func(ctx context.Context) (struct{}, error) {
			var err error
			recent, complete, on, err = s.store.UserLikeEntries(ctx, reader, recentN, st.Cold)
			return struct{}{}, err
		})
		if err != nil {
			return s.partial(ctx, ids, st, err), nil
		}
		s.metrics.coldReads.Inc()
		for id, e := range on {
			if e.Liked {
				st.Liked[id] = true
			}
		}
		if !st.SetExists {
			if err := s.cache.FillUserLikes(ctx, reader, recent, complete, s.cfg.SetTTL); err != nil {
				s.cacheFailed("fill recent likes", err)
			}
			s.metrics.setFills.Inc()
		}
	}
	for _, id := range ids {
		out[id] = feed.LikeState{Count: max(st.Counts[id], 0), LikedByMe: st.Liked[id]}
	}
	return out, nil
}

// partial answers a page with what the cache knew when SQL failed: a
// page served while SQL is down (from the cache alone, degraded) still
// shows, marked degraded, with the counters and likes the cache holds.
func (s *Service) partial(ctx context.Context, ids []int64, st feed.LikeStates, err error) map[int64]feed.LikeState {
	s.logger.Warn("likes: SQL failed; answering a page with what the cache knows", "err", err)
	feed.MarkDegraded(ctx)
	out := make(map[int64]feed.LikeState, len(ids))
	for _, id := range ids {
		out[id] = feed.LikeState{Count: max(st.Counts[id], 0), LikedByMe: st.Liked[id]}
	}
	return out
}

func (s *Service) statesFromSQL(ctx context.Context, reader int64, ids []int64) (map[int64]feed.LikeState, error) {
	counts, err := s.store.LikeCounts(ctx, ids)
	if err != nil {
		return nil, err
	}
	var on map[int64]feed.LikeEntry
	if reader != 0 {
		if _, _, on, err = s.store.UserLikeEntries(ctx, reader, 0, ids); err != nil {
			return nil, err
		}
	}
	out := make(map[int64]feed.LikeState, len(ids))
	for _, id := range ids {
		out[id] = feed.LikeState{Count: counts[id], LikedByMe: on[id].Liked}
	}
	return out, nil
}

// UserLikes returns up to n posts user likes with likes older than
// version before (0: from the newest), newest like first, and whether
// more exist. Posts deleted since keep their place with an empty Post, so
// that the caller's cursor still advances past them.
//
// SQL has every like once its batch is written; the user's recent set
// has the newest actions at once. A page merges the two: the set's state
// of a post wins (it is newer than any row: an unlike still in flight
// hides SQL's like), SQL answers every post the set does not hold. So a
// user sees their own like in this list as soon as the API answered it.
func (s *Service) UserLikes(ctx context.Context, user, before int64, n int) ([]feed.LikedPost, bool, error) {
	if _, err := s.store.User(ctx, user); err != nil {
		return nil, false, err
	}
	recent, _, err := s.cache.RecentLikes(ctx, user)
	if err != nil {
		s.cacheFailed("read recent likes", err)
		recent = nil
	}
	known := make(map[int64]bool, len(recent))
	var entries []feed.LikeEntry
	for _, e := range recent {
		known[e.Post] = true
		if e.Liked && (before == 0 || e.Version < before) {
			entries = append(entries, e)
		}
	}
	// Rows of posts the set knows are dropped below, so ask for as many
	// more: a short merged page then means SQL has no more.
	rows, err := s.store.UserLikes(ctx, user, before, n+1+len(known))
	if err != nil {
		return nil, false, err
	}
	for _, e := range rows {
		if !known[e.Post] {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(a, b feed.LikeEntry) int { return cmp.Compare(b.Version, a.Version) })
	more := len(entries) > n
	if more {
		entries = entries[:n]
	}
	ids := make([]int64, len(entries))
	for i, e := range entries {
		ids[i] = e.Post
	}
	live, err := s.posts.LivePosts(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	byID := make(map[int64]feed.Post, len(live))
	for _, p := range live {
		byID[p.ID] = p
	}
	out := make([]feed.LikedPost, 0, len(entries))
	for _, e := range entries {
		out = append(out, feed.LikedPost{Post: byID[e.Post], Version: e.Version})
	}
	return out, more, nil
}

// PostLikers returns up to n users who like post after the position
// (version, user) of the last one seen, newest like first, and whether
// more exist. ENOTFOUND for an unknown or deleted post.
func (s *Service) PostLikers(ctx context.Context, post, version, user int64, n int) ([]feed.Liker, bool, error) {
	if _, err := s.livePost(ctx, post); err != nil {
		return nil, false, err
	}
	users, versions, err := s.store.PostLikers(ctx, post, version, user, n+1)
	if err != nil {
		return nil, false, err
	}
	more := len(users) > n
	if more {
		users, versions = users[:n], versions[:n]
	}
	found, err := s.store.Users(ctx, users)
	if err != nil {
		return nil, false, err
	}
	out := make([]feed.Liker, 0, len(users))
	for i, id := range users {
		u, ok := found[id]
		if !ok {
			u = feed.User{ID: id} // users are never deleted; keep the position
		}
		out = append(out, feed.Liker{User: u, Version: versions[i]})
	}
	return out, more, nil
}

// TopPosts returns up to n live posts created within window with the most
// likes, most first. The ranking comes from SQL's stats rows, which every
// like reaches through the batch writer (no post waits for a flusher to
// pick it), so it lags the counters by at most a batch window.
func (s *Service) TopPosts(ctx context.Context, window time.Duration, n int) ([]feed.Post, error) {
	if window <= 0 || window > s.cfg.MaxTopWindow {
		return nil, feed.Errorf(feed.EINVALID, "window must be a duration from 1s to %s, like 24h", s.cfg.MaxTopWindow)
	}
	ids, _, err := s.store.TopLiked(ctx, time.Now().Add(-window), n)
	if err != nil {
		return nil, err
	}
	return s.posts.LivePosts(ctx, ids)
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
