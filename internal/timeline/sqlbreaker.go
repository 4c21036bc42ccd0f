package timeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed"
)

// breakerStore puts the SQL circuit breaker in front of every store call
// of the API. While SQL is failing or slow the breaker opens: reads then go
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

// errSQLUnavailable is what a caller sees while the breaker is open, or
// when SQL failed a call: a 503, never a 500, because retrying later helps.
func errSQLUnavailable(cause error) error {
	return fmt.Errorf("%w: %w", feed.Errorf(feed.EUNAVAILABLE, "the database is not answering; retry shortly"), cause)
}

// domainError reports the errors that say nothing about SQL's health:
// the store's answers "not found", "conflict" and the like.
func domainError(err error) bool {
	var e *feed.Error
	return errors.As(err, &e) && e.Code != feed.EINTERNAL && e.Code != feed.EUNAVAILABLE
}

func viaBreaker[T any](ctx context.Context, b *breaker.Breaker, fn func(ctx context.Context) (T, error)) (T, error) {
	v, err := breaker.Do(ctx, b, fn)
	if err == nil || domainError(err) || ctx.Err() != nil {
		return v, err
	}
	return v, errSQLUnavailable(err)
}

// sqlUnavailable reports whether err means SQL could not answer (as
// opposed to a domain answer or a bug).
func sqlUnavailable(err error) bool { return feed.ErrorCode(err) == feed.EUNAVAILABLE }

// CreatePost returns three values, so it is written out.
func (g breakerStore) CreatePost(ctx context.Context, p feed.Post, idem feed.Idempotency) (feed.Post, bool, error) {
	type res struct {
		p       feed.Post
		created bool
	}
	r, err := viaBreaker(ctx, g.b, func(ctx context.Context) (res, error) {
		p, created, err := g.store.CreatePost(ctx, p, idem)
		return res{p, created}, err
	})
	return r.p, r.created, err
}

// DeletePost returns only an error.
func (g breakerStore) DeletePost(ctx context.Context, id, author int64) error {
	_, err := viaBreaker(ctx, g.b, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.store.DeletePost(ctx, id, author)
	})
	return err
}

func (g breakerStore) EditPost(ctx context.Context, id, author int64, e feed.PostEdit) (feed.Post, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (feed.Post, error) { return g.store.EditPost(ctx, id, author, e) })
}

func (g breakerStore) CreateUser(ctx context.Context, u feed.User) (feed.User, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (feed.User, error) { return g.store.CreateUser(ctx, u) })
}

func (g breakerStore) TokenGeneration(ctx context.Context, user int64) (int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (int64, error) { return g.store.TokenGeneration(ctx, user) })
}

func (g breakerStore) RevokeTokens(ctx context.Context, user int64) error {
	_, err := viaBreaker(ctx, g.b, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.store.RevokeTokens(ctx, user)
	})
	return err
}

// DeleteUser returns three values, so it is written out.
func (g breakerStore) DeleteUser(ctx context.Context, user int64) (feed.Purge, bool, error) {
	type res struct {
		p       feed.Purge
		started bool
	}
	r, err := viaBreaker(ctx, g.b, func(ctx context.Context) (res, error) {
		p, started, err := g.store.DeleteUser(ctx, user)
		return res{p, started}, err
	})
	return r.p, r.started, err
}

func (g breakerStore) Purge(ctx context.Context, user int64) (feed.Purge, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (feed.Purge, error) { return g.store.Purge(ctx, user) })
}

func (g breakerStore) MarkFeedStale(ctx context.Context, user int64) error {
	_, err := viaBreaker(ctx, g.b, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.store.MarkFeedStale(ctx, user)
	})
	return err
}

func (g breakerStore) StaleFeeds(ctx context.Context, n int) ([]feed.StaleFeed, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]feed.StaleFeed, error) { return g.store.StaleFeeds(ctx, n) })
}

func (g breakerStore) ClearStaleFeeds(ctx context.Context, fs []feed.StaleFeed) error {
	_, err := viaBreaker(ctx, g.b, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, g.store.ClearStaleFeeds(ctx, fs)
	})
	return err
}

func (g breakerStore) DeletedUsers(ctx context.Context, since time.Time) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.DeletedUsers(ctx, since) })
}

func (g breakerStore) User(ctx context.Context, id int64) (feed.User, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (feed.User, error) { return g.store.User(ctx, id) })
}

