package httpapi

import (
	"context"
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/pages"
)

// Lists: a user's own sets of users, read as feeds of their own. Every
// route acts as the list's owner: another user's list answers 404, as one
// that does not exist.

type createListRequest struct {
	Name      string `json:"name"`
	Replies   string `json:"replies"`
	Exclusive bool   `json:"exclusive"`
}

func (req createListRequest) valid() error {
	if err := feed.CheckListName(req.Name); err != nil {
		return err
	}
	if req.Replies != "" {
		return feed.CheckListReplies(req.Replies)
	}
	return nil
}

func handleListCreate(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		req, err := decode[createListRequest](r)
		if err != nil {
			return err
		}
		l, err := svc.CreateList(r.Context(), me, req.Name, req.Replies, req.Exclusive)
		if err != nil {
			return err
		}
		w.Header().Set("Location", "/v1/lists/"+feed.FormatID(l.ID))
		encode(w, http.StatusCreated, apijson.NewList(l))
		return nil
	})
}

func handleLists(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		ls, err := svc.Lists(r.Context(), me)
		if err != nil {
			return err
		}
		items := make([]apijson.List, len(ls))
		for i, l := range ls {
			items[i] = apijson.NewList(l)
		}
		encode(w, http.StatusOK, struct {
			Items []apijson.List `json:"items"`
		}{items})
		return nil
	})
}

func handleListGet(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		l, err := svc.List(r.Context(), me, id)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, apijson.NewList(l))
		return nil
	})
}

// editListRequest is a PATCH of a list: the fields sent replace the
// list's.
type editListRequest struct {
	Name      *string `json:"name"`
	Replies   *string `json:"replies"`
	Exclusive *bool   `json:"exclusive"`
}

func (req editListRequest) valid() error {
	if req.Name == nil && req.Replies == nil && req.Exclusive == nil {
		return feed.Errorf(feed.EINVALID, "send the name, replies, exclusive or any of them to change a list")
	}
	if req.Name != nil {
		if err := feed.CheckListName(*req.Name); err != nil {
			return err
		}
	}
	if req.Replies != nil {
		return feed.CheckListReplies(*req.Replies)
	}
	return nil
}

func handleListEdit(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		req, err := decode[editListRequest](r)
		if err != nil {
			return err
		}
		l, err := svc.UpdateList(r.Context(), me, id, feed.ListEdit{Name: req.Name, Replies: req.Replies, Exclusive: req.Exclusive})
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, apijson.NewList(l))
		return nil
	})
}

func handleListDelete(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		if err := svc.DeleteList(r.Context(), me, id); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

// handleListMember adds (add) or removes a member, idempotently.
func handleListMember(svc Timeline, add bool) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		member, err := feed.ParseID(r.PathValue("user_id"))
		if err != nil {
			return err
		}
		change := svc.RemoveListMember
		if add {
			change = svc.AddListMember
		}
		if err := change(r.Context(), me, id, member); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

func handleListMembers(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		return writeUserPage(w, r, svc, func(svc Timeline, ctx context.Context, owner, after int64, n int) ([]feed.User, bool, error) {
			return svc.ListMembers(ctx, owner, id, after, n)
		}, me)
	})
}

// handleListFeed serves a list's feed in the order ?order= asks, as
// handleFeed serves the home feed.
func handleListFeed(pg *pages.Service) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		ranked, err := rankedOrder(r)
		if err != nil {
			return err
		}
		kind, read := feed.CursorFeed, pg.ListFeed
		if ranked {
			kind, read = feed.CursorRanked, pg.RankedListFeed
		}
		pos, limit, err := pageQuery(r, kind)
		if err != nil {
			return err
		}
		page, err := read(r.Context(), me, id, pos, limit)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, renderPosts(r.Context(), page, kind))
		return nil
	})
}
