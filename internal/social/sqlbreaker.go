package social

import (
	"context"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// breakerStore puts the SQL circuit breaker, the one the timeline goes
// through, in front of every store call of the service: while SQL is
// failing or slow, writes fail fast with 503 instead of queueing behind a
// database that does not answer (package sqlbreaker).
//
// Every method is written out, none embedded: a method added to Store
// does not compile until it is added here.
type breakerStore struct {
	store Store
	b     *breaker.Breaker
}

var _ Store = breakerStore{}

// do and errOnly are sqlbreaker's calls through g's breaker.
func do[T any](ctx context.Context, g breakerStore, fn func(ctx context.Context) (T, error)) (T, error) {
	return sqlbreaker.Do(ctx, g.b, fn)
}

func errOnly(ctx context.Context, g breakerStore, fn func(ctx context.Context) error) error {
	return sqlbreaker.Err(ctx, g.b, fn)
}

// pair carries a call's two results through the breaker.
type pair[A, B any] struct {
	a A
	b B
}

func (g breakerStore) CreateUser(ctx context.Context, u feed.User) (feed.User, error) {
	return do(ctx, g, func(ctx context.Context) (feed.User, error) { return g.store.CreateUser(ctx, u) })
}

func (g breakerStore) UpdateUser(ctx context.Context, user int64, e feed.UserEdit) (feed.User, error) {
	return do(ctx, g, func(ctx context.Context) (feed.User, error) { return g.store.UpdateUser(ctx, user, e) })
}

func (g breakerStore) UserByHandle(ctx context.Context, h string) (feed.User, error) {
	return do(ctx, g, func(ctx context.Context) (feed.User, error) { return g.store.UserByHandle(ctx, h) })
}

func (g breakerStore) SearchHandles(ctx context.Context, prefix, after string, n int) ([]feed.User, error) {
	return do(ctx, g, func(ctx context.Context) ([]feed.User, error) { return g.store.SearchHandles(ctx, prefix, after, n) })
}

func (g breakerStore) SearchNames(ctx context.Context, prefix, afterKey string, afterID int64, n int) ([]feed.User, error) {
	return do(ctx, g, func(ctx context.Context) ([]feed.User, error) {
		return g.store.SearchNames(ctx, prefix, afterKey, afterID, n)
	})
}

func (g breakerStore) Relationship(ctx context.Context, user, other int64) (feed.Relationship, error) {
	return do(ctx, g, func(ctx context.Context) (feed.Relationship, error) { return g.store.Relationship(ctx, user, other) })
}

func (g breakerStore) Settings(ctx context.Context, user int64) (feed.Settings, error) {
	return do(ctx, g, func(ctx context.Context) (feed.Settings, error) { return g.store.Settings(ctx, user) })
}

func (g breakerStore) SetSettings(ctx context.Context, user int64, st feed.Settings) error {
	_, err := do(ctx, g, func(ctx context.Context) (struct{}, error) { return struct{}{}, g.store.SetSettings(ctx, user, st) })
	return err
}

func (g breakerStore) User(ctx context.Context, id int64) (feed.User, error) {
	return do(ctx, g, func(ctx context.Context) (feed.User, error) { return g.store.User(ctx, id) })
}

func (g breakerStore) Users(ctx context.Context, ids []int64) (map[int64]feed.User, error) {
	return do(ctx, g, func(ctx context.Context) (map[int64]feed.User, error) { return g.store.Users(ctx, ids) })
}

func (g breakerStore) TokenGeneration(ctx context.Context, user int64) (int64, error) {
	return do(ctx, g, func(ctx context.Context) (int64, error) { return g.store.TokenGeneration(ctx, user) })
}

func (g breakerStore) RevokeTokens(ctx context.Context, user int64) error {
	return errOnly(ctx, g, func(ctx context.Context) error { return g.store.RevokeTokens(ctx, user) })
}

func (g breakerStore) Follow(ctx context.Context, follower, followee int64) (bool, error) {
	return do(ctx, g, func(ctx context.Context) (bool, error) { return g.store.Follow(ctx, follower, followee) })
}

func (g breakerStore) Unfollow(ctx context.Context, follower, followee int64) (bool, error) {
	return do(ctx, g, func(ctx context.Context) (bool, error) { return g.store.Unfollow(ctx, follower, followee) })
}

func (g breakerStore) FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) ([]string, []string, error) {
	r, err := do(ctx, g, func(ctx context.Context) (pair[[]string, []string], error) {
		f, u, err := g.store.FollowBatch(ctx, follow, unfollow)
		return pair[[]string, []string]{f, u}, err
	})
	return r.a, r.b, err
}

func (g breakerStore) Followers(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return do(ctx, g, func(ctx context.Context) ([]int64, error) { return g.store.Followers(ctx, user, after, n) })
}

func (g breakerStore) Following(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return do(ctx, g, func(ctx context.Context) ([]int64, error) { return g.store.Following(ctx, user, after, n) })
}

func (g breakerStore) Mute(ctx context.Context, user, target int64) (bool, error) {
	return do(ctx, g, func(ctx context.Context) (bool, error) { return g.store.Mute(ctx, user, target) })
}

func (g breakerStore) Unmute(ctx context.Context, user, target int64) (bool, error) {
	return do(ctx, g, func(ctx context.Context) (bool, error) { return g.store.Unmute(ctx, user, target) })
}

func (g breakerStore) Block(ctx context.Context, blocker, blocked int64) (bool, error) {
	return do(ctx, g, func(ctx context.Context) (bool, error) { return g.store.Block(ctx, blocker, blocked) })
}

