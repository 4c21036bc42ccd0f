package shards

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// Replies across shards: a reply lives on its author's shard, its
// parent's index and count on the parent's (sqlstore/replies.go), so the
// reads about a thread ask the parents' shards.

// replyParent returns the author of parent, which must live (ENOTFOUND
// otherwise), read on its shard's primary for a reply about to be
// written on another shard.
func (s *Store) replyParent(ctx context.Context, parent int64) (int64, error) {
	p, err := s.of(parent).Post(ctx, parent)
	if err == nil && p.Deleted {
		err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", parent)
	}
	return p.AuthorID, err
}

// PostCounts reads each post's reply and repost counts on the post's
// shard.
func (s *Store) PostCounts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	return gatherMap(ctx, s, ids, (*sqlstore.Store).PostCounts)
}

// PostCountsPrimary is PostCounts on the shards' primaries.
func (s *Store) PostCountsPrimary(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	return gatherMap(ctx, s, ids, (*sqlstore.Store).PostCountsPrimary)
}

// ReplyIDs reads parent's replies on the parent's shard.
func (s *Store) ReplyIDs(ctx context.Context, parent, after int64, n int) ([]int64, error) {
	return s.of(parent).ReplyIDs(ctx, parent, after, n)
}

// ChildReplies reads one level of a thread on the parents' shards, at
// most n replies from each.
func (s *Store) ChildReplies(ctx context.Context, parents []int64, n int) (map[int64][]int64, error) {
	groups := s.byShard(parents)
	out := map[int64][]int64{}
	var mu sync.Mutex
	err := s.some(ctx, slices.Sorted(maps.Keys(groups)), func(ctx context.Context, k int, st *sqlstore.Store) error {
		m, err := st.ChildReplies(ctx, groups[k], n)
		mu.Lock()
		defer mu.Unlock()
		maps.Copy(out, m)
		return err
	})
	return out, err
}

// repostOriginal returns the author of original, which must live and be
// no repost itself (ENOTFOUND otherwise), read on its shard's primary
// for a repost about to be written on another shard.
func (s *Store) repostOriginal(ctx context.Context, original int64) (int64, error) {
	p, err := s.of(original).Post(ctx, original)
	if err == nil && (p.Deleted || p.IsRepost()) {
		err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", original)
	}
	return p.AuthorID, err
}

// RepostOf reads user's repost of post on the user's shard.
func (s *Store) RepostOf(ctx context.Context, user, post int64) (int64, error) {
	return s.of(user).RepostOf(ctx, user, post)
}

// RepostedAmong reads user's reposts on the user's shard.
func (s *Store) RepostedAmong(ctx context.Context, user int64, ids []int64) ([]int64, error) {
	return s.of(user).RepostedAmong(ctx, user, ids)
}

// ShowReposts writes user's choice on the user's shard.
func (s *Store) ShowReposts(ctx context.Context, user, target int64, show bool) error {
	return s.write(ctx, s.m.Of(user), func(st *sqlstore.Store) error { return st.ShowReposts(ctx, user, target, show) })
}
