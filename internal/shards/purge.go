package shards

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// A deleted user's purge is one job on their shard (user_purges: the
// claim, the lease and the progress live there) that removes their rows
// from every shard. DeleteUser marks the user deleted on their shard
// first, so from then on no sync puts back a mirror naming them (a sync
// keeps a mirror only while both users live), and no new cross-shard
// write reaches them (the router checks the other user exists).

// DeleteUser marks user deleted and records the purge job on their shard
// (sqlstore.Store.DeleteUser).
func (s *Store) DeleteUser(ctx context.Context, user int64) (p feed.Purge, deleted bool, err error) {
	err = s.write(ctx, s.m.Of(user), func(st *sqlstore.Store) (err error) {
		p, deleted, err = st.DeleteUser(ctx, user)
		return err
	})
	return p, deleted, err
}

// Purge returns the state of user's last deletion, from their shard.
func (s *Store) Purge(ctx context.Context, user int64) (feed.Purge, error) {
	return s.of(user).Purge(ctx, user)
}

// ClaimPurge claims an unfinished purge on any shard
// (sqlstore.Store.ClaimPurge), trying the shards from a random one so
// that workers spread over them.
func (s *Store) ClaimPurge(ctx context.Context, owner string, lease time.Duration) (int64, bool, error) {
	start := rand.N(s.m.N)
	for i := range s.m.N {
		user, ok, err := s.Shard((start+i)%s.m.N).ClaimPurge(ctx, owner, lease)
		if err != nil || ok {
			return user, ok, err
		}
	}
	return 0, false, nil
}

// PurgeBatch runs one batch of user's purge (sqlstore.Store.PurgeBatch):
// first on the user's shard, which holds every edge and like of theirs
// (the truth of their follows and likes, the mirrors of their followers'
// follows and of their likes of other shards' posts), so that the job's
// progress counts each once; then on the other shards, whose rows naming
// the user (the truth of their followers' follows, the mirrors of their
// follows, blocks and likes) go with the counts of those shards' users and
// posts; and last on the user's shard again, which finishes the job once
// nothing is left there. Each call renews the lease on the user's shard
// first, and does nothing else (sqlstore.ErrLeaseLost) if owner lost it.
func (s *Store) PurgeBatch(ctx context.Context, user int64, owner string, lease time.Duration) (feed.PurgeBatch, error) {
	home := s.m.Of(user)
	r, did, err := s.Shard(home).PurgeStep(ctx, user, owner, lease)
	if err != nil || did {
		return r, err
	}
	for i := 1; i < s.m.N; i++ {
		k := (home + i) % s.m.N
		r, did, err := s.Shard(k).PurgeElsewhere(ctx, user)
		if err != nil {
			return feed.PurgeBatch{}, fmt.Errorf("shards: purge of %d on shard %d: %w", user, k, err)
		}
		if did {
			return r, nil
		}
	}
	// The user's handle's claim, on its own shard, goes once the purge
	// removed their row (if this fails, the claim is stale, and the next
	// user who wants the handle takes it over).
	h, err := s.Shard(home).HandleOf(ctx, user)
	if err != nil {
		return feed.PurgeBatch{}, err
	}
	r, err = s.Shard(home).PurgeBatch(ctx, user, owner, lease)
	if err == nil && r.Done && h != "" {
		err = s.releaseDeleted(ctx, h, user)
	}
	return r, err
}
