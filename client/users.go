package client

import (
	"context"
	"iter"
	"net/http"
	"time"
)

// CreateUserParams is a new user: a name, and optionally the app's own id
// for them (0: feedd picks one) and a handle (1..30 of a-z, 0-9 and _;
// capitals are folded to lower case; one another user holds is
// CodeHandleTaken).
type CreateUserParams struct {
	Name   string `json:"name"`
	ID     ID     `json:"id,omitempty"`
	Handle string `json:"handle,omitempty"`
}

// CreateUser creates a user (admin). POST /v1/users.
func (c *Client) CreateUser(ctx context.Context, p CreateUserParams) (User, error) {
	var u User
	err := c.call(ctx, request{method: http.MethodPost, path: "/v1/users", body: p, want: http.StatusCreated, out: &u})
	return u, err
}

// CreateToken mints a token for user that lasts ttl, whole seconds (0: the
// server's default, an hour) (admin). POST /v1/users/{id}/tokens.
func (c *Client) CreateToken(ctx context.Context, user ID, ttl time.Duration) (Token, error) {
	body := map[string]int64{}
	if ttl > 0 {
		body["ttl_seconds"] = int64(max(ttl.Round(time.Second), time.Second) / time.Second)
	}
	var t Token
	err := c.call(ctx, request{method: http.MethodPost, path: pathf("/v1/users/", user, "/tokens"), body: body, want: http.StatusCreated, out: &t})
	return t, err
}

// RevokeTokens refuses every token minted for user before the call
// (admin). DELETE /v1/users/{id}/tokens.
func (c *Client) RevokeTokens(ctx context.Context, user ID) error {
	return c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/users/", user, "/tokens"), want: http.StatusNoContent})
}

// DeleteUser deletes a user and, in the background, everything of theirs
// (admin). DELETE /v1/users/{id}.
func (c *Client) DeleteUser(ctx context.Context, user ID) (Deletion, error) {
	var d Deletion
	err := c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/users/", user), want: http.StatusAccepted, out: &d})
	return d, err
}

// DeleteMe deletes the token's own account. DELETE /v1/me.
func (c *Client) DeleteMe(ctx context.Context) (Deletion, error) {
	var d Deletion
	err := c.call(ctx, request{method: http.MethodDelete, path: "/v1/me", want: http.StatusAccepted, out: &d})
	return d, err
}

// GetUser returns a user. GET /v1/users/{id}. A deleted user is an *Error
// 404 whose Purge tells how far their purge is.
func (c *Client) GetUser(ctx context.Context, user ID) (User, error) {
	var u User
	err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/users/", user), want: http.StatusOK, out: &u})
	return u, err
}

// FollowersPage returns a page of user's followers. GET
// /v1/users/{id}/followers.
func (c *Client) FollowersPage(ctx context.Context, user ID, p PageParams) (Page[User], error) {
	return getPage[User](ctx, c, pathf("/v1/users/", user, "/followers"), p)
}

// Followers iterates over all of user's followers, p.Limit a page.
func (c *Client) Followers(ctx context.Context, user ID, p PageParams) iter.Seq2[User, error] {
	return all[User](ctx, c, pathf("/v1/users/", user, "/followers"), p)
}

// FollowingPage returns a page of the users user follows. GET
// /v1/users/{id}/following.
func (c *Client) FollowingPage(ctx context.Context, user ID, p PageParams) (Page[User], error) {
	return getPage[User](ctx, c, pathf("/v1/users/", user, "/following"), p)
}

// Following iterates over all the users user follows.
func (c *Client) Following(ctx context.Context, user ID, p PageParams) iter.Seq2[User, error] {
	return all[User](ctx, c, pathf("/v1/users/", user, "/following"), p)
}

// Follow makes the token's user follow user; following twice is no error.
// PUT /v1/me/following/{id}.
func (c *Client) Follow(ctx context.Context, user ID) error {
	return c.call(ctx, request{method: http.MethodPut, path: pathf("/v1/me/following/", user), want: http.StatusNoContent})
}

// FollowParams are the choices of FollowWith.
type FollowParams struct {
	// Reposts says whether the followee's reposts enter the token's
	// user's home feed; nil keeps an existing follow's choice (a new
	// follow shows them).
	Reposts *bool `json:"reposts,omitempty"`
}

// FollowWith is Follow with p's choices: FollowWith(ctx, id,
// FollowParams{Reposts: &no}) keeps that followee's reposts out of the
// home feed. PUT /v1/me/following/{id} with a body.
func (c *Client) FollowWith(ctx context.Context, user ID, p FollowParams) error {
	return c.call(ctx, request{method: http.MethodPut, path: pathf("/v1/me/following/", user), body: p, want: http.StatusNoContent})
}

// Unfollow undoes Follow. DELETE /v1/me/following/{id}.
func (c *Client) Unfollow(ctx context.Context, user ID) error {
	return c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/me/following/", user), want: http.StatusNoContent})
}

// Mute takes user's posts out of the token's user's home feed. PUT
// /v1/me/mutes/{id}.
func (c *Client) Mute(ctx context.Context, user ID) error {
	return c.call(ctx, request{method: http.MethodPut, path: pathf("/v1/me/mutes/", user), want: http.StatusNoContent})
}

// Unmute undoes Mute. DELETE /v1/me/mutes/{id}.
func (c *Client) Unmute(ctx context.Context, user ID) error {
	return c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/me/mutes/", user), want: http.StatusNoContent})
}

// MutesPage returns a page of the users the token's user mutes. GET
// /v1/me/mutes.
func (c *Client) MutesPage(ctx context.Context, p PageParams) (Page[User], error) {
	return getPage[User](ctx, c, "/v1/me/mutes", p)
}

// Mutes iterates over all the users the token's user mutes.
func (c *Client) Mutes(ctx context.Context, p PageParams) iter.Seq2[User, error] {
	return all[User](ctx, c, "/v1/me/mutes", p)
}

// Block blocks user: the follows both ways end, and each is a missing user
// to the other. PUT /v1/me/blocks/{id}.
func (c *Client) Block(ctx context.Context, user ID) error {
	return c.call(ctx, request{method: http.MethodPut, path: pathf("/v1/me/blocks/", user), want: http.StatusNoContent})
}

// Unblock undoes Block (the follows stay ended). DELETE /v1/me/blocks/{id}.
func (c *Client) Unblock(ctx context.Context, user ID) error {
	return c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/me/blocks/", user), want: http.StatusNoContent})
}

// BlocksPage returns a page of the users the token's user blocks. GET
// /v1/me/blocks.
func (c *Client) BlocksPage(ctx context.Context, p PageParams) (Page[User], error) {
	return getPage[User](ctx, c, "/v1/me/blocks", p)
}

// Blocks iterates over all the users the token's user blocks.
func (c *Client) Blocks(ctx context.Context, p PageParams) iter.Seq2[User, error] {
	return all[User](ctx, c, "/v1/me/blocks", p)
}
