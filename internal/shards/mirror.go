package shards

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// Truth and mirror. A write between users of two shards (a follow, a
// block, a like of a post of another shard) has its truth on one shard
// and a mirror on the other:
//
//   - a follow f→e: truth on f's shard (the follows row, f's
//     following_count), mirror on e's (the same row, counted in e's
//     follower_count), so that e's followers, e's fan-out and the home
//     feed's join all read one shard;
//   - a block: truth on the blocker's shard, mirror on the blocked's, so
//     that a follow and the hidden set on either side see it;
//   - a like: truth on the post's shard (the likes row and the post's
//     count move in one transaction, so counts stay exact), mirror on the
//     liker's, for the liker's lists.
//
// Users of one shard share one row, written as on an unsharded database.
//
// The truth commits with a journal row (shard_syncs) in one transaction;
// the router then syncs the mirror and deletes the row (settle). A sync
// reads the truth anew under the mirror user's lock and makes the mirror
// agree, so syncs are idempotent and their order does not matter: the
// last one sees the last change. A process that dies between the commit
// and the sync leaves the row, which a repairer (SyncDue, RunSyncs) on a
// work process runs once it is due (sqlstore.SyncDelay). An import's
// batch journals one row per follower or liker (sqlstore.SyncFollowsOf,
// SyncLikesOf) instead of one per edge, deletes it once it synced the
// batch's edges, and a repairer that finds one left syncs every edge of
// that user out of the shard (runSyncs): the same guarantee for a
// thirtieth of the journal's rows.
//
// What a reader sees meanwhile: the truth side at once (f's following
// list and count, the post's like count); the mirror side once the sync
// ran, normally before the write's call returns, at worst SyncDelay plus
// a repairer's period later (e's follower list and count and so the
// fan-out of e's next posts to f, the liker's list of likes, the block
// on the blocked user's side, which the block's own call waits for).

// settle runs the syncs a write on shard k journaled, at once, and
// deletes their journal rows. Pairs without a row need nothing: someone
// who read the truth after the write synced them.
func (s *Store) settle(ctx context.Context, k int, syncs []sqlstore.Sync) error {
	if len(syncs) == 0 {
		return nil
	}
	pending, err := s.Shard(k).PendingSyncs(ctx, syncs)
	if err != nil {
		return err
	}
	return s.runSyncs(ctx, k, pending)
}

// runSyncs syncs the mirrors of journal rows of shard k, whole rows
// (sqlstore.Sync.Whole) turned into the pairs they stand for, then
// deletes them (syncPairs).
func (s *Store) runSyncs(ctx context.Context, k int, syncs []sqlstore.Sync) error {
	var whole, pairs []sqlstore.Sync
	for _, y := range syncs {
		if y.Whole() {
			whole = append(whole, y)
		} else {
			pairs = append(pairs, y)
		}
	}
	if len(whole) > 0 {
		more, err := s.Shard(k).ExpandSyncs(ctx, s.home(k), whole)
		if err != nil {
			return fmt.Errorf("shards: sync the journal of shard %d: %w", k, err)
		}
		// A pair that has its own row keeps it, with its Due.
		has := map[[3]int64]bool{}
		for _, y := range pairs {
			has[syncKey(y)] = true
		}
		for _, y := range more {
			if !has[syncKey(y)] {
				pairs = append(pairs, y)
			}
		}
	}
	return s.syncPairs(ctx, k, pairs, whole)
}

func syncKey(y sqlstore.Sync) [3]int64 { return [3]int64{int64(y.Kind), y.A, y.B} }

