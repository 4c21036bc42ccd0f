package shards

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// ApplyLikes writes a batch of like events (sqlstore.Store.ApplyLikes):
// each event on its post's shard, where the likes row and the post's count
// move in one transaction, the shards' groups at once; then the mirrors of
// the likes of users of other shards, journaled with the truth, are synced
// onto the users' shards. Deltas and tallies are the merge of the groups'
// (a post is on one shard only, so they do not overlap).
func (s *Store) ApplyLikes(ctx context.Context, evs []feed.LikeEvent) (feed.LikesWritten, error) {
	groups := map[int][]feed.LikeEvent{}
	for _, ev := range evs {
		k := s.m.Of(ev.Post)
		groups[k] = append(groups[k], ev)
	}
	out := feed.LikesWritten{Deltas: map[int64]int64{}, Tallies: map[int64]feed.LikeTally{}}
	var mu sync.Mutex
	err := s.some(ctx, slices.Sorted(maps.Keys(groups)), func(ctx context.Context, k int, _ *sqlstore.Store) error {
		var w feed.LikesWritten
		err := s.write(ctx, k, func(st *sqlstore.Store) (err error) {
			w, err = st.ApplyLikesOn(ctx, s.home(k), groups[k])
			return err
		})
		if err != nil {
			return err
		}
		mu.Lock()
		maps.Copy(out.Deltas, w.Deltas)
		maps.Copy(out.Tallies, w.Tallies)
		out.Rows += w.Rows
		out.Writes += w.Writes
		mu.Unlock()
		// A failed sync is left to the repairer (RunSyncs), which logs
		// it: the truth and its count are written, only the likers'
		// lists lag. Failing the batch would have the writer retry it,
		// holding back the likes of every shard while one is down.
		_ = s.settle(ctx, k, likeSyncs(s.m, k, groups[k]))
		return nil
	})
	if err != nil {
		return feed.LikesWritten{}, fmt.Errorf("shards: apply %d like events: %w", len(evs), err)
	}
	return out, nil
}

// likeSyncs lists the pairs of evs, written on shard k, whose users live
// on other shards.
func likeSyncs(m Map, k int, evs []feed.LikeEvent) []sqlstore.Sync {
	var syncs []sqlstore.Sync
	for _, ev := range evs {
		if m.Of(ev.User) != k {
			syncs = append(syncs, sqlstore.Sync{Kind: sqlstore.SyncLike, A: ev.User, B: ev.Post})
		}
	}
	return syncs
}

// LikedPosts returns up to n of the live posts user likes, with ids above
// after, by ascending id (sqlstore.Store.LikedPosts). The likes are on the
// user's shard (theirs, or mirrors), the posts on their authors': a page
// of ids is read there, hydrated from the posts' shards, and read on from
// its last id while deleted posts left it short.
func (s *Store) LikedPosts(ctx context.Context, user, after int64, n int) ([]feed.Post, error) {
	out := []feed.Post{}
	for len(out) < n {
		want := n - len(out)
		ids, err := s.of(user).LikedPostIDs(ctx, user, after, want)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			break
		}
		posts, err := s.postsOn(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("shards: posts %d likes after %d: %w", user, after, err)
		}
		for _, id := range ids {
			if p, ok := posts[id]; ok && !p.Deleted {
				out = append(out, p)
			}
		}
		after = ids[len(ids)-1]
		if len(ids) < want {
			break
		}
	}
	return out, nil
}

// postsOn reads posts from their shards (deleted ones as tombstones).
func (s *Store) postsOn(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	groups := s.byShard(ids)
	found := make([]map[int64]feed.Post, s.m.N)
	err := s.some(ctx, slices.Sorted(maps.Keys(groups)), func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		found[k], err = st.Posts(ctx, groups[k])
		return err
	})
	if err != nil {
		return nil, err
	}
	posts := make(map[int64]feed.Post, len(ids))
	for _, m := range found {
		maps.Copy(posts, m)
	}
	return posts, nil
}
