package httpapi

import (
	"context"
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
)

// markerJSON is a read marker; a reader who never set one gets nulls.
type markerJSON struct {
	LastReadID   *string `json:"last_read_id"`
	UnreadCount  int     `json:"unread_count"`
	UnreadCapped bool    `json:"unread_capped"`
	UpdatedAt    *string `json:"updated_at"`
}

func toMarkerJSON(m feed.Marker) markerJSON {
	out := markerJSON{UnreadCount: m.Unread, UnreadCapped: m.UnreadCapped}
	if m.LastReadID != 0 {
		id, at := feed.FormatID(m.LastReadID), apijson.Time(m.UpdatedAt)
		out.LastReadID, out.UpdatedAt = &id, &at
	}
	return out
}

type setMarkerRequest struct {
	LastReadID jsonPostID `json:"last_read_id"`
}

func (req setMarkerRequest) valid() error {
	if req.LastReadID == 0 {
		return feed.Errorf(feed.EINVALID, "last_read_id is required: the id of the newest post read")
	}
	return nil
}

func handleMarkerGet(svc Timeline) http.Handler {
	return markerGet(func(ctx context.Context, me int64) (feed.Marker, error) { return svc.Marker(ctx, me) })
}

// markerGet and markerPut are the handlers of a marker of the acting
// user read with get and moved with set (the home feed's, the
// notifications').
func markerGet(get func(ctx context.Context, me int64) (feed.Marker, error)) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		m, err := get(r.Context(), me)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, toMarkerJSON(m))
		return nil
	})
}

func markerPut(set func(ctx context.Context, me, lastRead int64) (feed.Marker, error)) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		req, err := decode[setMarkerRequest](r)
		if err != nil {
			return err
		}
		m, err := set(r.Context(), me, int64(req.LastReadID))
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, toMarkerJSON(m))
		return nil
	})
}

// handleListMarkerGet and handleListMarkerPut are a list's marker, as the
// home feed's.
func handleListMarkerGet(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		m, err := svc.ListMarker(r.Context(), me, id)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, toMarkerJSON(m))
		return nil
	})
}

func handleListMarkerPut(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		req, err := decode[setMarkerRequest](r)
		if err != nil {
			return err
		}
		m, err := svc.SetListMarker(r.Context(), me, id, int64(req.LastReadID))
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, toMarkerJSON(m))
		return nil
	})
}

// handleMarkerPut moves the marker forward only: an older position, from
// a device that fell behind, answers the current state and changes nothing.
func handleMarkerPut(svc Timeline) http.Handler {
	return markerPut(func(ctx context.Context, me, lastRead int64) (feed.Marker, error) {
		return svc.SetMarker(ctx, me, lastRead)
	})
}
