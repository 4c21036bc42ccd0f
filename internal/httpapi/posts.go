package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/pages"
)

// noLikesYet is the likes of a post just created: 0 and false.
var noLikesYet = map[int64]feed.LikeState{}

// renderPosts renders a page of posts with their likes (joined by package
// pages) as the API sends it to the request's principal: the cursor of kind
// names pg's Next, as the service decided it, and a post's weight shows to
// its author and the admin only.
func renderPosts(ctx context.Context, pg pages.Page, kind byte) apijson.PostsPage {
	page := apijson.NewPostsPage(pg.Posts, false, pg.States)
	if pg.More() {
		c := feed.EncodeCursor(kind, pg.Next)
		page.NextCursor = &c
	}
	page.Degraded = pg.Degraded
	p, _ := ctx.Value(principalKey{}).(principal)
	page.ShowWeights(pg.Posts, p.user, p.admin)
	return page
}

// showPosts joins posts with their likes (pages.Join) and renders them,
// for the live stream's resume; likesDegraded says the likes came from the
// cache alone.
func showPosts(ctx context.Context, lk Likes, viewer int64, pg feed.Page) (page apijson.PostsPage, likesDegraded bool, err error) {
	joined, likesDegraded, err := pages.Join(ctx, lk, viewer, pg)
	if err != nil {
		return apijson.PostsPage{}, false, err
	}
	return renderPosts(ctx, joined, feed.CursorFeed), likesDegraded, nil
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
	// Weight is the post's rank weight (0..100); null or left out for
	// the default, 1.
	Weight *float64 `json:"weight"`
	// InReplyToID is the post this one replies to; null or left out for
	// none.
	InReplyToID *jsonPostID `json:"in_reply_to_id"`
}

func (req createPostRequest) valid() error {
	if err := feed.CheckContent(req.Content); err != nil {
		return err
	}
	if req.Weight != nil {
		if err := feed.CheckWeight(*req.Weight); err != nil {
			return err
		}
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
	if req.Weight != nil {
		d.Weight = feed.WeightOf(*req.Weight)
	}
	if req.InReplyToID != nil {
		d.InReplyToID = int64(*req.InReplyToID)
	}
	return d
}

// fingerprint is the idempotency fingerprint of the draft: its content and
// its data as JSON, made canonical, so data with other spacing, key order
// or escapes is the same request, and data null is the same as none.
// postData's fields are unexported, so the request itself would marshal
// without its data. A request without an external id has the fingerprint
// it had before external ids existed, so that keys recorded then still
// match their repeats; the same for a post of the default weight.
func (req createPostRequest) fingerprint() ([]byte, error) {
	d := req.draft()
	var weight *float64
	if !d.Weight.IsDefault() {
		w := d.Weight.Value()
		weight = &w
	}
	return fingerprint(struct {
		Content    string          `json:"content"`
		Data       json.RawMessage `json:"data,omitempty"`
		ExternalID string          `json:"external_id,omitempty"`
		Weight     *float64        `json:"weight,omitempty"`
		InReplyTo  int64           `json:"in_reply_to_id,omitempty"`
	}{d.Content, json.RawMessage(d.Data), d.ExternalID, weight, d.InReplyToID})
}

func handlePostCreate(svc Timeline) http.Handler {
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
		encode(w, http.StatusCreated, apijson.NewPostLikes(p, noLikesYet).WithWeight(p))
		return nil
	})
}

// editPostRequest is a PATCH of a post: the fields sent replace the
// post's; data null removes its data.
type editPostRequest struct {
	Content *string  `json:"content"`
	Data    postData `json:"data"`
	// Weight sets the post's rank weight; left out, it stays.
	Weight *float64 `json:"weight"`
}

func (req editPostRequest) valid() error {
	if err := req.edit().Check(); err != nil {
		return err
	}
	if req.Weight != nil {
		if err := feed.CheckWeight(*req.Weight); err != nil {
			return err
		}
	}
	if req.Content != nil {
		return feed.CheckContent(*req.Content)
	}
	return nil
}

func (req editPostRequest) edit() feed.PostEdit {
	e := feed.PostEdit{Content: req.Content, SetData: req.Data.set, Data: req.Data.json}
	if req.Weight != nil {
		w := feed.WeightOf(*req.Weight)
		e.Weight = &w
	}
	return e
}

// handlePostEdit edits a post (the timeline tells the live streams, so that
// those that sent the post send it again as edited).
func handlePostEdit(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndPostID(r)
		if err != nil {
			return err
		}
		req, err := decode[editPostRequest](r)
		if err != nil {
			return err
		}
		page, err := pg.EditPost(r.Context(), me, id, req.edit())
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, renderPosts(r.Context(), page, feed.CursorFeed).Items[0])
		return nil
	})
}

func handlePostGet(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathPostID(r)
		if err != nil {
			return err
		}
		page, err := pg.Post(r.Context(), viewerFrom(r.Context()), id)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, renderPosts(r.Context(), page, feed.CursorFeed).Items[0])
		return nil
	})
}

func handlePostDelete(svc Timeline) http.Handler {
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

func handleAuthorPosts(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		before, limit, err := pageQuery(r, feed.CursorFeed)
		if err != nil {
			return err
		}
		page, err := pg.AuthorPosts(r.Context(), viewerFrom(r.Context()), id, before, limit)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, renderPosts(r.Context(), page, feed.CursorFeed))
		return nil
	})
}

// handleFeed serves the home feed in the order ?order= asks: latest (the
// default) or ranked, each with a cursor of its own kind.
func handleFeed(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		ranked, err := rankedOrder(r)
		if err != nil {
			return err
		}
		kind, read := feed.CursorFeed, pg.Feed
		if ranked {
			kind, read = feed.CursorRanked, pg.RankedFeed
		}
		pos, limit, err := pageQuery(r, kind)
		if err != nil {
			return err
		}
		page, err := read(r.Context(), me, pos, limit)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, renderPosts(r.Context(), page, kind))
		return nil
	})
}

// rankedOrder reads ?order=: latest (or none) or ranked.
func rankedOrder(r *http.Request) (bool, error) {
	q, err := query(r)
	if err != nil {
		return false, err
	}
	order, err := param(q, "order")
	if err != nil {
		return false, err
	}
	switch order {
	case "", "latest":
		return false, nil
	case "ranked":
		return true, nil
	}
	return false, feed.Errorf(feed.EINVALID, "order must be latest or ranked")
}
