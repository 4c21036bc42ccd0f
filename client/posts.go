package client

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// CreatePostParams is a new post.
type CreatePostParams struct {
	Content string `json:"content"`
	// Data is the app's own fields of the post: a JSON object (nil: none).
	Data json.RawMessage `json:"data,omitempty"`
	// ExternalID is the app's own id of the post, unique per author: a
	// second post with it is an *Error external_id_exists whose
	// ExistingPostID is the first post's.
	ExternalID string `json:"external_id,omitempty"`
	// Weight is the post's weight in ranked feeds, 0 to 100 (nil: the
	// default, 1; 0: never in a ranked feed, still in the latest one).
	Weight *float64 `json:"weight,omitempty"`
	// InReplyToID makes the post a reply to that post (0: none). An
	// unknown or deleted post is an *Error not_found; one whose author
	// blocks the token's user, or whom the user blocks, an *Error blocked.
	InReplyToID ID `json:"in_reply_to_id,omitempty"`
	// IdempotencyKey makes the create safe to send again: within a day, the
	// same key and body answer the same post. Empty: CreatePost makes one
	// up (unless WithoutAutoIdempotencyKeys), so that its own retries never
	// post twice.
	IdempotencyKey string `json:"-"`
}

// CreatePost publishes a post as the token's user. POST /v1/posts.
func (c *Client) CreatePost(ctx context.Context, p CreatePostParams) (Post, error) {
	key := p.IdempotencyKey
	if key == "" && !c.noAutoKey {
		key = NewIdempotencyKey()
	}
	var post Post
	err := c.call(ctx, request{method: http.MethodPost, path: "/v1/posts", body: p, idemKey: key, want: http.StatusCreated, out: &post})
	return post, err
}

// NoData, as EditPostParams.Data, removes a post's data.
func NoData() json.RawMessage { return json.RawMessage("null") }

// EditPostParams is an edit of a post: the fields set replace the post's,
// the others stay. At least one must be set.
type EditPostParams struct {
	Content *string `json:"content,omitempty"`
	// Data replaces the post's data; NoData() removes it; nil keeps it.
	Data json.RawMessage `json:"data,omitempty"`
	// Weight sets the post's weight in ranked feeds (0 to 100); nil keeps
	// it. A change of weight alone does not mark the post edited.
	Weight *float64 `json:"weight,omitempty"`
}

// EditPost edits one of the token's user's posts and returns it with its
// EditedAt set. PATCH /v1/posts/{id}. It is never retried.
func (c *Client) EditPost(ctx context.Context, post ID, p EditPostParams) (Post, error) {
	var out Post
	err := c.call(ctx, request{method: http.MethodPatch, path: pathf("/v1/posts/", post), body: p, want: http.StatusOK, out: &out})
	return out, err
}

// GetPost returns a post. GET /v1/posts/{id}.
func (c *Client) GetPost(ctx context.Context, post ID) (Post, error) {
	var out Post
	err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/posts/", post), want: http.StatusOK, out: &out})
	return out, err
}

// DeletePost deletes one of the token's user's posts. DELETE
// /v1/posts/{id}.
func (c *Client) DeletePost(ctx context.Context, post ID) error {
	return c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/posts/", post), want: http.StatusNoContent})
}

// UserPostsPage returns a page of user's posts, newest first. GET
// /v1/users/{id}/posts.
func (c *Client) UserPostsPage(ctx context.Context, user ID, p PageParams) (Page[Post], error) {
	return getPage[Post](ctx, c, pathf("/v1/users/", user, "/posts"), p)
}

// UserPosts iterates over all of user's posts, newest first.
func (c *Client) UserPosts(ctx context.Context, user ID, p PageParams) iter.Seq2[Post, error] {
	return all[Post](ctx, c, pathf("/v1/users/", user, "/posts"), p)
}

// FeedPage returns a page of the token's user's home feed, newest first.
// GET /v1/me/feed.
func (c *Client) FeedPage(ctx context.Context, p PageParams) (Page[Post], error) {
	return getPage[Post](ctx, c, "/v1/me/feed", p)
}

