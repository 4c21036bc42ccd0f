package shards

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// Follow makes follower follow followee (sqlstore.Store.Follow). Between
// shards, the edge's truth commits on the follower's shard, and the
// followee's side (the mirror row, the follower count) is synced before
// Follow returns; an error after the commit leaves the journal row to the
// repairer, and a retry, which is idempotent, syncs at once.
func (s *Store) Follow(ctx context.Context, follower, followee int64) (bool, error) {
	if err := feed.CheckNotSelf("follow", follower, followee); err != nil {
		return false, fmt.Errorf("shards: follow %d -> %d: %w", follower, followee, err)
	}
	k := s.m.Of(follower)
	if k == s.m.Of(followee) {
		return s.writePair(ctx, k, (*sqlstore.Store).Follow, follower, followee)
	}
	if err := s.userOn(ctx, followee); err != nil {
		return false, fmt.Errorf("shards: follow %d -> %d: %w", follower, followee, err)
	}
	added, err := s.writePair(ctx, k, (*sqlstore.Store).FollowOut, follower, followee)
	if err != nil {
		return false, err
	}
	// Settled whether or not the edge is new: a repeated follow after a
	// failed sync finishes it.
	if err := s.settle(ctx, k, []sqlstore.Sync{{Kind: sqlstore.SyncFollow, A: follower, B: followee}}); err != nil {
		return added, fmt.Errorf("shards: follow %d -> %d is made; its mirror waits for the repairer: %w", follower, followee, err)
	}
	return added, nil
}

// Unfollow removes the edge from follower to followee (sqlstore.Store.Unfollow).
func (s *Store) Unfollow(ctx context.Context, follower, followee int64) (bool, error) {
	k := s.m.Of(follower)
	if k == s.m.Of(followee) {
		return s.writePair(ctx, k, (*sqlstore.Store).Unfollow, follower, followee)
	}
	removed, err := s.writePair(ctx, k, (*sqlstore.Store).UnfollowOut, follower, followee)
	if err != nil {
		return false, err
	}
	if err := s.settle(ctx, k, []sqlstore.Sync{{Kind: sqlstore.SyncFollow, A: follower, B: followee}}); err != nil {
		return removed, fmt.Errorf("shards: unfollow %d -> %d is made; its mirror waits for the repairer: %w", follower, followee, err)
	}
	return removed, nil
}

// FollowBatch is sqlstore.Store.FollowBatch over shards: the pairs are
// grouped by their follower's shard, each group one transaction there
// (the outcomes, in the order given, are those of the single calls, as
// on one database), and the groups' mirrors are synced after. The batch
// is not one transaction any more: a failure in one group leaves the
// groups before it done.
func (s *Store) FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) (followed, unfollowed []string, err error) {
	if err := feed.CheckFollowBatch(follow, unfollow); err != nil {
		return nil, nil, fmt.Errorf("shards: follow batch: %w", err)
	}
	followed, unfollowed = make([]string, len(follow)), make([]string, len(unfollow))
	type group struct {
		follow, unfollow []feed.Edge
		fi, ui           []int // the pairs' places in the batch
	}
	groups := map[int]*group{}
	at := func(e feed.Edge) *group {
		k := s.m.Of(e.Follower)
		if groups[k] == nil {
			groups[k] = &group{}
		}
		return groups[k]
	}
	var foreign []int64
	for i, e := range follow {
		g := at(e)
		g.follow, g.fi = append(g.follow, e), append(g.fi, i)
		if s.m.Of(e.Followee) != s.m.Of(e.Follower) {
			foreign = append(foreign, e.Followee)
		}
	}
	for i, e := range unfollow {
		g := at(e)
		g.unfollow, g.ui = append(g.unfollow, e), append(g.ui, i)
		if s.m.Of(e.Followee) != s.m.Of(e.Follower) {
			foreign = append(foreign, e.Followee)
		}
	}
	live, err := s.liveOn(ctx, foreign)
	if err != nil {
		return nil, nil, fmt.Errorf("shards: follow batch: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		var f, u []string
		var syncs []sqlstore.Sync
		err := s.write(ctx, k, func(st *sqlstore.Store) (err error) {
			f, u, syncs, err = st.FollowBatchOn(ctx, s.home(k), g.follow, g.unfollow, live)
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("shards: follow batch on shard %d: %w", k, err)
		}
		for j, i := range g.fi {
			followed[i] = f[j]
		}
		for j, i := range g.ui {
			unfollowed[i] = u[j]
		}
		if err := s.settle(ctx, k, syncs); err != nil {
			return nil, nil, fmt.Errorf("shards: follow batch on shard %d is made; its mirrors wait for the repairer: %w", k, err)
		}
	}
	return followed, unfollowed, nil
}
