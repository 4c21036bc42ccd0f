package httpapi

import (
	"context"
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/pages"
)

// Likes is what the API needs of the likes service. The lists leave out
// what a block hides from the viewer (0: the admin), and answer ENOTFOUND
// for a post or user a block stands between, as for one that does not
// exist.
type Likes interface {
	// Like and Unlike set the actor's like of a post, idempotently, and
	// return the post's count and the actor's state; ENOTFOUND for an
	// unknown or deleted post (or, for Like, one a block hides).
	Like(ctx context.Context, user, post int64) (feed.LikeState, error)
	Unlike(ctx context.Context, user, post int64) (feed.LikeState, error)
	// LikeStates returns the count of each post and whether viewer (0:
	// nobody) likes it; nil when degradation switch L1 drops that
	// enrichment (the posts then carry no likes fields). degraded says
	// SQL failed and the states are what the cache knew.
	LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (states map[int64]feed.LikeState, degraded bool, err error)
	// PostLikers pages a post's likers after the position (version, user),
	// newest first.
	PostLikers(ctx context.Context, viewer, post, version, user int64, n int) (feed.LikerPage, error)
	// UserLikes pages the posts a user likes below version before, newest
	// like first; the page's Next is a like's version.
	UserLikes(ctx context.Context, viewer, user, before int64, n int) (feed.Page, error)
	// TopPosts returns the most liked posts created within window (as
	// ?window= gives it; "" for the default); EINVALID for a bad window.
	TopPosts(ctx context.Context, viewer int64, window string, n int) ([]feed.Post, error)
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

func handleLike(lk Likes, liked bool) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndPostID(r)
		if err != nil {
			return err
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

func handlePostLikers(lk Likes) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathPostID(r)
		if err != nil {
			return err
		}
		// pageQuery's checks, with a cursor of another shape.
		limit, cursor, err := limitAnd(r, "cursor")
		if err != nil {
			return err
		}
		version, user, err := feed.DecodeLikerCursor(cursor)
		if err != nil {
			return err
		}
		pg, err := lk.PostLikers(r.Context(), viewerFrom(r.Context()), id, version, user, limit)
		if err != nil {
			return err
		}
		page := apijson.Page[apijson.User]{Items: make([]apijson.User, 0, len(pg.Likers))}
		for _, l := range pg.Likers {
			page.Items = append(page.Items, apijson.NewUser(l.User))
		}
		if pg.More() {
			c := feed.EncodeLikerCursor(pg.Next.Version, pg.Next.User.ID)
			page.NextCursor = &c
		}
		encode(w, http.StatusOK, page)
		return nil
	})
}

func handleUserLikes(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		before, limit, err := pageQuery(r, feed.CursorLikes)
		if err != nil {
			return err
		}
		page, err := pg.UserLikes(r.Context(), viewerFrom(r.Context()), id, before, limit)
		if err != nil {
			return err
		}
		// The cursor names the last like, even one of a post deleted since.
		encode(w, http.StatusOK, renderPosts(r.Context(), page, feed.CursorLikes))
		return nil
	})
}

func handleTopPosts(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		q, err := query(r)
		if err != nil {
			return err
		}
		window, err := param(q, "window")
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
		page, err := pg.TopPosts(r.Context(), viewerFrom(r.Context()), window, limit)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, renderPosts(r.Context(), page, feed.CursorFeed))
		return nil
	})
}
