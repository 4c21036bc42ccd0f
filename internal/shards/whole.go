package shards

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// The calls about the whole deployment: each runs on every shard.

// Ping checks that every shard answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		if err := st.Ping(ctx); err != nil {
			return fmt.Errorf("shard %d: %w", k, err)
		}
		return nil
	})
}

// Migrate brings every shard's schema up to date and checks (or, on a
// new database, records) which shard it is. The shards' databases must
// exist: Migrate (the function) creates them.
func (s *Store) Migrate(ctx context.Context) error {
	return s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		if err := st.Migrate(ctx); err != nil {
			return fmt.Errorf("shards: migrate shard %d: %w", k, err)
		}
		return st.ClaimShard(ctx, k, s.m.N)
	})
}

// sum runs count on every shard and adds up the answers.
func (s *Store) sum(ctx context.Context, count func(ctx context.Context, st *sqlstore.Store) (int64, error)) (int64, error) {
	ns := make([]int64, s.m.N)
	err := s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		ns[k], err = count(ctx, st)
		return err
	})
	var total int64
	for _, n := range ns {
		total += n
	}
	return total, err
}

// OutboxBacklog is how many events wait in all the shards' outboxes.
func (s *Store) OutboxBacklog(ctx context.Context) (int64, error) {
	return s.sum(ctx, func(ctx context.Context, st *sqlstore.Store) (int64, error) { return st.OutboxBacklog(ctx) })
}

// OutboxOldest adds up the shards' waiting events and returns the oldest
// one's time among them.
func (s *Store) OutboxOldest(ctx context.Context) (int64, time.Time, error) {
	var mu sync.Mutex
	var total int64
	var oldest time.Time
	err := s.each(ctx, func(ctx context.Context, _ int, st *sqlstore.Store) error {
		n, t, err := st.OutboxOldest(ctx)
		mu.Lock()
		defer mu.Unlock()
		total += n
		if !t.IsZero() && (oldest.IsZero() || t.Before(oldest)) {
			oldest = t
		}
		return err
	})
	return total, oldest, err
}

// RelayOutbox relays up to n events from each shard's outbox in turn. A
// work process runs a relay per shard instead (one Relay on each
// Shard(k)); this serves the tools that relay once.
func (s *Store) RelayOutbox(ctx context.Context, n int, publish func(ctx context.Context, evs []feed.OutboxEvent) error) (int, error) {
	total := 0
	for k := range s.shards {
		got, err := s.Shard(k).RelayOutbox(ctx, n, publish)
		total += got
		if err != nil {
			return total, fmt.Errorf("shard %d: %w", k, err)
		}
	}
	return total, nil
}

func (s *Store) SweepOutbox(ctx context.Context, sentBefore time.Time) (int64, error) {
	return s.sum(ctx, func(ctx context.Context, st *sqlstore.Store) (int64, error) {
		return st.SweepOutbox(ctx, sentBefore)
	})
}

func (s *Store) SweepIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
	return s.sum(ctx, func(ctx context.Context, st *sqlstore.Store) (int64, error) {
		return st.SweepIdempotencyKeys(ctx, now)
	})
}

// MarkPulled marks the pulled authors of every shard (an author's
// follower count is on its shard).
func (s *Store) MarkPulled(ctx context.Context, high int64) (int64, error) {
	return s.sum(ctx, func(ctx context.Context, st *sqlstore.Store) (int64, error) {
		return st.MarkPulled(ctx, high)
	})
}

// ImportPosts stores each post on its shard (an imported post's id
// carries its author's shard, feed.OnShard); results[i] is posts[i]'s.
func (s *Store) ImportPosts(ctx context.Context, posts []feed.Post) ([]feed.ImportResult, error) {
	for _, p := range posts {
		if s.m.Of(p.ID) != s.m.Of(p.AuthorID) {
			return nil, fmt.Errorf("shards: import posts: %w", feed.Errorf(feed.EINVALID, "post id %d does not carry its author %d's shard", p.ID, p.AuthorID))
		}
	}
	return scatter(ctx, s, posts, func(p feed.Post) int64 { return p.AuthorID }, (*sqlstore.Store).ImportPosts)
}

