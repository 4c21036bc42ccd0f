package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// timeFormat is RFC 3339 in UTC with exactly three fractional digits, so
// timestamps sort as strings and never lose the millisecond ids carry.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// formatTime is t.UTC().Format(timeFormat), written out by hand: every
// post of every page passes here, and Format reads its layout anew on each
// call (a tenth of the API's CPU per feed page, BenchmarkFeedPage).
func formatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(timeFormat)
	}
	hour, minute, sec := t.Clock()
	var b [len("2006-01-02T15:04:05.000Z")]byte
	digits := func(at, v, n int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	digits(0, year, 4)
	b[4] = '-'
	digits(5, int(month), 2)
	b[7] = '-'
	digits(8, day, 2)
	b[10] = 'T'
	digits(11, hour, 2)
	b[13] = ':'
	digits(14, minute, 2)
	b[16] = ':'
	digits(17, sec, 2)
	b[19] = '.'
	digits(20, t.Nanosecond()/int(time.Millisecond), 3)
	b[23] = 'Z'
	return string(b[:])
}

type postJSON struct {
	ID        string `json:"id"`
	AuthorID  string `json:"author_id"`
	Content   string `json:"content"`
	CreatedAt string `json:"created_at"`
	// Every post a client sees carries its likes (likes.go), unless
	// degradation switch L1 dropped that enrichment: then both are absent
	// rather than a misleading 0 and false.
	LikeCount *int64 `json:"like_count,omitempty"`
	LikedByMe *bool  `json:"liked_by_me,omitempty"`
}

func toPostJSON(p feed.Post) postJSON {
	return postJSON{
		ID:        feed.FormatID(p.ID),
		AuthorID:  feed.FormatID(p.AuthorID),
		Content:   p.Content,
		CreatedAt: formatTime(p.CreatedAt),
	}
}

// toPostJSONLikes is toPostJSON with p's likes from states; a nil states
// (the service dropped enrichment, L1) leaves them out.
func toPostJSONLikes(p feed.Post, states map[int64]feed.LikeState) postJSON {
	j := toPostJSON(p)
	if states != nil {
		st := states[p.ID]
		j.LikeCount, j.LikedByMe = &st.Count, &st.LikedByMe
	}
	return j
}

// noLikesYet is the likes of a post just created: 0 and false.
var noLikesYet = map[int64]feed.LikeState{}

// postPageLikes renders a page of posts, each with its likes from states
// (nil: none). A deleted post never reaches a client, even if a cache
// handed the service a stale one.
func postPageLikes(posts []feed.Post, more bool, states map[int64]feed.LikeState) postsPageJSON {
	return postsPageJSON(newPage(posts, more, feed.CursorFeed,
		func(p feed.Post) int64 { return p.ID },
		func(p feed.Post) (postJSON, bool) { return toPostJSONLikes(p, states), !p.Deleted }))
}

// showPosts is the one place a response's posts get their likes: it
// returns posts as a page ready to encode, each with its like count and
// whether viewer (0: nobody) likes it, or neither while the likes service
// drops that enrichment (degradation switch L1). notes (nil: none) are
// those the page's service calls ran under, ctx's: a page the timeline or
// the likes answered from the cache alone is marked degraded.
func showPosts(ctx context.Context, lk Likes, viewer int64, posts []feed.Post, more bool, notes *feed.Notes) (postsPageJSON, error) {
	states, err := lk.LikeStates(ctx, viewer, posts)
	if err != nil {
		return postsPageJSON{}, err
	}
	page := postPageLikes(posts, more, states)
	page.Degraded = notes.Degraded()
	return page, nil
}

type createPostRequest struct {
	Content string `json:"content"`
}

func (req createPostRequest) valid() error { return feed.CheckContent(req.Content) }

func handlePostCreate(svc Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		me, ok := actorFrom(r.Context())
		if !ok {
			respondError(w, errNoActor)
			return
		}
		key, err := idempotencyKey(r)
		if err != nil {
			respondError(w, err)
			return
		}
		req, err := decode[createPostRequest](r)
		if err != nil {
			respondError(w, err)
			return
		}
		idem := feed.Idempotency{Key: key}
		if key != "" {
			if idem.Fingerprint, err = fingerprint(req); err != nil {
				respondError(w, err)
				return
			}
		}
		p, err := svc.Publish(r.Context(), me, req.Content, idem)
		if err != nil {
			respondError(w, err)
			return
		}
		w.Header().Set("Location", "/v1/posts/"+feed.FormatID(p.ID))
		encode(w, http.StatusCreated, toPostJSONLikes(p, noLikesYet))
	})
}

func handlePostGet(svc Service, lk Likes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r)
		if err != nil {
			respondError(w, err)
			return
		}
		p, err := svc.Post(r.Context(), id)
		if err == nil && p.Deleted {
			err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
		}
		if err != nil {
			respondError(w, err)
			return
		}
		page, err := showPosts(r.Context(), lk, viewerFrom(r.Context()), []feed.Post{p}, false, nil)
		if err != nil {
			respondError(w, err)
			return
		}
		encode(w, http.StatusOK, page.Items[0])
	})
}

func handlePostDelete(svc Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		me, ok := actorFrom(r.Context())
		if !ok {
			respondError(w, errNoActor)
			return
		}
		id, err := pathID(r)
		if err != nil {
			respondError(w, err)
			return
		}
		if err := svc.DeletePost(r.Context(), me, id); err != nil {
			respondError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func handleAuthorPosts(svc Service, lk Likes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r)
		if err != nil {
			respondError(w, err)
			return
		}
		before, limit, err := pageQuery(r, feed.CursorFeed)
		if err != nil {
			respondError(w, err)
			return
		}
		posts, more, err := svc.AuthorPosts(r.Context(), id, before, limit)
		if err != nil {
			respondError(w, err)
			return
		}
		page, err := showPosts(r.Context(), lk, viewerFrom(r.Context()), posts, more, nil)
		if err != nil {
			respondError(w, err)
			return
		}
		encode(w, http.StatusOK, page)
	})
}

func handleFeed(svc Service, lk Likes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		me, ok := actorFrom(r.Context())
		if !ok {
			respondError(w, errNoActor)
			return
		}
		before, limit, err := pageQuery(r, feed.CursorFeed)
		if err != nil {
			respondError(w, err)
			return
		}
		ctx, notes := feed.WithNotes(r.Context())
		posts, more, err := svc.Feed(ctx, me, before, limit)
		if err != nil {
			respondError(w, err)
			return
		}
		page, err := showPosts(ctx, lk, me, posts, more, notes)
		if err != nil {
			respondError(w, err)
			return
		}
		encode(w, http.StatusOK, page)
	})
}
