package client

import (
	"context"
	"net/http"
)

// The rules for replies in the home feed (Settings.HomeReplies).
const (
	// HomeRepliesFollowing, the default: a reply of someone the user
	// follows shows when it answers the user, its own author (a thread)
	// or someone else the user follows.
	HomeRepliesFollowing = "following"
	// HomeRepliesAll: every reply of the people the user follows.
	HomeRepliesAll = "all"
	// HomeRepliesNone: only their answers to themselves (threads).
	HomeRepliesNone = "none"
)

// Settings are the token's user's choices about its feeds.
type Settings struct {
	// HomeReplies is one of the HomeReplies constants.
	HomeReplies string `json:"home_replies"`
}

// SettingsParams changes settings: the fields set replace the user's.
type SettingsParams struct {
	HomeReplies *string `json:"home_replies,omitempty"`
}

// Settings returns the token's user's settings. GET /v1/me/settings.
func (c *Client) Settings(ctx context.Context) (Settings, error) {
	var st Settings
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/me/settings", want: http.StatusOK, out: &st})
	return st, err
}

// SetSettings changes the token's user's settings and returns them as
// they now are; the home feed follows the new rule from its next page.
// PUT /v1/me/settings.
func (c *Client) SetSettings(ctx context.Context, p SettingsParams) (Settings, error) {
	var st Settings
	err := c.call(ctx, request{method: http.MethodPut, path: "/v1/me/settings", body: p, want: http.StatusOK, out: &st})
	return st, err
}
