package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// timeFormat is the domain's: RFC 3339, UTC, milliseconds.
const timeFormat = feed.TimeFormat

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
	ID       string `json:"id"`
	AuthorID string `json:"author_id"`
	Content  string `json:"content"`
	// Data is the post's data as stored (compact JSON), absent if none:
	// appendJSON writes it byte for byte.
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt string          `json:"created_at"`
	// EditedAt is absent on a post never edited.
	EditedAt string `json:"edited_at,omitempty"`
	// ExternalID is absent on a post created without one.
	ExternalID string `json:"external_id,omitempty"`
	// Every post a client sees carries its likes (likes.go), unless
	// degradation switch L1 dropped that enrichment: then both are absent
	// rather than a misleading 0 and false.
	LikeCount *int64 `json:"like_count,omitempty"`
	LikedByMe *bool  `json:"liked_by_me,omitempty"`
}

func toPostJSON(p feed.Post) postJSON {
	j := postJSON{
		ID:        feed.FormatID(p.ID),
		AuthorID:  feed.FormatID(p.AuthorID),
		Content:   p.Content,
		CreatedAt: formatTime(p.CreatedAt),
	}
	if p.Data != "" {
		j.Data = json.RawMessage(p.Data)
	}
	if !p.EditedAt.IsZero() {
		j.EditedAt = formatTime(p.EditedAt)
	}
	j.ExternalID = p.ExternalID
	return j
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
// returns pg as a page ready to encode, each post with its like count and
// whether viewer (0: nobody) likes it, or neither while the likes service
// drops that enrichment (degradation switch L1). The cursor and the
// degraded mark are pg's, as the service decided them; likesDegraded says
// the likes were answered from the cache alone.
func showPosts(ctx context.Context, lk Likes, viewer int64, pg feed.Page) (page postsPageJSON, likesDegraded bool, err error) {
	states, likesDegraded, err := lk.LikeStates(ctx, viewer, pg.Posts)
	if err != nil {
		return postsPageJSON{}, false, err
	}
	page = postPageLikes(pg.Posts, false, states)
	if pg.More() {
		c := feed.EncodeCursor(feed.CursorFeed, pg.Next)
		page.NextCursor = &c
	}
	page.Degraded = pg.Degraded
	return page, likesDegraded, nil
}

// postData is a post's data in a request body, checked and compacted
// (feed.CheckData) as it is decoded. set tells a field sent as null from
// one left out: null is no data on a new post, and removes it in an edit.
type postData struct {
	set  bool
	json string // compact; "" for null
}

func (d *postData) UnmarshalJSON(b []byte) error {
	d.set = true
	if string(b) == "null" {
		d.json = ""
		return nil
	}
	var err error
	d.json, err = feed.CheckData(b)
	return err
}

type createPostRequest struct {
	Content string   `json:"content"`
	Data    postData `json:"data"`
	// ExternalID is the application's id for the post; null or left out
	// for none.
	ExternalID *string `json:"external_id"`
}

func (req createPostRequest) valid() error {
	if err := feed.CheckContent(req.Content); err != nil {
		return err
	}
	if req.ExternalID != nil {
		if *req.ExternalID == "" {
			return feed.Errorf(feed.EINVALID, "external_id must not be empty: leave it out or send null for none")
		}
		return feed.CheckExternalID(*req.ExternalID)
	}
	return nil
}

// draft is the request as the post will store it: its content and its
// data compacted. It is what identifies a create request, so an
// idempotency key's fingerprint is taken of it rather than of the body's
// bytes, which may differ in spacing or key order of the envelope.
func (req createPostRequest) draft() feed.Draft {
	d := feed.Draft{Content: req.Content, Data: req.Data.json}
	if req.ExternalID != nil {
		d.ExternalID = *req.ExternalID
	}
	return d
}

// fingerprint is the idempotency fingerprint of the draft: its content and
// its data as JSON, made canonical, so data with other spacing, key order
// or escapes is the same request, and data null is the same as none.
// postData's fields are unexported, so the request itself would marshal
// without its data. A request without an external id has the fingerprint
// it had before external ids existed, so that keys recorded then still
// match their repeats.
func (req createPostRequest) fingerprint() ([]byte, error) {
	d := req.draft()
	return fingerprint(struct {
		Content    string          `json:"content"`
		Data       json.RawMessage `json:"data,omitempty"`
		ExternalID string          `json:"external_id,omitempty"`
	}{d.Content, json.RawMessage(d.Data), d.ExternalID})
}

func handlePostCreate(svc Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		key, err := idempotencyKey(r)
		if err != nil {
			return err
		}
		req, err := decode[createPostRequest](r)
		if err != nil {
			return err
		}
		idem := feed.Idempotency{Key: key}
		if key != "" {
			if idem.Fingerprint, err = req.fingerprint(); err != nil {
				return err
			}
		}
		p, err := svc.Publish(r.Context(), me, req.draft(), idem)
		if err != nil {
			return err
		}
		w.Header().Set("Location", "/v1/posts/"+feed.FormatID(p.ID))
		encode(w, http.StatusCreated, toPostJSONLikes(p, noLikesYet))
		return nil
	})
}

