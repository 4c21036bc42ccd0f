package graph

import (
	"context"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// SQLStore is the SQL store's bulk loading API ((*sqlstore.Store)), which
// writes a graph straight into feedd's tables, trusting the graph's counts
// and sending nothing to the fan-out (sqlstore's BulkLoadUsers says how).
type SQLStore interface {
	BulkLoadUsers(ctx context.Context, users []feed.User) error
	BulkLoadFollows(ctx context.Context, edges [][2]int64) error
	BulkLoadPosts(ctx context.Context, posts []feed.Post) error
	BulkLoadLikes(ctx context.Context, post, author int64, likers []int64, at time.Time) error
	BulkLoadDone(ctx context.Context) error
}

// SQLLoader loads a graph through the SQL store's bulk API: each call is
// one transaction, so that Load's workers keep the database busy (on
// SQLite its one write connection queues them).
type SQLLoader struct {
	s SQLStore
}

// NewSQLLoader returns a loader into s.
func NewSQLLoader(s SQLStore) *SQLLoader { return &SQLLoader{s: s} }

var _ Loader = (*SQLLoader)(nil)

// LoadUsers stores new users with the follower and following counts they
// carry, which Load keeps equal to the edges it loads with LoadFollows.
func (l *SQLLoader) LoadUsers(ctx context.Context, users []feed.User) error {
	return l.s.BulkLoadUsers(ctx, users)
}

// LoadFollows stores follow edges without touching any count.
func (l *SQLLoader) LoadFollows(ctx context.Context, edges [][2]int64) error {
	return l.s.BulkLoadFollows(ctx, edges)
}

// LoadPosts stores posts without outbox events: they are history.
func (l *SQLLoader) LoadPosts(ctx context.Context, posts []feed.Post) error {
	return l.s.BulkLoadPosts(ctx, posts)
}

// LoadLikes stores a post's likes with its like count and its author's
// notifications of them, as one group.
func (l *SQLLoader) LoadLikes(ctx context.Context, post, author int64, likers []int64, at time.Time) error {
	return l.s.BulkLoadLikes(ctx, post, author, likers, at)
}

// Finish readies the loaded tables for the bench's queries (sqlstore's
// BulkLoadDone says how).
func (l *SQLLoader) Finish(ctx context.Context) error {
	return l.s.BulkLoadDone(ctx)
}
