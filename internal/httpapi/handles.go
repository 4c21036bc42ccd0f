package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
)

// Handles and finding people: a user's profile changes, the user of a
// handle, the search, and how the token's user stands to another.

// optionalHandle is a handle in a change: left out (set false), null (to
// remove it) or a handle.
type optionalHandle struct {
	set   bool
	value string // "" for null
}

func (h *optionalHandle) UnmarshalJSON(b []byte) error {
	h.set = true
	if string(b) == "null" {
		h.value = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return feed.Errorf(feed.EINVALID, "handle must be a string, or null to remove it")
	}
	if _, err := feed.CheckHandle(s); err != nil {
		return err
	}
	h.value = s
	return nil
}

type editUserRequest struct {
	Name   *string        `json:"name"`
	Handle optionalHandle `json:"handle"`
}

func (req editUserRequest) valid() error {
	e := req.edit()
	return e.Check()
}

func (req editUserRequest) edit() feed.UserEdit {
	e := feed.UserEdit{Name: req.Name}
	if req.Handle.set {
		e.Handle = &req.Handle.value
	}
	return e
}

// handleUserEdit is the admin's PATCH /v1/users/{id}.
func handleUserEdit(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		return editUser(w, r, svc, id)
	})
}

// handleMeEdit is the user's own PATCH /v1/me.
func handleMeEdit(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		return editUser(w, r, svc, me)
	})
}

func editUser(w http.ResponseWriter, r *http.Request, svc Timeline, id int64) error {
	req, err := decode[editUserRequest](r)
	if err != nil {
		return err
	}
	u, err := svc.UpdateUser(r.Context(), id, req.edit())
	if err != nil {
		return err
	}
	encode(w, http.StatusOK, apijson.NewUser(u))
	return nil
}

func handleUserByHandle(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		u, err := svc.UserByHandle(r.Context(), viewerFrom(r.Context()), r.PathValue("handle"))
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, apijson.NewUser(u))
		return nil
	})
}

func handleUserSearch(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		limit, text, err := limitAnd(r, "q")
		if err != nil {
			return err
		}
		users, err := svc.SearchUsers(r.Context(), viewerFrom(r.Context()), text, limit)
		if err != nil {
			return err
		}
		items := make([]apijson.User, len(users))
		for i, u := range users {
			items[i] = apijson.NewUser(u)
		}
		// The whole answer, not a page: no cursor.
		encode(w, http.StatusOK, struct {
			Items []apijson.User `json:"items"`
		}{items})
		return nil
	})
}

func handleRelationship(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		rel, err := svc.Relationship(r.Context(), me, id)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, apijson.NewRelationship(rel))
		return nil
	})
}
