package likes

import (
	"context"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Like makes user like post; liking twice counts once. A post of a user
// on the other side of a block does not exist for the liker (ENOTFOUND).
func (s *Service) Like(ctx context.Context, user, post int64) (feed.LikeState, error) {
	h, err := s.posts.Hidden(ctx, user)
	if err != nil {
		return feed.LikeState{}, err
	}
	if err := s.visiblePost(ctx, h, post); err != nil {
		return feed.LikeState{}, err
	}
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
	// A process that died between the steps of an earlier change of the
	// pair (or a call that failed after deciding) left it unfinished: its
	// event may be missing from SQL and its counter move from the cache.
	// Finish it first, so that a client's retry of a like repairs it, and
	// so that a newer change's delta applies after the one it replaces.
	if ch.Unfinished {
		s.metrics.repairs.Inc()
		if _, _, err := s.finish(ctx, user, id, ch.Prev); err != nil {
			if ch.Outcome == feed.LikeChanged {
				s.revert(ctx, user, id, ch) // which journals ch.Prev again
			}
			return feed.LikeState{}, err
		}
	}
	if ch.Outcome != feed.LikeChanged {
		n, err := s.count(ctx, id)
		if err != nil {
			return feed.LikeState{}, err
		}
		return feed.LikeState{Count: n, LikedByMe: liked}, nil
	}
	n, recorded, err := s.finish(ctx, user, id, feed.LikeEntry{Post: id, Liked: liked, Version: ch.Version})
	if err != nil {
		if !recorded {
			s.revert(ctx, user, id, ch)
		}
		return feed.LikeState{}, err
	}
	s.metrics.accepted.WithLabelValues(op(liked)).Inc()
	return feed.LikeState{Count: max(n, 0), LikedByMe: liked}, nil
}

// finish does the steps after a change e of user's is decided: makes its
// event durable, moves the cached counter, and clears the change's
// journal entry. Every step is safe to repeat (RecordLike by version,
// MoveLikeCount by user and version, FinishLike by version), which is
// what lets a later call finish a change whose process died in between.
// It returns the post's count after the change, and whether the event is
// durable (on an error before it, the caller reverts a fresh change).
//
// A change nobody calls again on (the client never retried, the user
// never touched the post again) stays unfinished: if its process died
// before the event was durable, the cache shows the like (liked_by_me,
// and the counter not moved) while SQL never has it, until the user's
// recent set expires or the user acts on the post again, which finishes
// it first. If the process died after the event, SQL has it and only
// the cached counter is one short until it expires or is repaired.
func (s *Service) finish(ctx context.Context, user, id int64, e feed.LikeEntry) (n int64, recorded bool, err error) {
	// The counter is cached before the event can reach SQL, so that the
	// move below is pending on it until the writer settles the event
	// (SettleLikes). A counter loaded while events are in flight without
	// their moves (the cache lost its keys) is corrected by the same
	// settle: SQL's tally after the event is newer than the loaded one.
	if _, err := s.count(ctx, id); err != nil {
		return 0, false, err
	}
	ev := feed.LikeEvent{User: user, Post: id, Liked: e.Liked, Version: e.Version}
	if err := s.record(ctx, ev); err != nil {
		return 0, false, unavailable(fmt.Errorf("likes: persist %d on %d: %w", user, id, err))
	}
	delta := int64(1)
	if !e.Liked {
		delta = -1
	}
	s.startMove(id)
	n, ok, err := s.cache.MoveLikeCount(ctx, id, user, e.Version, delta, s.cfg.CountTTL)
	s.endMove(id, n, err == nil && ok)
	if err != nil || !ok {
		// Lost between the load and now (Redis failed over): SQL will
		// have the like within a batch window; answer from it.
		s.cacheFailed("count like", err)
		n, err = s.count(ctx, id)
		if err != nil {
			return 0, true, err
		}
	}
	if err := s.cache.FinishLike(ctx, user, id, e.Version); err != nil {
		// Left unfinished: the next call on the pair repeats the steps,
		// which change nothing more.
		s.cacheFailed("finish like", err)
	}
	return n, true, nil
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
	tallies, err := s.store.LikeTallies(ctx, []int64{post})
	if err != nil {
		// SQL down is a 503 ("retry shortly"), as on every other path.
		return 0, unavailable(fmt.Errorf("likes: count of %d from SQL: %w", post, err))
	}
	s.metrics.countLoads.Add(1)
	if err := s.cache.FillLikeCounts(ctx, tallies, s.cfg.CountTTL); err != nil {
		return 0, unavailable(fmt.Errorf("likes: cache count of %d: %w", post, err))
	}
	s.learn(from, countsOf(tallies))
	return tallies[post].Count, nil
}

// countsOf is the counts of tallies.
func countsOf(tallies map[int64]feed.LikeTally) map[int64]int64 {
	counts := make(map[int64]int64, len(tallies))
	for id, t := range tallies {
		counts[id] = t.Count
	}
	return counts
}
