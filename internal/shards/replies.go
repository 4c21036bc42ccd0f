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

// ReplyCounts reads each post's reply count on the post's shard.
func (s *Store) ReplyCounts(ctx context.Context, ids []int64) (map[int64]int64, error) {
	return gatherMap(ctx, s, ids, (*sqlstore.Store).ReplyCounts)
}

// ReplyCountsPrimary is ReplyCounts on the shards' primaries.
func (s *Store) ReplyCountsPrimary(ctx context.Context, ids []int64) (map[int64]int64, error) {
	return gatherMap(ctx, s, ids, (*sqlstore.Store).ReplyCountsPrimary)
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
