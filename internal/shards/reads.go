package shards

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// The reads about many users or posts: each asks the shards concerned at
// once and merges their answers.

// Users returns the live users among ids, each read on its shard.
func (s *Store) Users(ctx context.Context, ids []int64) (map[int64]feed.User, error) {
	return gatherMap(ctx, s, ids, (*sqlstore.Store).Users)
}

// Posts returns the posts among ids, deleted ones included as the one
// database does; a post's id names its shard.
func (s *Store) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	return gatherMap(ctx, s, ids, (*sqlstore.Store).Posts)
}

// LikeCounts and LikeTallies read each post's counter on the post's
// shard, where its likes are counted (mirror.go).
func (s *Store) LikeCounts(ctx context.Context, posts []int64) (map[int64]int64, error) {
	return gatherMap(ctx, s, posts, (*sqlstore.Store).LikeCounts)
}

func (s *Store) LikeTallies(ctx context.Context, posts []int64) (map[int64]feed.LikeTally, error) {
	return gatherMap(ctx, s, posts, (*sqlstore.Store).LikeTallies)
}

// gatherMap splits ids by shard, runs read on each shard's share at once,
// and merges the maps.
func gatherMap[V any](ctx context.Context, s *Store, ids []int64, read func(*sqlstore.Store, context.Context, []int64) (map[int64]V, error)) (map[int64]V, error) {
	groups := s.byShard(ids)
	out := make(map[int64]V, len(ids))
	var mu sync.Mutex
	missed := func(g *feed.Gaps, k int) { g.Missed(groups[k]...) }
	err := s.read(ctx, keys(groups), missed, func(ctx context.Context, k int, st *sqlstore.Store) error {
		m, err := read(st, ctx, groups[k])
		mu.Lock()
		defer mu.Unlock()
		for id, v := range m {
			out[id] = v
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// missedAny records that a read of ids or of a listing missed a shard.
func missedAny(g *feed.Gaps, _ int) { g.Missed() }

func keys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// gatherIDs runs read on the shards ks at once and merges their newest
// first id lists into the n newest.
func (s *Store) gatherIDs(ctx context.Context, ks []int, n int, read func(ctx context.Context, k int, st *sqlstore.Store) ([]int64, error)) ([]int64, error) {
	lists := make([][]int64, s.m.N)
	err := s.read(ctx, ks, missedAny, func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		lists[k], err = read(ctx, k, st)
		return err
	})
	if err != nil {
		return nil, err
	}
	return mergeDesc(lists, n), nil
}

// mergeDesc merges id lists sorted newest first into the n newest ids,
// each once.
func mergeDesc(lists [][]int64, n int) []int64 {
	var all []int64
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.SortFunc(all, func(a, b int64) int { return cmp.Compare(b, a) })
	all = slices.Compact(all)
	if len(all) > n {
		all = all[:n]
	}
	if all == nil {
		all = []int64{}
	}
	return all
}

// newestBelow reads shard k's m newest ids below before (0: no bound),
// newest first.
type newestBelow func(ctx context.Context, k int, st *sqlstore.Store, before int64, m int) ([]int64, error)

// gatherNewest returns the n newest ids below before of the shards ks,
// each read by read. Asking every shard for n would cost each shard the
// whole page's work (a shard's query walks its newest posts until it has
// n of the reader's), so each is asked first for its share and a margin.
// The merge of those is the answer unless a shard that filled its share
// may hold ids newer than the merge's n-th: each such shard is asked once
// more, below the last id it gave, for n. It then has given n ids newer
// than any it holds back, or all it has, so the second merge is exact.
func (s *Store) gatherNewest(ctx context.Context, ks []int, before int64, n int, read newestBelow) ([]int64, error) {
	if len(ks) <= 1 || n <= len(ks) {
		return s.gatherIDs(ctx, ks, n, func(ctx context.Context, k int, st *sqlstore.Store) ([]int64, error) {
			return read(ctx, k, st, before, n)
		})
	}
	share := min(n, n/len(ks)+n/(2*len(ks))+2)
	lists := make([][]int64, s.m.N)
	err := s.read(ctx, ks, missedAny, func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		lists[k], err = read(ctx, k, st, before, share)
		return err
	})
	if err != nil {
		return nil, err
	}
	merged := mergeDesc(lists, n)
	var again []int
	for _, k := range ks {
		l := lists[k]
		if len(l) < share {
			continue // it has no more (or did not answer: a gap)
		}
		if len(merged) < n || slices.Min(l) > merged[len(merged)-1] {
			again = append(again, k)
		}
	}
	if len(again) == 0 {
		return merged, nil
	}
	more := make([][]int64, s.m.N)
	err = s.read(ctx, again, missedAny, func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		more[k], err = read(ctx, k, st, slices.Min(lists[k]), n)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, k := range again {
		lists[k] = append(lists[k], more[k]...)
	}
	return mergeDesc(lists, n), nil
}

// AuthorsPostIDs reads each author's posts on the author's shard.
func (s *Store) AuthorsPostIDs(ctx context.Context, authors []int64, before int64, n int) ([]int64, error) {
	groups := s.byShard(authors)
	return s.gatherNewest(ctx, keys(groups), before, n, func(ctx context.Context, k int, st *sqlstore.Store, before int64, m int) ([]int64, error) {
		return st.AuthorsPostIDs(ctx, groups[k], before, m)
	})
}

// FeedPostIDs builds reader's home feed from SQL across the shards: every
// shard holds the follows that lead to its own users (the follows of its
// users, and the mirrors of the others', mirror.go), so the one-database
// query, run on each shard, finds the posts of the reader's followees
// that live there; the reader's own posts are on its shard. The n newest
// of the shards' newest are the feed's n newest (gatherNewest).
func (s *Store) FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error) {
	return s.gatherNewest(ctx, allOf(s.m.N), before, n, func(ctx context.Context, _ int, st *sqlstore.Store, before int64, m int) ([]int64, error) {
		return st.FeedPostIDs(ctx, reader, after, before, m)
	})
}

// PushedFeedPostIDs is FeedPostIDs over the pushed authors: the band is
// checked on each author's shard, where its follower count is.
func (s *Store) PushedFeedPostIDs(ctx context.Context, reader, high, low, after, before int64, n int) ([]int64, error) {
	return s.gatherNewest(ctx, allOf(s.m.N), before, n, func(ctx context.Context, _ int, st *sqlstore.Store, before int64, m int) ([]int64, error) {
		return st.PushedFeedPostIDs(ctx, reader, high, low, after, before, m)
	})
}

// PullFollowees returns the pulled authors of reader's feed, ascending:
// each shard knows which of its own users are pulled and whether reader
// follows them (the follow's mirror), and reader's shard adds reader.
func (s *Store) PullFollowees(ctx context.Context, reader, high, low int64) ([]int64, error) {
	lists := make([][]int64, s.m.N)
	if err := s.read(ctx, allOf(s.m.N), missedAny, func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		lists[k], err = st.PullFollowees(ctx, reader, high, low)
		return err
	}); err != nil {
		return nil, err
	}
	out := slices.Concat(lists...)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// NewestPostsFloor returns the highest of the shards' floors. Each shard
// then has at most k-1 posts above it, which is what the floor bounds (the
// walk of a window's posts on a shard); the window may hold more posts in
// all, never fewer.
func (s *Store) NewestPostsFloor(ctx context.Context, k int) (int64, error) {
	floors := make([]int64, s.m.N)
	err := s.read(ctx, allOf(s.m.N), missedAny, func(ctx context.Context, i int, st *sqlstore.Store) error {
		var err error
		floors[i], err = st.NewestPostsFloor(ctx, k)
		return err
	})
	if err != nil {
		return 0, err
	}
	return slices.Max(floors), nil
}

// TopLiked merges the shards' most liked posts: a post's count is on its
// shard, so the n most liked of all are among the shards' n most liked.
func (s *Store) TopLiked(ctx context.Context, since time.Time, n int) ([]int64, map[int64]int64, error) {
	var mu sync.Mutex
	var ids []int64
	counts := map[int64]int64{}
	err := s.read(ctx, allOf(s.m.N), missedAny, func(ctx context.Context, _ int, st *sqlstore.Store) error {
		got, c, err := st.TopLiked(ctx, since, n)
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, got...)
		for id, v := range c {
			counts[id] = v
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(ids, func(a, b int64) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(b, a))
	})
	if len(ids) > n {
		for _, id := range ids[n:] {
			delete(counts, id)
		}
		ids = ids[:n]
	}
	return ids, counts, nil
}

// DeletedUsers gathers the shards' deleted users.
func (s *Store) DeletedUsers(ctx context.Context, since time.Time) ([]int64, error) {
	return s.union(ctx, func(ctx context.Context, st *sqlstore.Store) ([]int64, error) {
		return st.DeletedUsers(ctx, since)
	})
}

// union runs read on every shard and returns the ids they found, sorted,
// each once.
func (s *Store) union(ctx context.Context, read func(ctx context.Context, st *sqlstore.Store) ([]int64, error)) ([]int64, error) {
	lists := make([][]int64, s.m.N)
	err := s.read(ctx, allOf(s.m.N), missedAny, func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		lists[k], err = read(ctx, st)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := slices.Concat(lists...)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// StaleFeeds returns up to n users whose cached feed missed a change, from
// every shard (a user's mark is on the user's shard).
func (s *Store) StaleFeeds(ctx context.Context, n int) ([]feed.StaleFeed, error) {
	lists := make([][]feed.StaleFeed, s.m.N)
	err := s.read(ctx, allOf(s.m.N), missedAny, func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		lists[k], err = st.StaleFeeds(ctx, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := slices.Concat(lists...)
	slices.SortFunc(out, func(a, b feed.StaleFeed) int { return cmp.Compare(a.User, b.User) })
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

func (s *Store) ClearStaleFeeds(ctx context.Context, fs []feed.StaleFeed) error {
	groups := map[int][]feed.StaleFeed{}
	for _, f := range fs {
		groups[s.m.Of(f.User)] = append(groups[s.m.Of(f.User)], f)
	}
	return s.some(ctx, keys(groups), func(ctx context.Context, k int, st *sqlstore.Store) error {
		return st.ClearStaleFeeds(ctx, groups[k])
	})
}

// PostIDsByExternalID looks each key up on its author's shard.
func (s *Store) PostIDsByExternalID(ctx context.Context, eks []feed.ExternalKey) (map[feed.ExternalKey]int64, error) {
	groups := map[int][]feed.ExternalKey{}
	for _, key := range eks {
		k := s.m.Of(key.AuthorID)
		groups[k] = append(groups[k], key)
	}
	out := make(map[feed.ExternalKey]int64, len(eks))
	var mu sync.Mutex
	err := s.some(ctx, keys(groups), func(ctx context.Context, k int, st *sqlstore.Store) error {
		m, err := st.PostIDsByExternalID(ctx, groups[k])
		mu.Lock()
		defer mu.Unlock()
		for key, id := range m {
			out[key] = id
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AnyUsers reports whether any shard holds a user.
func (s *Store) AnyUsers(ctx context.Context) (bool, error) {
	any := make([]bool, s.m.N)
	err := s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		any[k], err = st.AnyUsers(ctx)
		return err
	})
	return slices.Contains(any, true), err
}
