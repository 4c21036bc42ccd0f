package likes

import (
	"context"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed"
)

// LikeStates returns each post's like count and whether reader (0: no
// one) likes it: one cache round trip for the page, which asks for the
// counters the process does not hold (LocalCountTTL) and for the
// reader's state, always; SQL only for counters the cache lost (one
// query) and for posts the reader's recent set does not know (one query,
// which also refills an absent set). If the cache fails, both come from
// SQL. While degradation switch L1 is on it answers nil, at no cost.
// degraded says SQL failed and the states are what the cache knew.
//
// Each state carries the post's reply and repost counts too
// (Config.Replies), read after the likes, and whether reader reposted
// it: a failed read of either degrades the page as a failed read of like
// counts does. A repost's original (feed.Post.RepostOf) gets its state
// with the page's posts, so a repost item shows its original's.
func (s *Service) LikeStates(ctx context.Context, reader int64, posts []feed.Post) (states map[int64]feed.LikeState, degraded bool, err error) {
	if s.cfg.Switches != nil && !s.cfg.Switches.Enrich() {
		return nil, false, nil
	}
	posts = withOriginals(posts)
	states, degraded, err = s.likeStates(ctx, reader, posts)
	if err != nil || s.cfg.Replies == nil || len(posts) == 0 {
		return states, degraded, err
	}
	ids := make([]int64, len(posts))
	for i, p := range posts {
		ids[i] = p.ID
	}
	counts, err := s.cfg.Replies.Counts(ctx, ids)
	if err != nil {
		s.logger.Warn("likes: reply and repost counts unavailable; the page is degraded", "err", err)
		degraded = true
	}
	for id, c := range counts {
		st := states[id]
		st.Replies, st.Reposts = c.Replies, c.Reposts
		states[id] = st
	}
	if reader == 0 {
		return states, degraded, nil
	}
	mine, err := s.cfg.Replies.RepostedBy(ctx, reader, ids)
	if err != nil {
		s.logger.Warn("likes: the reader's reposts unavailable; the page is degraded", "err", err)
		degraded = true
	}
	for id := range mine {
		st := states[id]
		st.RepostedByMe = true
		states[id] = st
	}
	return states, degraded, nil
}

// withOriginals returns posts and, after them, the originals the reposts
// among them carry that are not among them.
func withOriginals(posts []feed.Post) []feed.Post {
	var out []feed.Post
	for _, p := range posts {
		if p.RepostOf == nil {
			continue
		}
		if out == nil {
			out = append(make([]feed.Post, 0, 2*len(posts)), posts...)
		}
		out = append(out, *p.RepostOf)
	}
	if out == nil {
		return posts
	}
	return out
}

// Counts returns the posts' reply and repost counts (Config.Replies;
// none without it), for a live stream's post.
func (s *Service) Counts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	if s.cfg.Replies == nil {
		return map[int64]feed.Counts{}, nil
	}
	return s.cfg.Replies.Counts(ctx, ids)
}

func (s *Service) likeStates(ctx context.Context, reader int64, posts []feed.Post) (states map[int64]feed.LikeState, degraded bool, err error) {
	out := make(map[int64]feed.LikeState, len(posts))
	if len(posts) == 0 {
		return out, false, nil
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
		out, err := s.statesFromSQL(ctx, reader, ids)
		return out, false, err
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
		tallies, err := breaker.Do(ctx, s.cfg.Breaker, func(ctx context.Context) (map[int64]feed.LikeTally, error) {
			return s.store.LikeTallies(ctx, miss)
		})
		if err != nil {
			return s.partial(ids, st, err), true, nil
		}
		s.metrics.countLoads.Add(float64(len(miss)))
		counts := countsOf(tallies)
		for id, n := range counts {
			st.Counts[id] = n
		}
		s.learn(from, counts)
		if err := s.cache.FillLikeCounts(ctx, tallies, s.cfg.CountTTL); err != nil {
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
			return s.partial(ids, st, err), true, nil
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
	return out, false, nil
}

// partial answers a page with what the cache knew when SQL failed: a
// page served while SQL is down (from the cache alone, degraded) still
// shows, marked degraded, with the counters and likes the cache holds.
func (s *Service) partial(ids []int64, st feed.LikeStates, err error) map[int64]feed.LikeState {
	s.logger.Warn("likes: SQL failed; answering a page with what the cache knows", "err", err)
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

// bulkCache and bulkStore answer one post's state for many readers at
// once (rediscache, inmemcache and sqlstore do); without them LikedBy
// asks reader by reader.
type bulkCache interface {
	LikedBy(ctx context.Context, post int64, postTime time.Time, readers []int64) (liked map[int64]bool, cold []int64, err error)
}

type bulkStore interface {
	PostLikedBy(ctx context.Context, post int64, users []int64) (map[int64]bool, error)
}

// LikedBy returns post's like count and which of readers like it, as
// LikeStates would for each of them, for the live stream, which sends a
// new post to thousands of readers at once: the count is read once (from
// the cache, exact: a counter exists while any like of the post is in
// flight), and when it is 0, as for nearly every new post, no reader is
// asked about; otherwise one cache round trip asks every reader's recent
// set, and one SQL query per 500 readers those the sets do not know.
// enriched is false while degradation switch L1 drops likes.
func (s *Service) LikedBy(ctx context.Context, p feed.Post, readers []int64) (count int64, liked map[int64]bool, enriched bool, err error) {
	if s.cfg.Switches != nil && !s.cfg.Switches.Enrich() {
		return 0, nil, false, nil
	}
	liked = map[int64]bool{}
	count, err = s.count(ctx, p.ID)
	if err != nil {
		s.cacheFailed("read like count", err)
		counts, err := s.store.LikeCounts(ctx, []int64{p.ID})
		if err != nil {
			return 0, nil, false, fmt.Errorf("likes: count of %d: %w", p.ID, err)
		}
		count = counts[p.ID]
	}
	if count <= 0 || len(readers) == 0 {
		return max(count, 0), liked, true, nil
	}
	cold := readers
	if bc, ok := s.cache.(bulkCache); ok {
		var on map[int64]bool
		on, cold, err = bc.LikedBy(ctx, p.ID, feed.IDTime(p.ID), readers)
		if err != nil {
			s.cacheFailed("read likes of readers", err)
			on, cold = nil, readers
		}
		for r := range on {
			liked[r] = true
		}
	}
	if len(cold) == 0 {
		return count, liked, true, nil
	}
	if bs, ok := s.store.(bulkStore); ok {
		on, err := breaker.Do(ctx, s.cfg.Breaker, func(ctx context.Context) (map[int64]bool, error) {
			return bs.PostLikedBy(ctx, p.ID, cold)
		})
		if err != nil {
			return 0, nil, false, fmt.Errorf("likes: likes of %d readers on %d: %w", len(cold), p.ID, err)
		}
		s.metrics.coldReads.Inc()
		for r := range on {
			liked[r] = true
		}
		return count, liked, true, nil
	}
	for _, r := range cold {
		st, _, err := s.LikeStates(ctx, r, []feed.Post{p})
		if err != nil {
			return 0, nil, false, err
		}
		if st[p.ID].LikedByMe {
			liked[r] = true
		}
	}
	return count, liked, true, nil
}