// scatter splits items by the shard of key(item), runs write on each
// shard's share at once, and puts the answers back in the items' order.
// On an error the answers of the shards that succeeded are kept in place
// and the rest are cut, as the one database answers a prefix: the caller
// runs the call again, which the writes allow.
func scatter[T, R any](ctx context.Context, s *Store, items []T, key func(T) int64, write func(*sqlstore.Store, context.Context, []T) ([]R, error)) ([]R, error) {
	type share struct {
		at    []int
		items []T
	}
	groups := map[int]*share{}
	for i, it := range items {
		k := s.m.Of(key(it))
		g := groups[k]
		if g == nil {
			g = &share{}
			groups[k] = g
		}
		g.at = append(g.at, i)
		g.items = append(g.items, it)
	}
	out := make([]R, len(items))
	done := make([]bool, len(items))
	var mu sync.Mutex
	err := s.some(ctx, keys(groups), func(ctx context.Context, k int, st *sqlstore.Store) error {
		res, err := write(st, ctx, groups[k].items)
		mu.Lock()
		defer mu.Unlock()
		for j, r := range res {
			out[groups[k].at[j]] = r
			done[groups[k].at[j]] = true
		}
		return err
	})
	if err != nil {
		for i, d := range done {
			if !d {
				return out[:i], err
			}
		}
	}
	return out, err
}

// The bulk loads of a synthetic graph (feedd bench): users and posts go
// to their shards, the users' handles' claims to the handles' shards
// (handles.go); the follows' two sides are the loader's (BulkLoadFollows).

func (s *Store) BulkCreateUsers(ctx context.Context, users []feed.User) error {
	if err := bulk(ctx, s, users, func(u feed.User) int64 { return u.ID }, (*sqlstore.Store).BulkCreateUsers); err != nil {
		return err
	}
	return s.bulkLoadHandles(ctx, users)
}

func (s *Store) BulkLoadPosts(ctx context.Context, posts []feed.Post) error {
	return bulk(ctx, s, posts, func(p feed.Post) int64 { return p.ID }, (*sqlstore.Store).BulkLoadPosts)
}

// BulkLoadLikes stores the likes on the post's shard, with their count
// and notifications (sqlstore.Store.BulkLoadLikes: no mirror on the
// likers' shards).
func (s *Store) BulkLoadLikes(ctx context.Context, post, author int64, likers []int64, at time.Time) error {
	return s.Shard(s.m.Of(post)).BulkLoadLikes(ctx, post, author, likers, at)
}

// BulkLoadFollows stores each edge on its follower's shard and, when the
// followee lives elsewhere, its mirror on the followee's shard, without
// touching counts (the loader sets them, as on one database).
func (s *Store) BulkLoadFollows(ctx context.Context, edges [][2]int64) error {
	groups := map[int][][2]int64{}
	for _, e := range edges {
		kf, ke := s.m.Of(e[0]), s.m.Of(e[1])
		groups[kf] = append(groups[kf], e)
		if ke != kf {
			groups[ke] = append(groups[ke], e)
		}
	}
	return s.some(ctx, keys(groups), func(ctx context.Context, k int, st *sqlstore.Store) error {
		return st.BulkLoadFollows(ctx, groups[k])
	})
}

func (s *Store) BulkLoadDone(ctx context.Context) error {
	return s.each(ctx, func(ctx context.Context, _ int, st *sqlstore.Store) error { return st.BulkLoadDone(ctx) })
}

// bulk is a bulk load split by shard.
func bulk[T any](ctx context.Context, s *Store, items []T, key func(T) int64, load func(*sqlstore.Store, context.Context, []T) error) error {
	groups := map[int][]T{}
	for _, it := range items {
		k := s.m.Of(key(it))
		groups[k] = append(groups[k], it)
	}
	return s.some(ctx, keys(groups), func(ctx context.Context, k int, st *sqlstore.Store) error {
		return load(st, ctx, groups[k])
	})
}
