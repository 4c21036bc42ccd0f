package httpapi

import (
	"net/http"

	"github.com/feedd/feedd/internal/feed"
)

// repostJSON is the body of PUT and DELETE /v1/posts/{id}/repost.
type repostJSON struct {
	RepostCount  int64 `json:"repost_count"`
	RepostedByMe bool  `json:"reposted_by_me"`
}

// followRequest is the optional body of PUT /v1/me/following/{id}:
// Reposts nil keeps an existing follow's choice of the followee's
// reposts (a new follow shows them).
type followRequest struct {
	Reposts *bool `json:"reposts"`
}

func (followRequest) valid() error { return nil }

// handleRepost reposts (or unreposts) a post and answers the original's
// repost count, which the process that made the change holds from the
// primary at once (replies.Service.PostWritten), and the reader's state
// as just written.
func handleRepost(svc Timeline, lk Likes, reposted bool) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndPostID(r)
		if err != nil {
			return err
		}
		var original int64
		if reposted {
			original, err = svc.Repost(r.Context(), me, id)
		} else {
			original, err = svc.Unrepost(r.Context(), me, id)
		}
		if err != nil {
			return err
		}
		// The reader's own state only: a page's other fields are not asked.
		states, _, err := lk.LikeStates(r.Context(), 0, []feed.Post{{ID: original}})
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, repostJSON{RepostCount: states[original].Reposts, RepostedByMe: reposted})
		return nil
	})
}
