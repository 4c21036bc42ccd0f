package likes

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// UserLikes returns a page of up to n live posts user likes, as viewer
// (0: the admin) sees them, with likes older than version before (0: from
// the newest), newest like first. The page's Next is the version of the
// last like it covers, even one of a post deleted since or left out
// (visible.go); ENOTFOUND for an unknown user, or one a block stands
// between.
func (s *Service) UserLikes(ctx context.Context, viewer, user, before int64, n int) (feed.Page, error) {
	h, err := s.posts.Hidden(ctx, viewer)
	if err != nil {
		return feed.Page{}, err
	}
	if h.Blocked(user) {
		return feed.Page{}, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	liked, last, more, err := filtered(n, before, h.HasBlocks(),
		func(before int64, want int) ([]feed.LikedPost, bool, error) {
			return s.userLikes(ctx, user, before, want)
		},
		func(l feed.LikedPost) int64 { return l.Version },
		func(l feed.LikedPost) bool { return l.Post.ID != 0 && !h.Blocked(l.Post.AuthorID) })
	if err != nil {
		return feed.Page{}, err
	}
	pg := feed.Page{Posts: make([]feed.Post, len(liked))}
	for i, l := range liked {
		pg.Posts[i] = l.Post
	}
	if more {
		pg.Next = last
	}
	return pg, nil
}

// userLikes returns up to n posts user likes with likes older than
// version before (0: from the newest), newest like first, and whether
// more exist. Posts deleted since keep their place with an empty Post, so
// that the caller's cursor still advances past them.
//
// SQL has every like once its batch is written; the user's recent set
// has the newest actions at once. A page merges the two: the set's state
// of a post wins (it is newer than any row: an unlike still in flight
// hides SQL's like), SQL answers every post the set does not hold. So a
// user sees their own like in this list as soon as the API answered it.
func (s *Service) userLikes(ctx context.Context, user, before int64, n int) ([]feed.LikedPost, bool, error) {
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

// RecentLiked returns the posts user liked most recently, newest first, at
// most n, from the cache's recent set of user's actions (which holds the
// newest ones); ok is false when the set is absent or the cache failed,
// and the caller asks SQL (UserLikes) instead. It costs one cache read:
// the ranked feed's affinity on every first page.
func (s *Service) RecentLiked(ctx context.Context, user int64, n int) (posts []int64, ok bool) {
	recent, exists, err := s.cache.RecentLikes(ctx, user)
	if err != nil {
		s.cacheFailed("read recent likes", err)
		return nil, false
	}
	if !exists {
		return nil, false
	}
	slices.SortFunc(recent, func(a, b feed.LikeEntry) int { return cmp.Compare(b.Version, a.Version) })
	for _, e := range recent {
		if len(posts) == n {
			break
		}
		if e.Liked {
			posts = append(posts, e.Post)
		}
	}
	return posts, true
}

// PostLikers returns a page of up to n users who like post, as viewer
// (0: the admin) sees them, after the position (version, user) of the last
// one seen, newest like first. ENOTFOUND for an unknown or deleted post,
// or one a block stands between.
func (s *Service) PostLikers(ctx context.Context, viewer, post, version, user int64, n int) (feed.LikerPage, error) {
	h, err := s.posts.Hidden(ctx, viewer)
	if err != nil {
		return feed.LikerPage{}, err
	}
	p, err := s.livePost(ctx, post)
	if err != nil {
		return feed.LikerPage{}, err
	}
	if h.Blocked(p.AuthorID) {
		return feed.LikerPage{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", post)
	}
	likers, last, more, err := filtered(n, feed.Liker{Version: version, User: feed.User{ID: user}}, h.HasBlocks(),
		func(l feed.Liker, want int) ([]feed.Liker, bool, error) {
			return s.postLikers(ctx, post, l.Version, l.User.ID, want)
		},
		func(l feed.Liker) feed.Liker { return l },
		func(l feed.Liker) bool { return !h.Blocked(l.User.ID) })
	if err != nil {
		return feed.LikerPage{}, err
	}
	pg := feed.LikerPage{Likers: likers}
	if more && last.User.ID != 0 {
		pg.Next = last
	}
	return pg, nil
}

// postLikers returns up to n users who like post after the position
// (version, user), newest like first, and whether more exist.
func (s *Service) postLikers(ctx context.Context, post, version, user int64, n int) ([]feed.Liker, bool, error) {
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
// likes, most first, without those of users a block stands between with
// viewer (0: the admin). The ranking comes from SQL's stats rows, which
// every like reaches through the batch writer (no post waits for a flusher
// to pick it), so it lags the counters by at most a batch window.
//
// window is as the API's ?window= takes it (parseWindow).
func (s *Service) TopPosts(ctx context.Context, viewer int64, window string, n int) ([]feed.Post, error) {
	period, err := s.parseWindow(window)
	if err != nil {
		return nil, err
	}
	ids, _, err := s.store.TopLiked(ctx, time.Now().Add(-period), n)
	if err != nil {
		return nil, err
	}
	posts, err := s.posts.LivePosts(ctx, ids)
	if err != nil {
		return nil, err
	}
	h, err := s.posts.Hidden(ctx, viewer)
	if err != nil || !h.HasBlocks() {
		return posts, err
	}
	kept := posts[:0]
	for _, p := range posts {
		if !h.Blocked(p.AuthorID) {
			kept = append(kept, p)
		}
	}
	return kept, nil
}

// DefaultTopWindow is the top posts' window when none is given.
const DefaultTopWindow = 24 * time.Hour

// parseWindow reads the top posts' window: a Go duration such as 24h or
// 90m, or days as 7d, from 1s to Config.MaxTopWindow; "" is
// DefaultTopWindow. The one rule for the window, with one message.
func (s *Service) parseWindow(w string) (time.Duration, error) {
	bad := feed.Errorf(feed.EINVALID, "window must be a duration from 1s to %dd, like 24h, 90m or 7d", s.cfg.MaxTopWindow/(24*time.Hour))
	if w == "" {
		return DefaultTopWindow, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(w, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || strings.Trim(days, "0123456789") != "" || n > int(s.cfg.MaxTopWindow/(24*time.Hour)) {
			return 0, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(w); err != nil {
			return 0, bad
		}
	}
	if d < time.Second || d > s.cfg.MaxTopWindow {
		return 0, bad
	}
	return d, nil
}