// FeedPageInto is FeedPage into page, reusing page.Items' array: a loop
// that reads many pages allocates little beyond each post's content.
func (c *Client) FeedPageInto(ctx context.Context, p PageParams, page *Page[Post]) error {
	// encoding/json decodes into the elements already in the array's
	// capacity without zeroing them: a field absent from the new post
	// (edited_at, data) would keep the old post's value.
	clear(page.Items[:cap(page.Items)])
	page.Items, page.NextCursor, page.Degraded = page.Items[:0], "", false
	return c.call(ctx, request{method: http.MethodGet, path: "/v1/me/feed", query: p.query(), want: http.StatusOK, out: page})
}

// FeedPageRaw reads a page of the home feed into buf, undecoded: the
// answer's JSON, exactly as a Page[Post] would decode it. A caller that
// reuses buf across calls reads pages without allocating for them (a load
// generator that must cost less than what it measures).
func (c *Client) FeedPageRaw(ctx context.Context, p PageParams, buf *bytes.Buffer) error {
	return c.call(ctx, request{method: http.MethodGet, path: "/v1/me/feed", query: p.query(), want: http.StatusOK, into: buf})
}

// Feed iterates over the token's user's whole home feed, newest first.
func (c *Client) Feed(ctx context.Context, p PageParams) iter.Seq2[Post, error] {
	return all[Post](ctx, c, "/v1/me/feed", p)
}

// RankedFeedPage reads a page of the token's user's ranked home feed
// (GET /v1/me/feed?order=ranked): the recent posts of the latest feed,
// best first. The first page ranks them anew; its cursor pages through
// that ranking, which expires some time after its last page: then the
// error is an *Error with Code CodeCursorExpired, and the caller reads the
// first page again.
func (c *Client) RankedFeedPage(ctx context.Context, p PageParams) (Page[Post], error) {
	p.order = "ranked"
	return getPage[Post](ctx, c, "/v1/me/feed", p)
}

// RankedFeedPageRaw is RankedFeedPage into buf, undecoded (FeedPageRaw).
func (c *Client) RankedFeedPageRaw(ctx context.Context, p PageParams, buf *bytes.Buffer) error {
	p.order = "ranked"
	return c.call(ctx, request{method: http.MethodGet, path: "/v1/me/feed", query: p.query(), want: http.StatusOK, into: buf})
}

// RankedFeed iterates over a whole ranked home feed (RankedFeedPage).
func (c *Client) RankedFeed(ctx context.Context, p PageParams) iter.Seq2[Post, error] {
	p.order = "ranked"
	return all[Post](ctx, c, "/v1/me/feed", p)
}

// Like likes a post as the token's user; liking twice is no error. PUT
// /v1/posts/{id}/like.
func (c *Client) Like(ctx context.Context, post ID) (LikeState, error) {
	var st LikeState
	err := c.call(ctx, request{method: http.MethodPut, path: pathf("/v1/posts/", post, "/like"), want: http.StatusOK, out: &st})
	return st, err
}

// Unlike undoes Like. DELETE /v1/posts/{id}/like.
func (c *Client) Unlike(ctx context.Context, post ID) (LikeState, error) {
	var st LikeState
	err := c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/posts/", post, "/like"), want: http.StatusOK, out: &st})
	return st, err
}

// Repost reposts post as the token's user: the repost enters the user's
// followers' home feeds. Idempotent; reposting a repost reposts its
// original, whose state it returns. PUT /v1/posts/{id}/repost.
func (c *Client) Repost(ctx context.Context, post ID) (RepostState, error) {
	var st RepostState
	err := c.call(ctx, request{method: http.MethodPut, path: pathf("/v1/posts/", post, "/repost"), want: http.StatusOK, out: &st})
	return st, err
}

// Unrepost undoes Repost. DELETE /v1/posts/{id}/repost.
func (c *Client) Unrepost(ctx context.Context, post ID) (RepostState, error) {
	var st RepostState
	err := c.call(ctx, request{method: http.MethodDelete, path: pathf("/v1/posts/", post, "/repost"), want: http.StatusOK, out: &st})
	return st, err
}

