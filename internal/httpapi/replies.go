package httpapi

import (
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/pages"
)

// handleReplies serves a page of a post's direct replies, oldest first
// (docs/replies.md).
func handleReplies(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathPostID(r)
		if err != nil {
			return err
		}
		after, limit, err := pageQuery(r, feed.CursorReplies)
		if err != nil {
			return err
		}
		page, err := pg.Replies(r.Context(), viewerFrom(r.Context()), id, after, limit)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, renderPosts(r.Context(), page, feed.CursorReplies))
		return nil
	})
}

// threadResponse is a post's context.
type threadResponse struct {
	Ancestors   []apijson.Post `json:"ancestors"`
	Descendants []apijson.Post `json:"descendants"`
}

// handleThread serves a post's context: its ancestors from the root down
// and its descendants in thread order.
func handleThread(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathPostID(r)
		if err != nil {
			return err
		}
		up, down, err := pg.Thread(r.Context(), viewerFrom(r.Context()), id)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, threadResponse{
			Ancestors:   renderPosts(r.Context(), up, feed.CursorFeed).Items,
			Descendants: renderPosts(r.Context(), down, feed.CursorFeed).Items,
		})
		return nil
	})
}