func (g breakerStore) Unblock(ctx context.Context, blocker, blocked int64) (bool, error) {
	return do(ctx, g, func(ctx context.Context) (bool, error) { return g.store.Unblock(ctx, blocker, blocked) })
}

func (g breakerStore) Mutes(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return do(ctx, g, func(ctx context.Context) ([]int64, error) { return g.store.Mutes(ctx, user, after, n) })
}

func (g breakerStore) Blocks(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return do(ctx, g, func(ctx context.Context) ([]int64, error) { return g.store.Blocks(ctx, user, after, n) })
}

func (g breakerStore) CreatePost(ctx context.Context, p feed.Post, idem feed.Idempotency) (feed.Post, bool, error) {
	r, err := do(ctx, g, func(ctx context.Context) (pair[feed.Post, bool], error) {
		p, created, err := g.store.CreatePost(ctx, p, idem)
		return pair[feed.Post, bool]{p, created}, err
	})
	return r.a, r.b, err
}

func (g breakerStore) EditPost(ctx context.Context, id, author int64, e feed.PostEdit) (feed.Post, error) {
	return do(ctx, g, func(ctx context.Context) (feed.Post, error) { return g.store.EditPost(ctx, id, author, e) })
}

func (g breakerStore) DeletePost(ctx context.Context, id, author int64) error {
	return errOnly(ctx, g, func(ctx context.Context) error { return g.store.DeletePost(ctx, id, author) })
}

func (g breakerStore) DeleteUser(ctx context.Context, user int64) (feed.Purge, bool, error) {
	r, err := do(ctx, g, func(ctx context.Context) (pair[feed.Purge, bool], error) {
		p, started, err := g.store.DeleteUser(ctx, user)
		return pair[feed.Purge, bool]{p, started}, err
	})
	return r.a, r.b, err
}

func (g breakerStore) Purge(ctx context.Context, user int64) (feed.Purge, error) {
	return do(ctx, g, func(ctx context.Context) (feed.Purge, error) { return g.store.Purge(ctx, user) })
}

func (g breakerStore) Marker(ctx context.Context, user int64) (feed.Marker, error) {
	return do(ctx, g, func(ctx context.Context) (feed.Marker, error) { return g.store.Marker(ctx, user) })
}

func (g breakerStore) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, error) {
	return do(ctx, g, func(ctx context.Context) ([]feed.Post, error) { return g.store.AuthorPosts(ctx, author, before, n) })
}

func (g breakerStore) LikedPosts(ctx context.Context, user, after int64, n int) ([]feed.Post, error) {
	return do(ctx, g, func(ctx context.Context) ([]feed.Post, error) { return g.store.LikedPosts(ctx, user, after, n) })
}

func (g breakerStore) Hidden(ctx context.Context, user int64) (feed.Hidden, error) {
	return do(ctx, g, func(ctx context.Context) (feed.Hidden, error) { return g.store.Hidden(ctx, user) })
}

func (g breakerStore) CreateList(ctx context.Context, l feed.List) (feed.List, error) {
	return do(ctx, g, func(ctx context.Context) (feed.List, error) { return g.store.CreateList(ctx, l) })
}

func (g breakerStore) Lists(ctx context.Context, owner int64) ([]feed.List, error) {
	return do(ctx, g, func(ctx context.Context) ([]feed.List, error) { return g.store.Lists(ctx, owner) })
}

func (g breakerStore) List(ctx context.Context, owner, id int64) (feed.List, error) {
	return do(ctx, g, func(ctx context.Context) (feed.List, error) { return g.store.List(ctx, owner, id) })
}

func (g breakerStore) UpdateList(ctx context.Context, owner, id int64, e feed.ListEdit) (feed.List, error) {
	return do(ctx, g, func(ctx context.Context) (feed.List, error) { return g.store.UpdateList(ctx, owner, id, e) })
}

func (g breakerStore) DeleteList(ctx context.Context, owner, id int64) error {
	return errOnly(ctx, g, func(ctx context.Context) error { return g.store.DeleteList(ctx, owner, id) })
}

func (g breakerStore) AddListMember(ctx context.Context, owner, id, member int64) (bool, error) {
	return do(ctx, g, func(ctx context.Context) (bool, error) { return g.store.AddListMember(ctx, owner, id, member) })
}

func (g breakerStore) RemoveListMember(ctx context.Context, owner, id, member int64) (bool, error) {
	return do(ctx, g, func(ctx context.Context) (bool, error) { return g.store.RemoveListMember(ctx, owner, id, member) })
}

func (g breakerStore) ListMembers(ctx context.Context, owner, id, after int64, n int) ([]int64, error) {
	return do(ctx, g, func(ctx context.Context) ([]int64, error) { return g.store.ListMembers(ctx, owner, id, after, n) })
}

func (g breakerStore) RemoveFromLists(ctx context.Context, owner, member int64) (int, error) {
	return do(ctx, g, func(ctx context.Context) (int, error) { return g.store.RemoveFromLists(ctx, owner, member) })
}

func (g breakerStore) Post(ctx context.Context, id int64) (feed.Post, error) {
	return do(ctx, g, func(ctx context.Context) (feed.Post, error) { return g.store.Post(ctx, id) })
}

func (g breakerStore) RepostOf(ctx context.Context, user, post int64) (int64, error) {
	return do(ctx, g, func(ctx context.Context) (int64, error) { return g.store.RepostOf(ctx, user, post) })
}

func (g breakerStore) ShowReposts(ctx context.Context, user, target int64, show bool) error {
	return errOnly(ctx, g, func(ctx context.Context) error { return g.store.ShowReposts(ctx, user, target, show) })
}
