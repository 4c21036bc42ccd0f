package timeline

import (
	"context"
	"time"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// breakerStore puts the SQL circuit breaker (package sqlbreaker) in front
// of every store call of the read engine; the writes go through the same
// breaker (social.Service). While SQL is failing or slow the breaker opens: reads then go
// to the cache alone (Feed's degraded path) and writes fail fast with 503
// instead of queueing behind a database that does not answer.
//
// Every method is written out, none embedded: a method added to Store
// does not compile until it is added here, through the breaker or, like Ping, let
// through on purpose.
type breakerStore struct {
	store Store
	b     *breaker.Breaker
}

var _ Store = breakerStore{}

func (g breakerStore) MarkFeedStale(ctx context.Context, user int64) error {
	_, err := sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.store.MarkFeedStale(ctx, user)
	})
	return err
}

func (g breakerStore) StaleFeeds(ctx context.Context, n int) ([]feed.StaleFeed, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]feed.StaleFeed, error) { return g.store.StaleFeeds(ctx, n) })
}

func (g breakerStore) ClearStaleFeeds(ctx context.Context, fs []feed.StaleFeed) error {
	_, err := sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.store.ClearStaleFeeds(ctx, fs)
	})
	return err
}

func (g breakerStore) DeletedUsers(ctx context.Context, since time.Time) ([]int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.DeletedUsers(ctx, since) })
}

func (g breakerStore) User(ctx context.Context, id int64) (feed.User, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (feed.User, error) { return g.store.User(ctx, id) })
}

func (g breakerStore) Post(ctx context.Context, id int64) (feed.Post, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (feed.Post, error) { return g.store.Post(ctx, id) })
}

func (g breakerStore) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (map[int64]feed.Post, error) { return g.store.Posts(ctx, ids) })
}

func (g breakerStore) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]feed.Post, error) { return g.store.AuthorPosts(ctx, author, before, n) })
}

func (g breakerStore) AuthorPostIDs(ctx context.Context, author, after, before int64, n int) ([]int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]int64, error) {
		return g.store.AuthorPostIDs(ctx, author, after, before, n)
	})
}

func (g breakerStore) FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.FeedPostIDs(ctx, reader, after, before, n) })
}

func (g breakerStore) ListMembers(ctx context.Context, owner, list, after int64, n int) ([]int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.ListMembers(ctx, owner, list, after, n) })
}

func (g breakerStore) ListMarker(ctx context.Context, owner, list int64) (feed.Marker, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (feed.Marker, error) { return g.store.ListMarker(ctx, owner, list) })
}

func (g breakerStore) SetListMarker(ctx context.Context, owner, list, lastRead int64, at time.Time) (feed.Marker, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (feed.Marker, error) {
		return g.store.SetListMarker(ctx, owner, list, lastRead, at)
	})
}

func (g breakerStore) AuthorsPostIDs(ctx context.Context, authors []int64, before int64, n int) ([]int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.AuthorsPostIDs(ctx, authors, before, n) })
}

func (g breakerStore) PullFollowees(ctx context.Context, reader, high, low int64) ([]int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.PullFollowees(ctx, reader, high, low) })
}

func (g breakerStore) NewestPostsFloor(ctx context.Context, k int) (int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (int64, error) { return g.store.NewestPostsFloor(ctx, k) })
}

func (g breakerStore) SetPullMode(ctx context.Context, author int64, pull bool, refan int) (bool, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (bool, error) { return g.store.SetPullMode(ctx, author, pull, refan) })
}

func (g breakerStore) PushedFeedPostIDs(ctx context.Context, reader, high, low, after, before int64, n int) ([]int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]int64, error) {
		return g.store.PushedFeedPostIDs(ctx, reader, high, low, after, before, n)
	})
}

func (g breakerStore) Marker(ctx context.Context, user int64) (feed.Marker, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (feed.Marker, error) { return g.store.Marker(ctx, user) })
}

func (g breakerStore) SetMarker(ctx context.Context, user, lastRead int64, at time.Time) (feed.Marker, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (feed.Marker, error) { return g.store.SetMarker(ctx, user, lastRead, at) })
}

// Ping does not go through the breaker: the readiness probe must reach SQL even while the
// breaker is open, to tell whether SQL is back.
func (g breakerStore) Ping(ctx context.Context) error { return g.store.Ping(ctx) }

func (g breakerStore) List(ctx context.Context, owner, id int64) (feed.List, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (feed.List, error) { return g.store.List(ctx, owner, id) })
}

func (g breakerStore) FollowingAmong(ctx context.Context, user int64, ids []int64) ([]int64, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.FollowingAmong(ctx, user, ids) })
}

func (g breakerStore) Hidden(ctx context.Context, user int64) (feed.Hidden, error) {
	return sqlbreaker.Do(ctx, g.b, func(ctx context.Context) (feed.Hidden, error) { return g.store.Hidden(ctx, user) })
}
