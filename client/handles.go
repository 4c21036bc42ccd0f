package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// UpdateUserParams changes a user's profile: the fields set replace the
// user's. A Handle of "" removes the user's handle.
type UpdateUserParams struct {
	Name   *string
	Handle *string
}

// MarshalJSON sends a Handle of "" as null, which removes it.
func (p UpdateUserParams) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if p.Name != nil {
		m["name"] = *p.Name
	}
	if p.Handle != nil {
		if *p.Handle == "" {
			m["handle"] = nil
		} else {
			m["handle"] = *p.Handle
		}
	}
	return json.Marshal(m)
}

// UpdateUser changes a user's name or handle and returns the user
// (admin): another user's handle is CodeHandleTaken, and then nothing
// changes. PATCH /v1/users/{id}.
func (c *Client) UpdateUser(ctx context.Context, user ID, p UpdateUserParams) (User, error) {
	var u User
	err := c.call(ctx, request{method: http.MethodPatch, path: pathf("/v1/users/", user), body: p, want: http.StatusOK, out: &u})
	return u, err
}

// UpdateMe is UpdateUser for the token's own user. PATCH /v1/me.
func (c *Client) UpdateMe(ctx context.Context, p UpdateUserParams) (User, error) {
	var u User
	err := c.call(ctx, request{method: http.MethodPatch, path: "/v1/me", body: p, want: http.StatusOK, out: &u})
	return u, err
}

// UserByHandle returns the user of a handle, whatever its case; an *Error
// 404 if none. GET /v1/users/by-handle/{handle}.
func (c *Client) UserByHandle(ctx context.Context, handle string) (User, error) {
	var u User
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/users/by-handle/" + url.PathEscape(handle), want: http.StatusOK, out: &u})
	return u, err
}

// SearchUsers finds up to limit users (0: the server's default, 20) for
// q: those whose handle starts with it first, then those whose name does;
// users a block stands between are left out. GET /v1/users/search.
func (c *Client) SearchUsers(ctx context.Context, q string, limit int) ([]User, error) {
	v := url.Values{"q": {q}}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Items []User `json:"items"`
	}
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/users/search", query: v.Encode(), want: http.StatusOK, out: &out})
	return out.Items, err
}

// Relationship is how the token's user stands to another.
type Relationship struct {
	Following  bool `json:"following"`
	FollowedBy bool `json:"followed_by"`
	// Reposts is whether the token's user sees their reposts in its home
	// feed: following them, and not turned off (FollowWith).
	Reposts  bool `json:"reposts"`
	Muting   bool `json:"muting"`
	Blocking bool `json:"blocking"`
}

// Relationship says how the token's user stands to user. GET
// /v1/me/relationships/{id}.
func (c *Client) Relationship(ctx context.Context, user ID) (Relationship, error) {
	var r Relationship
	err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/me/relationships/", user), want: http.StatusOK, out: &r})
	return r, err
}