// editPostRequest is a PATCH of a post: the fields sent replace the
// post's; data null removes its data.
type editPostRequest struct {
	Content *string  `json:"content"`
	Data    postData `json:"data"`
}

func (req editPostRequest) valid() error {
	if req.Content == nil && !req.Data.set {
		return feed.Errorf(feed.EINVALID, "send the content, the data or both to edit a post")
	}
	if req.Content != nil {
		return feed.CheckContent(*req.Content)
	}
	return nil
}

func (req editPostRequest) edit() feed.PostEdit {
	return feed.PostEdit{Content: req.Content, SetData: req.Data.set, Data: req.Data.json}
}

// handlePostEdit edits a post (the timeline tells the live streams, so that
// those that sent the post send it again as edited).
func handlePostEdit(svc Service, lk Likes) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndPostID(r)
		if err != nil {
			return err
		}
		req, err := decode[editPostRequest](r)
		if err != nil {
			return err
		}
		p, err := svc.EditPost(r.Context(), me, id, req.edit())
		if err != nil {
			return err
		}
		page, _, err := showPosts(r.Context(), lk, me, feed.Page{Posts: []feed.Post{p}})
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, page.Items[0])
		return nil
	})
}

func handlePostGet(svc Service, lk Likes) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathPostID(r)
		if err != nil {
			return err
		}
		p, err := svc.Post(r.Context(), id)
		if err == nil && p.Deleted {
			err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
		}
		if err == nil && notBlocked(r.Context(), svc, p.AuthorID) != nil {
			err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
		}
		if err != nil {
			return err
		}
		page, _, err := showPosts(r.Context(), lk, viewerFrom(r.Context()), feed.Page{Posts: []feed.Post{p}})
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, page.Items[0])
		return nil
	})
}

func handlePostDelete(svc Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndPostID(r)
		if err != nil {
			return err
		}
		if err := svc.DeletePost(r.Context(), me, id); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

func handleAuthorPosts(svc Service, lk Likes) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		before, limit, err := pageQuery(r, feed.CursorFeed)
		if err != nil {
			return err
		}
		if err := notBlocked(r.Context(), svc, id); err != nil {
			return err
		}
		posts, more, err := svc.AuthorPosts(r.Context(), id, before, limit)
		if err != nil {
			return err
		}
		page, _, err := showPosts(r.Context(), lk, viewerFrom(r.Context()), feed.PageOf(posts, more))
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, page)
		return nil
	})
}

func handleFeed(svc Service, lk Likes) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		before, limit, err := pageQuery(r, feed.CursorFeed)
		if err != nil {
			return err
		}
		pg, err := svc.Feed(r.Context(), me, before, limit)
		if err != nil {
			return err
		}
		page, likesDegraded, err := showPosts(r.Context(), lk, me, pg)
		if err != nil {
			return err
		}
		// A home feed page is degraded when its posts or their likes came
		// from the cache alone; other pages do not say.
		page.Degraded = page.Degraded || likesDegraded
		encode(w, http.StatusOK, page)
		return nil
	})
}