// syncPairs syncs the mirrors of pairs, whose truth is on shard k, one
// batch per mirror shard, drops the orphans they find and deletes the
// pairs' journal rows; then, if every batch succeeded, the whole rows
// that stood for them. A batch that fails leaves its rows for the
// repairer, and is the error.
func (s *Store) syncPairs(ctx context.Context, k int, syncs, whole []sqlstore.Sync) error {
	truth := s.Shard(k)
	byMirror := map[int][]sqlstore.Sync{}
	for _, y := range syncs {
		m := s.m.Of(y.MirrorUser())
		byMirror[m] = append(byMirror[m], y)
	}
	var errs []error
	for _, m := range slices.Sorted(maps.Keys(byMirror)) {
		batch := byMirror[m]
		var orphans []sqlstore.Sync
		err := s.write(ctx, m, func(mirror *sqlstore.Store) (err error) {
			orphans, err = mirror.SyncMirror(ctx, truth, batch)
			return err
		})
		if err == nil && len(orphans) > 0 {
			err = s.write(ctx, k, func(truth *sqlstore.Store) error { return truth.DropOrphans(ctx, orphans) })
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("shards: sync %d mirrors of shard %d on shard %d: %w", len(batch), k, m, err))
			continue
		}
		// The mirrors agree: a journal row that stays (a failed delete)
		// costs the repairer one sync that changes nothing.
		_ = truth.DoneSyncs(ctx, batch)
	}
	if len(errs) == 0 && len(whole) > 0 {
		_ = truth.DoneSyncs(ctx, whole)
	}
	return errors.Join(errs...)
}

// syncBatch bounds the journal rows one repairer pass claims per shard.
const syncBatch = 500

// syncLease is how long a claimed journal row is left to its repairer.
const syncLease = 30 * time.Second

// SyncDue runs, on every shard, the journal rows that are due (their
// writer died or its sync failed), once, and returns how many it ran.
func (s *Store) SyncDue(ctx context.Context) (int, error) {
	return s.syncDue(ctx, time.Now())
}

func (s *Store) syncDue(ctx context.Context, now time.Time) (int, error) {
	var total atomic.Int64
	// A sync's failure is often the mirror shard's, not shard k's: it is
	// kept out of what each notes of shard k's health.
	syncErrs := make([]error, s.m.N)
	err := s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		for {
			claimed, err := st.ClaimSyncs(ctx, now, syncBatch, syncLease)
			if err != nil || len(claimed) == 0 {
				return err
			}
			if err := s.runSyncs(ctx, k, claimed); err != nil {
				syncErrs[k] = err
				return nil
			}
			total.Add(int64(len(claimed)))
			if len(claimed) < syncBatch {
				return nil
			}
		}
	})
	return int(total.Load()), errors.Join(err, errors.Join(syncErrs...))
}

// RunSyncs is the repairer of a work process: it runs SyncDue every
// period until ctx ends. Several processes may run it: each claims
// different rows.
func (s *Store) RunSyncs(ctx context.Context, every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(cmp.Or(every, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.SyncDue(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Warn("shards: repairing mirrors failed; retrying", "err", err)
		}
		if n > 0 {
			logger.Info("shards: repaired mirrors left behind", "syncs", n)
		}
	}
}

// userOn checks that user exists on its shard (ENOTFOUND otherwise): the
// other end of a write whose truth lives on another shard.
func (s *Store) userOn(ctx context.Context, user int64) error {
	_, err := s.of(user).User(ctx, user)
	return err
}

// liveOn returns which of ids exist, asking each one's shard.
func (s *Store) liveOn(ctx context.Context, ids []int64) (map[int64]bool, error) {
	groups := s.byShard(ids)
	found := make([]map[int64]feed.User, s.m.N)
	err := s.some(ctx, slices.Sorted(maps.Keys(groups)), func(ctx context.Context, k int, st *sqlstore.Store) error {
		var err error
		found[k], err = st.Users(ctx, groups[k])
		return err
	})
	if err != nil {
		return nil, err
	}
	live := make(map[int64]bool, len(ids))
	for _, users := range found {
		for id := range users {
			live[id] = true
		}
	}
	return live, nil
}

// home returns shard k's place, for the sqlstore halves.
func (s *Store) home(k int) sqlstore.Shard { return sqlstore.Shard{K: k, N: s.m.N} }
