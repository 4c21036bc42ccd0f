package client

import (
	"bytes"
	"context"
	"iter"
	"net/http"
)

// List is one of the token's user's lists: a set of users read as a feed
// of its own (ListFeed). Only its owner sees it.
type List struct {
	ID   ID     `json:"id"`
	Name string `json:"name"`
	// Replies is which of a member's replies the list will show once
	// feedd has replies: "followed" (the default), "list" or "none".
	Replies string `json:"replies"`
	// Exclusive takes the members' posts out of the owner's home feed.
	Exclusive   bool  `json:"exclusive"`
	MemberCount int64 `json:"member_count"`
}

// CreateListParams is a new list. At most 100 lists a user: past that the
// error's Code is CodeLimitReached.
type CreateListParams struct {
	Name      string `json:"name"`
	Replies   string `json:"replies,omitempty"` // "": "followed"
	Exclusive bool   `json:"exclusive,omitempty"`
}

// EditListParams changes a list: the fields set replace the list's.
type EditListParams struct {
	Name      *string `json:"name,omitempty"`
	Replies   *string `json:"replies,omitempty"`
	Exclusive *bool   `json:"exclusive,omitempty"`
}

// CreateList makes a list of the token's user's. POST /v1/lists.
func (c *Client) CreateList(ctx context.Context, p CreateListParams) (List, error) {
	var l List
	err := c.call(ctx, request{method: http.MethodPost, path: "/v1/lists", body: p, want: http.StatusCreated, out: &l})
	return l, err
}

// Lists returns every list of the token's user's, oldest first. GET
// /v1/lists.
func (c *Client) Lists(ctx context.Context) ([]List, error) {
	var out struct {
		Items []List `json:"items"`
	}
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/lists", want: http.StatusOK, out: &out})
	return out.Items, err
}

// GetList returns one of the token's user's lists; another user's is
// CodeNotFound. GET /v1/lists/{id}.
func (c *Client) GetList(ctx context.Context, list ID) (List, error) {
	var l List
	err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/lists/", list), want: http.StatusOK, out: &l})
	return l, err
}

// EditList changes a list and returns it. PATCH /v1/lists/{id}.
func (c *Client) EditList(ctx context.Context, list ID, p EditListParams) (List, error) {
	var l List
	err := c.call(ctx, request{method: http.MethodPatch, path: pathf("/v1/lists/", list), body: p, want: http.StatusOK, out: &l})
	return l, err
}

// DeleteList deletes a list. DELETE /v1/lists/{id}.
func (c *Client) DeleteList(ctx context.Context, list ID) error {
	return c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/lists/", list), want: http.StatusNoContent})
}

// AddListMember adds a user to a list, idempotently: a block between the
// two either way is CodeBlocked, a list of 5,000 members CodeLimitReached.
// PUT /v1/lists/{id}/members/{user_id}.
func (c *Client) AddListMember(ctx context.Context, list, user ID) error {
	return c.call(ctx, request{method: http.MethodPut, path: pathf("/v1/lists/", list, "/members/", user), want: http.StatusNoContent})
}

// RemoveListMember takes a user out of a list, idempotently. DELETE
// /v1/lists/{id}/members/{user_id}.
func (c *Client) RemoveListMember(ctx context.Context, list, user ID) error {
	return c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/lists/", list, "/members/", user), want: http.StatusNoContent})
}

// ListMembersPage reads a page of a list's members by ascending id. GET
// /v1/lists/{id}/members.
func (c *Client) ListMembersPage(ctx context.Context, list ID, p PageParams) (Page[User], error) {
	return getPage[User](ctx, c, pathf("/v1/lists/", list, "/members"), p)
}

// ListMembers iterates over all of a list's members.
func (c *Client) ListMembers(ctx context.Context, list ID, p PageParams) iter.Seq2[User, error] {
	return all[User](ctx, c, pathf("/v1/lists/", list, "/members"), p)
}

// ListFeedPage reads a page of a list's feed: its members' posts, newest
// first. GET /v1/lists/{id}/feed.
func (c *Client) ListFeedPage(ctx context.Context, list ID, p PageParams) (Page[Post], error) {
	return getPage[Post](ctx, c, pathf("/v1/lists/", list, "/feed"), p)
}

// ListFeedPageRaw is ListFeedPage into buf, undecoded (FeedPageRaw).
func (c *Client) ListFeedPageRaw(ctx context.Context, list ID, p PageParams, buf *bytes.Buffer) error {
	return c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/lists/", list, "/feed"), query: p.query(), want: http.StatusOK, into: buf})
}

// ListFeed iterates over a whole list's feed, newest first.
func (c *Client) ListFeed(ctx context.Context, list ID, p PageParams) iter.Seq2[Post, error] {
	return all[Post](ctx, c, pathf("/v1/lists/", list, "/feed"), p)
}

// ListMarker returns a list's read marker with its unread count, as
// HomeMarker does for the home feed. GET /v1/lists/{id}/marker.
func (c *Client) ListMarker(ctx context.Context, list ID) (Marker, error) {
	var m Marker
	err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/lists/", list, "/marker"), want: http.StatusOK, out: &m})
	return m, err
}

// SetListMarker moves a list's read marker forward to post. PUT
// /v1/lists/{id}/marker.
func (c *Client) SetListMarker(ctx context.Context, list, post ID) (Marker, error) {
	var m Marker
	err := c.call(ctx, request{method: http.MethodPut, path: pathf("/v1/lists/", list, "/marker"),
		body: map[string]ID{"last_read_id": post}, want: http.StatusOK, out: &m})
	return m, err
}

// RankedListFeedPage reads a page of a list's feed ranked, as
// RankedFeedPage does the home feed (CodeCursorExpired: read the first
// page again). GET /v1/lists/{id}/feed?order=ranked.
func (c *Client) RankedListFeedPage(ctx context.Context, list ID, p PageParams) (Page[Post], error) {
	p.order = "ranked"
	return getPage[Post](ctx, c, pathf("/v1/lists/", list, "/feed"), p)
}
