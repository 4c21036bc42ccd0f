package httpapi

import (
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
)

// deletionJSON answers a deletion: the user is gone for the API, their
// data goes in the background (GET /v1/admin/jobs/{id} follows it).
type deletionJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// Job is the id of the purge job, for GET /v1/admin/jobs/{id}.
	Job string `json:"job"`
}

// jobJSON is a purge job. Its id is the deleted user's.
type jobJSON struct {
	ID          string           `json:"id"`
	Kind        string           `json:"kind"`
	UserID      string           `json:"user_id"`
	Status      string           `json:"status"`
	RequestedAt string           `json:"requested_at"`
	FinishedAt  string           `json:"finished_at,omitempty"`
	Removed     purgeRemovedJSON `json:"removed"`
}

type purgeRemovedJSON struct {
	Following int64 `json:"following"`
	Followers int64 `json:"followers"`
	Likes     int64 `json:"likes"`
	Posts     int64 `json:"posts"`
}

func toJobJSON(p feed.Purge) jobJSON {
	j := jobJSON{
		ID: feed.FormatID(p.User), Kind: "user_purge", UserID: feed.FormatID(p.User),
		Status: p.Status(), RequestedAt: apijson.Time(p.RequestedAt),
		Removed: purgeRemovedJSON{Following: p.Following, Followers: p.Followers, Likes: p.Likes, Posts: p.Posts},
	}
	if p.Done() {
		j.FinishedAt = apijson.Time(p.FinishedAt)
	}
	return j
}

// handleUserDelete deletes the user of the path (admin).
func handleUserDelete(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		return deleteUser(w, r, svc, id)
	})
}

// handleMeDelete deletes the caller's own account.
func handleMeDelete(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		return deleteUser(w, r, svc, me)
	})
}

func deleteUser(w http.ResponseWriter, r *http.Request, svc Timeline, id int64) error {
	if _, err := svc.DeleteUser(r.Context(), id); err != nil {
		return err
	}
	encode(w, http.StatusAccepted, deletionJSON{ID: feed.FormatID(id), Status: "deleting", Job: feed.FormatID(id)})
	return nil
}

// handleJobGet shows a background job: the purge of a deleted user, by
// the user's id.
func handleJobGet(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		p, err := svc.Purge(r.Context(), id)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, toJobJSON(p))
		return nil
	})
}

// purgeStateJSON is, in the 404 of a deleted user, how far their purge is.
type purgeStateJSON struct {
	Status string `json:"status"`
	Job    string `json:"job"`
}

// userError is err for user id; for a user not found whose deletion was
// asked, it carries how far the purge is, for the 404's body.
func userError(r *http.Request, svc Timeline, id int64, err error) error {
	if feed.ErrorCode(err) != feed.ENOTFOUND {
		return err
	}
	p, perr := svc.Purge(r.Context(), id)
	if perr != nil {
		return err
	}
	return purgeError{error: err, status: p.Status(), job: feed.FormatID(id)}
}

// purgeError is the not-found error of a deleted user.
type purgeError struct {
	error
	status, job string
}

func (e purgeError) Unwrap() error { return e.error }
