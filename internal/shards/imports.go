package shards

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// ImportFollows adds the edges that do not exist yet, with exact counts
// (sqlstore.Store.ImportFollows): grouped by the follower's shard, where
// each group's truth and journal commit in one transaction, then the
// mirrors synced onto the followees' shards, which moves their follower
// counts by the rows that really changed. A re-run changes nothing, and
// finishes the mirrors of a run that died before its syncs.
func (s *Store) ImportFollows(ctx context.Context, edges [][2]int64) (feed.FollowImport, error) {
	res := feed.FollowImport{Outcomes: make([]feed.ImportOutcome, len(edges))}
	groups := map[int][]int{} // shard → places in edges
	var foreign []int64
	for i, e := range edges {
		k := s.m.Of(e[0])
		groups[k] = append(groups[k], i)
		if s.m.Of(e[1]) != k {
			foreign = append(foreign, e[1])
		}
	}
	live, err := s.liveOn(ctx, sortedUnique(foreign))
	if err != nil {
		return feed.FollowImport{}, fmt.Errorf("shards: import %d follows: %w", len(edges), err)
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		part := make([][2]int64, len(groups[k]))
		for j, i := range groups[k] {
			part[j] = edges[i]
		}
		var r feed.FollowImport
		var syncs []sqlstore.Sync
		err := s.write(ctx, k, func(st *sqlstore.Store) (err error) {
			r, syncs, err = st.ImportFollowsOn(ctx, s.home(k), part, live)
			return err
		})
		if err != nil {
			return feed.FollowImport{}, fmt.Errorf("shards: import %d follows on shard %d: %w", len(part), k, err)
		}
		for j, i := range groups[k] {
			res.Outcomes[i] = r.Outcomes[j]
		}
		res.Followers = append(res.Followers, r.Followers...)
		res.Followees = append(res.Followees, r.Followees...)
		// Every edge to another shard is synced, new or not: a re-run
		// repairs the mirrors of a run cut short before its syncs.
		var pairs []sqlstore.Sync
		for _, e := range part {
			if s.m.Of(e[1]) != k {
				pairs = append(pairs, sqlstore.Sync{Kind: sqlstore.SyncFollow, A: e[0], B: e[1]})
			}
		}
		if err := s.syncNow(ctx, k, syncs, pairs); err != nil {
			errs = append(errs, err)
		}
	}
	res.Followers = sortedUnique(res.Followers)
	res.Followees = sortedUnique(res.Followees)
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("shards: import of %d follows is made; some mirrors wait for the repairer: %w", len(edges), err)
	}
	return res, nil
}

// ImportLikes makes each user like each post unless the pair has a row
// (sqlstore.Store.ImportLikes): grouped by the post's shard, where the
// truth and its count move, then the likers' mirrors synced. A re-run
// changes nothing and finishes the mirrors of a run cut short.
func (s *Store) ImportLikes(ctx context.Context, likes [][2]int64) (feed.LikeImport, error) {
	res := feed.LikeImport{Outcomes: make([]feed.ImportOutcome, len(likes)), Deltas: map[int64]int64{}, Tallies: map[int64]feed.LikeTally{}}
	groups := map[int][]int{}
	var foreign []int64
	for i, l := range likes {
		k := s.m.Of(l[1])
		groups[k] = append(groups[k], i)
		if s.m.Of(l[0]) != k {
			foreign = append(foreign, l[0])
		}
	}
	live, err := s.liveOn(ctx, sortedUnique(foreign))
	if err != nil {
		return feed.LikeImport{}, fmt.Errorf("shards: import %d likes: %w", len(likes), err)
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		part := make([][2]int64, len(groups[k]))
		for j, i := range groups[k] {
			part[j] = likes[i]
		}
		var r feed.LikeImport
		var syncs []sqlstore.Sync
		err := s.write(ctx, k, func(st *sqlstore.Store) (err error) {
			r, syncs, err = st.ImportLikesOn(ctx, s.home(k), part, live)
			return err
		})
		if err != nil {
			return feed.LikeImport{}, fmt.Errorf("shards: import %d likes on shard %d: %w", len(part), k, err)
		}
		for j, i := range groups[k] {
			res.Outcomes[i] = r.Outcomes[j]
		}
		res.Liked += r.Liked
		maps.Copy(res.Deltas, r.Deltas)
		maps.Copy(res.Tallies, r.Tallies)
		res.Users = append(res.Users, r.Users...)
		var pairs []sqlstore.Sync
		for j, l := range part {
			if s.m.Of(l[0]) != k && r.Outcomes[j] == feed.Imported {
				pairs = append(pairs, sqlstore.Sync{Kind: sqlstore.SyncLike, A: l[0], B: l[1]})
			}
		}
		if err := s.syncNow(ctx, k, syncs, pairs); err != nil {
			errs = append(errs, err)
		}
	}
	res.Users = sortedUnique(res.Users)
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("shards: import of %d likes is made; some mirrors wait for the repairer: %w", len(likes), err)
	}
	return res, nil
}

// syncNow syncs pairs, the pairs of a write on shard k to other shards,
// whether or not they are journaled, and then deletes journaled, the
// whole rows the write journaled for them (with their Due): an import's
// batch writes one per user, and needs no reading back. A write that
// journaled nothing (a re-run, or likes that met rows of theirs) looks
// its pairs' own rows up, to delete those it synced.
func (s *Store) syncNow(ctx context.Context, k int, journaled, pairs []sqlstore.Sync) error {
	if len(journaled) == 0 && len(pairs) > 0 {
		pending, err := s.Shard(k).PendingSyncs(ctx, pairs)
		if err != nil {
			return err
		}
		due := map[[3]int64]int64{}
		for _, y := range pending {
			due[syncKey(y)] = y.Due
		}
		for i, y := range pairs {
			pairs[i].Due = due[syncKey(y)]
		}
	}
	if len(pairs) == 0 && len(journaled) == 0 {
		return nil
	}
	return s.syncPairs(ctx, k, pairs, journaled)
}

func sortedUnique(ids []int64) []int64 {
	slices.Sort(ids)
	return slices.Compact(ids)
}