func (g breakerStore) Users(ctx context.Context, ids []int64) (map[int64]feed.User, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (map[int64]feed.User, error) { return g.store.Users(ctx, ids) })
}

func (g breakerStore) Follow(ctx context.Context, follower, followee int64) (bool, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (bool, error) { return g.store.Follow(ctx, follower, followee) })
}

func (g breakerStore) Unfollow(ctx context.Context, follower, followee int64) (bool, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (bool, error) { return g.store.Unfollow(ctx, follower, followee) })
}

// FollowBatch returns three values, so it is written out.
func (g breakerStore) FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) ([]string, []string, error) {
	type res struct{ followed, unfollowed []string }
	r, err := viaBreaker(ctx, g.b, func(ctx context.Context) (res, error) {
		f, u, err := g.store.FollowBatch(ctx, follow, unfollow)
		return res{f, u}, err
	})
	return r.followed, r.unfollowed, err
}

func (g breakerStore) Followers(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.Followers(ctx, user, after, n) })
}

func (g breakerStore) Following(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.Following(ctx, user, after, n) })
}

func (g breakerStore) Post(ctx context.Context, id int64) (feed.Post, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (feed.Post, error) { return g.store.Post(ctx, id) })
}

func (g breakerStore) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (map[int64]feed.Post, error) { return g.store.Posts(ctx, ids) })
}

func (g breakerStore) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]feed.Post, error) { return g.store.AuthorPosts(ctx, author, before, n) })
}

func (g breakerStore) AuthorPostIDs(ctx context.Context, author, after, before int64, n int) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) {
		return g.store.AuthorPostIDs(ctx, author, after, before, n)
	})
}

func (g breakerStore) FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.FeedPostIDs(ctx, reader, after, before, n) })
}

func (g breakerStore) AuthorsPostIDs(ctx context.Context, authors []int64, before int64, n int) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.AuthorsPostIDs(ctx, authors, before, n) })
}

func (g breakerStore) PullFollowees(ctx context.Context, reader, high, low int64) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.PullFollowees(ctx, reader, high, low) })
}

func (g breakerStore) NewestPostsFloor(ctx context.Context, k int) (int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (int64, error) { return g.store.NewestPostsFloor(ctx, k) })
}

func (g breakerStore) SetPullMode(ctx context.Context, author int64, pull bool, refan int) (bool, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (bool, error) { return g.store.SetPullMode(ctx, author, pull, refan) })
}

func (g breakerStore) PushedFeedPostIDs(ctx context.Context, reader, high, low, after, before int64, n int) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) {
		return g.store.PushedFeedPostIDs(ctx, reader, high, low, after, before, n)
	})
}

func (g breakerStore) Marker(ctx context.Context, user int64) (feed.Marker, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (feed.Marker, error) { return g.store.Marker(ctx, user) })
}

func (g breakerStore) SetMarker(ctx context.Context, user, lastRead int64, at time.Time) (feed.Marker, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (feed.Marker, error) { return g.store.SetMarker(ctx, user, lastRead, at) })
}

// Ping does not go through the breaker: the readiness probe must reach SQL even while the
// breaker is open, to tell whether SQL is back.
func (g breakerStore) Ping(ctx context.Context) error { return g.store.Ping(ctx) }

func (g breakerStore) Mute(ctx context.Context, user, target int64) (bool, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (bool, error) { return g.store.Mute(ctx, user, target) })
}

func (g breakerStore) Unmute(ctx context.Context, user, target int64) (bool, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (bool, error) { return g.store.Unmute(ctx, user, target) })
}

func (g breakerStore) Block(ctx context.Context, blocker, blocked int64) (bool, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (bool, error) { return g.store.Block(ctx, blocker, blocked) })
}

func (g breakerStore) Unblock(ctx context.Context, blocker, blocked int64) (bool, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (bool, error) { return g.store.Unblock(ctx, blocker, blocked) })
}

func (g breakerStore) Mutes(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.Mutes(ctx, user, after, n) })
}

func (g breakerStore) Blocks(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]int64, error) { return g.store.Blocks(ctx, user, after, n) })
}

func (g breakerStore) LikedPosts(ctx context.Context, user, after int64, n int) ([]feed.Post, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) ([]feed.Post, error) { return g.store.LikedPosts(ctx, user, after, n) })
}

func (g breakerStore) Hidden(ctx context.Context, user int64) (feed.Hidden, error) {
	return viaBreaker(ctx, g.b, func(ctx context.Context) (feed.Hidden, error) { return g.store.Hidden(ctx, user) })
}