// LikersPage returns a page of the users who like post, newest like first.
// GET /v1/posts/{id}/likes.
func (c *Client) LikersPage(ctx context.Context, post ID, p PageParams) (Page[User], error) {
	return getPage[User](ctx, c, pathf("/v1/posts/", post, "/likes"), p)
}

// Likers iterates over all the users who like post.
func (c *Client) Likers(ctx context.Context, post ID, p PageParams) iter.Seq2[User, error] {
	return all[User](ctx, c, pathf("/v1/posts/", post, "/likes"), p)
}

// RepliesPage returns a page of post's direct replies, oldest first. GET
// /v1/posts/{id}/replies.
func (c *Client) RepliesPage(ctx context.Context, post ID, p PageParams) (Page[Post], error) {
	return getPage[Post](ctx, c, pathf("/v1/posts/", post, "/replies"), p)
}

// Replies iterates over all of post's direct replies, oldest first.
func (c *Client) Replies(ctx context.Context, post ID, p PageParams) iter.Seq2[Post, error] {
	return all[Post](ctx, c, pathf("/v1/posts/", post, "/replies"), p)
}

// Context returns post's thread: its ancestors and its descendants. GET
// /v1/posts/{id}/context.
func (c *Client) Context(ctx context.Context, post ID) (Thread, error) {
	var out Thread
	err := c.call(ctx, request{method: http.MethodGet, path: pathf("/v1/posts/", post, "/context"), want: http.StatusOK, out: &out})
	return out, err
}

// UserLikesPage returns a page of the posts user likes, newest like first.
// GET /v1/users/{id}/likes.
func (c *Client) UserLikesPage(ctx context.Context, user ID, p PageParams) (Page[Post], error) {
	return getPage[Post](ctx, c, pathf("/v1/users/", user, "/likes"), p)
}

// UserLikes iterates over all the posts user likes.
func (c *Client) UserLikes(ctx context.Context, user ID, p PageParams) iter.Seq2[Post, error] {
	return all[Post](ctx, c, pathf("/v1/users/", user, "/likes"), p)
}

// TopPosts returns the most liked live posts created within window (0:
// the server's default, 24h; at most 30 days), at most limit (0: 20). GET
// /v1/posts/top.
func (c *Client) TopPosts(ctx context.Context, window time.Duration, limit int) ([]Post, error) {
	q := url.Values{}
	if window > 0 {
		q.Set("window", formatWindow(window))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page Page[Post]
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/posts/top", query: q.Encode(), want: http.StatusOK, out: &page})
	return page.Items, err
}

// formatWindow writes a window the way the API reads it: whole days as
// "7d", else a Go duration ("90m0s").
func formatWindow(d time.Duration) string {
	const day = 24 * time.Hour
	if d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// HomeMarker returns the read position in the home feed and the unread
// count. GET /v1/me/markers/home.
func (c *Client) HomeMarker(ctx context.Context) (Marker, error) {
	var m Marker
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/me/markers/home", want: http.StatusOK, out: &m})
	return m, err
}

// SetHomeMarker moves the read position forward to post; an older post
// leaves it where it is. PUT /v1/me/markers/home.
func (c *Client) SetHomeMarker(ctx context.Context, post ID) (Marker, error) {
	var m Marker
	err := c.call(ctx, request{method: http.MethodPut, path: "/v1/me/markers/home",
		body: map[string]ID{"last_read_id": post}, want: http.StatusOK, out: &m})
	return m, err
}

// getPage reads one page of a list.
func getPage[T any](ctx context.Context, c *Client, path string, p PageParams) (Page[T], error) {
	var page Page[T]
	err := c.call(ctx, request{method: http.MethodGet, path: path, query: p.query(), want: http.StatusOK, out: &page})
	return page, err
}

// all iterates over a whole list from p.Cursor on, page after page. An
// error is yielded once and ends the iteration.
func all[T any](ctx context.Context, c *Client, path string, p PageParams) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			page, err := getPage[T](ctx, c, path, p)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if page.NextCursor == "" || len(page.Items) == 0 {
				return
			}
			p.Cursor = page.NextCursor
		}
	}
}
