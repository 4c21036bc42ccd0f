package httpapi

import (
	"net/http"
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
func handleRepost(svc Timeline, reposted bool) http.Handler {
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
		// The count alone (not the likes, which switch L1 may drop).
		counts, err := svc.Counts(r.Context(), []int64{original})
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, repostJSON{RepostCount: counts[original].Reposts, RepostedByMe: reposted})
		return nil
	})
}
