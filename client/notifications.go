package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Notification types (NotificationGroup.Type).
const (
	NotificationFollow = "follow"
	NotificationLike   = "like"
	NotificationRepost = "repost"
	NotificationReply  = "reply"
)

// NotificationGroup is a group of notifications: the likes of one post,
// the reposts of one post, the follows of the user (within 12 hours of
// the group's first), or one reply.
type NotificationGroup struct {
	// ID is the group's newest notification's id: time-ordered, and a
	// position for SetNotificationsMarker.
	ID   ID     `json:"id"`
	Type string `json:"type"`
	// Post is the post liked or reposted, or the reply; nil for follows.
	Post *Post `json:"post,omitempty"`
	// Actors are the 3 newest actors, newest first; ActorCount counts
	// them all, exactly.
	Actors     []User    `json:"actors"`
	ActorCount int64     `json:"actor_count"`
	LatestAt   time.Time `json:"latest_at"`
}

// NotificationParams pages the notifications; Types keeps only those
// types (none: all).
type NotificationParams struct {
	Cursor string
	Limit  int
	Types  []string
}

// Notifications reads a page of the token's user's notifications, newest
// group first. GET /v1/me/notifications.
func (c *Client) Notifications(ctx context.Context, p NotificationParams) (Page[NotificationGroup], error) {
	q := PageParams{Cursor: p.Cursor, Limit: p.Limit}.query()
	if len(p.Types) > 0 {
		if q != "" {
			q += "&"
		}
		q += "types=" + url.QueryEscape(strings.Join(p.Types, ","))
	}
	var page Page[NotificationGroup]
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/me/notifications", query: q, want: http.StatusOK, out: &page})
	return page, err
}

// NotificationsMarker returns the read position in the notifications and
// the number of groups newer than it. GET /v1/me/markers/notifications.
func (c *Client) NotificationsMarker(ctx context.Context) (Marker, error) {
	var m Marker
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/me/markers/notifications", want: http.StatusOK, out: &m})
	return m, err
}

// SetNotificationsMarker moves the read position forward to a group's id;
// an older one leaves it where it is. PUT /v1/me/markers/notifications.
func (c *Client) SetNotificationsMarker(ctx context.Context, group ID) (Marker, error) {
	var m Marker
	err := c.call(ctx, request{method: http.MethodPut, path: "/v1/me/markers/notifications",
		body: map[string]ID{"last_read_id": group}, want: http.StatusOK, out: &m})
	return m, err
}
