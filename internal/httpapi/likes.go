package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Likes is what the API needs of the likes service.
type Likes interface {
	// Like and Unlike set the actor's like of a post, idempotently, and
	// return the post's count and the actor's state; ENOTFOUND for an
	// unknown or deleted post.
	Like(ctx context.Context, user, post int64) (feed.LikeState, error)
	Unlike(ctx context.Context, user, post int64) (feed.LikeState, error)
	// LikeStates returns the count of each post and whether viewer (0:
	// nobody) likes it; nil when degradation switch L1 drops that
	// enrichment (the posts then carry no likes fields). degraded says
	// SQL failed and the states are what the cache knew.
	LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (states map[int64]feed.LikeState, degraded bool, err error)
	// PostLikers pages a post's likers after the position (version, user),
	// newest first.
	PostLikers(ctx context.Context, post, version, user int64, n int) ([]feed.Liker, bool, error)
	// UserLikes pages the posts a user likes below version before, newest
	// like first; a deleted post comes back with ID 0.
	UserLikes(ctx context.Context, user, before int64, n int) ([]feed.LikedPost, bool, error)
	// TopPosts returns the most liked posts created within window.
	TopPosts(ctx context.Context, window time.Duration, n int) ([]feed.Post, error)
}

// viewerFrom is the user whose liked_by_me a response shows: the token's
// user, or nobody (0) for the admin.
func viewerFrom(ctx context.Context) int64 {
	me, _ := actorFrom(ctx)
	return me
}

type likeJSON struct {
	LikeCount int64 `json:"like_count"`
	LikedByMe bool  `json:"liked_by_me"`
}

func handleLike(svc Service, lk Likes, liked bool) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndPostID(r)
		if err != nil {
			return err
		}
		if liked {
			// A post of a user on the other side of a block does not
			// exist for the liker. Only a viewer with blocks pays the
			// post lookup.
			if err := likeable(r.Context(), svc, id); err != nil {
				return err
			}
		}
		var st feed.LikeState
		if liked {
			st, err = lk.Like(r.Context(), me, id)
		} else {
			st, err = lk.Unlike(r.Context(), me, id)
		}
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, likeJSON{LikeCount: st.Count, LikedByMe: st.LikedByMe})
		return nil
	})
}

// likeable returns ENOTFOUND when a block stands between the viewer and
// post's author.
func likeable(ctx context.Context, svc Service, post int64) error {
	h, err := hiddenFor(ctx, svc)
	if err != nil || !h.HasBlocks() {
		return err
	}
	p, err := svc.Post(ctx, post)
	if err != nil {
		return err
	}
	if h.Blocked(p.AuthorID) {
		return feed.Errorf(feed.ENOTFOUND, "post %d does not exist", post)
	}
	return nil
}

// maxLikerRounds bounds how often a likers page reads on past likers
// hidden from the viewer by a block.
const maxLikerRounds = 4

func handlePostLikers(svc Service, lk Likes) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathPostID(r)
		if err != nil {
			return err
		}
		// pageQuery's checks, with a cursor of another shape.
		q, err := query(r)
		if err != nil {
			return err
		}
		limit, err := pageLimit(q)
		if err != nil {
			return err
		}
		cursor, err := param(q, "cursor")
		if err != nil {
			return err
		}
		version, user, err := feed.DecodeLikerCursor(cursor)
		if err != nil {
			return err
		}
		hidden, err := hiddenFor(r.Context(), svc)
		if err != nil {
			return err
		}
		// A post of a user on the other side of a block does not exist
		// for the viewer; nor do the likes of such users.
		if hidden.HasBlocks() {
			if err := likeable(r.Context(), svc, id); err != nil {
				return err
			}
		}
		page := pageJSON[userJSON]{Items: make([]userJSON, 0, limit)}
		var last feed.Liker
		more := false
		for round := 0; round < maxLikerRounds && len(page.Items) < limit; round++ {
			var likers []feed.Liker
			likers, more, err = lk.PostLikers(r.Context(), id, version, user, limit-len(page.Items))
			if err != nil {
				return err
			}
			for _, l := range likers {
				if !hidden.Blocked(l.User.ID) {
					page.Items = append(page.Items, toUserJSON(l.User))
				}
				last = l
			}
			if !more || len(likers) == 0 {
				break
			}
			version, user = last.Version, last.User.ID
		}
		if more && last.User.ID != 0 {
			c := feed.EncodeLikerCursor(last.Version, last.User.ID)
			page.NextCursor = &c
		}
		encode(w, http.StatusOK, page)
		return nil
	})
}

func handleUserLikes(svc Service, lk Likes) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		before, limit, err := pageQuery(r, feed.CursorLikes)
		if err != nil {
			return err
		}
		hidden, err := hiddenFor(r.Context(), svc)
		if err != nil {
			return err
		}
		if hidden.Blocked(id) {
			return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", id)
		}
		// Posts of users on the other side of a block are left out; the
		// page reads on past them, a few rounds at most.
		posts := make([]feed.Post, 0, limit)
		var last int64
		more := false
		for round := 0; round < maxLikerRounds && len(posts) < limit; round++ {
			var liked []feed.LikedPost
			liked, more, err = lk.UserLikes(r.Context(), id, before, limit-len(posts))
			if err != nil {
				return err
			}
			for _, l := range liked {
				if l.Post.ID != 0 && !hidden.Blocked(l.Post.AuthorID) {
					posts = append(posts, l.Post)
				}
				last = l.Version
			}
			if !more || len(liked) == 0 || hidden.Empty() {
				break
			}
			before = last
		}
		page, _, err := showPosts(r.Context(), lk, viewerFrom(r.Context()), feed.Page{Posts: posts})
		if err != nil {
			return err
		}
		// The cursor names the last like, even one of a post deleted since.
		if more && last != 0 {
			c := feed.EncodeCursor(feed.CursorLikes, last)
			page.NextCursor = &c
		}
		encode(w, http.StatusOK, page)
		return nil
	})
}

// Top posts' window: a Go duration such as 24h or 90m, or days as 7d.
const defaultTopWindow = 24 * time.Hour

func parseWindow(s string) (time.Duration, error) {
	bad := feed.Errorf(feed.EINVALID, "window must be a duration like 24h, 90m or 7d")
	if s == "" {
		return defaultTopWindow, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 1 || strings.Trim(days, "0123456789") != "" {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, bad
	}
	return d, nil
}

func handleTopPosts(svc Service, lk Likes) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		q, err := query(r)
		if err != nil {
			return err
		}
		window, err := param(q, "window")
		if err != nil {
			return err
		}
		period, err := parseWindow(window)
		if err != nil {
			return err
		}
		if q.Has("cursor") {
			return feed.Errorf(feed.EINVALID, "the top posts are one page: no cursor")
		}
		limit, err := pageLimit(q)
		if err != nil {
			return err
		}
		posts, err := lk.TopPosts(r.Context(), period, limit)
		if err != nil {
			return err
		}
		hidden, err := hiddenFor(r.Context(), svc)
		if err != nil {
			return err
		}
		posts = withoutBlocked(hidden, posts)
		page, _, err := showPosts(r.Context(), lk, viewerFrom(r.Context()), feed.Page{Posts: posts})
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, page)
		return nil
	})
}
