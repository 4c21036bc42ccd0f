package likes

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

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
			// A deleted user whose likes the purge has not reached yet:
			// keep the position, show nothing of them.
			u = feed.User{ID: id}
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
