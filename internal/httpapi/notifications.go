package httpapi

import (
	"context"
	"net/http"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
)

// noticeGroupJSON is a group of notifications (docs/notifications.md).
type noticeGroupJSON struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Post is absent for follows.
	Post       *apijson.Post  `json:"post,omitempty"`
	Actors     []apijson.User `json:"actors"`
	ActorCount int64          `json:"actor_count"`
	LatestAt   string         `json:"latest_at"`
}

func renderNotifications(pg feed.NoticePage) apijson.Page[noticeGroupJSON] {
	out := apijson.Page[noticeGroupJSON]{Items: make([]noticeGroupJSON, 0, len(pg.Groups))}
	for _, g := range pg.Groups {
		j := noticeGroupJSON{ID: feed.FormatID(g.ID), Type: string(g.Kind), ActorCount: g.ActorCount,
			LatestAt: apijson.Time(g.LatestAt), Actors: make([]apijson.User, 0, len(g.Actors))}
		if p, ok := pg.Posts[g.Post]; ok {
			post := apijson.NewPostLikes(p, pg.States)
			j.Post = &post
		}
		for _, id := range g.Actors {
			j.Actors = append(j.Actors, apijson.NewUser(pg.Users[id]))
		}
		out.Items = append(out.Items, j)
	}
	if pg.Next != 0 {
		c := feed.EncodeCursor(feed.CursorNotices, pg.Next)
		out.NextCursor = &c
	}
	return out
}

// handleNotifications serves GET /v1/me/notifications?cursor=&limit=&types=.
func handleNotifications(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		pos, limit, err := pageQuery(r, feed.CursorNotices)
		if err != nil {
			return err
		}
		q, err := query(r)
		if err != nil {
			return err
		}
		types, err := param(q, "types")
		if err != nil {
			return err
		}
		kinds, err := feed.ParseNoticeKinds(types)
		if err != nil {
			return err
		}
		pg, err := svc.Notifications(r.Context(), me, pos, kinds, limit)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, renderNotifications(pg))
		return nil
	})
}

func handleNotificationsMarkerGet(svc Timeline) http.Handler {
	return markerGet(func(ctx context.Context, me int64) (feed.Marker, error) { return svc.NotificationsMarker(ctx, me) })
}

// handleNotificationsMarkerPut moves the marker forward only, as the home
// marker's PUT does.
func handleNotificationsMarkerPut(svc Timeline) http.Handler {
	return markerPut(func(ctx context.Context, me, lastRead int64) (feed.Marker, error) {
		return svc.SetNotificationsMarker(ctx, me, lastRead)
	})
}
