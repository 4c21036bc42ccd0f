package shards

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// Block makes blocker block blocked and removes the follow edges between
// them both ways (sqlstore.Store.Block). Between shards, in this order:
// the block commits on the blocker's shard with the removal of the
// blocker's edge (both journaled); then the block's mirror reaches the
// blocked user's shard, in one transaction with the removal of the
// blocked user's edge to the blocker (journaled there: its mirror is the
// blocker's follower row); then both edges' mirrors are synced. A follow
// racing the block either meets the block (on the blocker's shard under
// the blocker's lock, on the blocked's under the blocked user's lock,
// which the mirror's sync takes) and fails with EBLOCKED, or was made
// before and is removed. A block whose writer died after its commit is
// finished by the repairer, edges included. A repeated Block
// removes the edges again, so a retry after a failure finishes the job.
func (s *Store) Block(ctx context.Context, blocker, blocked int64) (bool, error) {
	if err := feed.CheckNotSelf("mute or block", blocker, blocked); err != nil {
		return false, fmt.Errorf("shards: block %d -> %d: %w", blocker, blocked, err)
	}
	kb, kd := s.m.Of(blocker), s.m.Of(blocked)
	if kb == kd {
		return s.writePair(ctx, kb, (*sqlstore.Store).Block, blocker, blocked)
	}
	if err := s.userOn(ctx, blocked); err != nil {
		return false, fmt.Errorf("shards: block %d -> %d: %w", blocker, blocked, err)
	}
	added, err := s.writePair(ctx, kb, (*sqlstore.Store).BlockOut, blocker, blocked)
	if err != nil {
		return false, err
	}
	fail := func(err error) (bool, error) {
		return added, fmt.Errorf("shards: block %d -> %d is made; its mirror and edges wait for the repairer or a retry: %w", blocker, blocked, err)
	}
	if err := s.settle(ctx, kb, []sqlstore.Sync{{Kind: sqlstore.SyncBlock, A: blocker, B: blocked}}); err != nil {
		return fail(err)
	}
	if err := s.settle(ctx, kd, []sqlstore.Sync{{Kind: sqlstore.SyncFollow, A: blocked, B: blocker}}); err != nil {
		return fail(err)
	}
	if err := s.settle(ctx, kb, []sqlstore.Sync{{Kind: sqlstore.SyncFollow, A: blocker, B: blocked}}); err != nil {
		return fail(err)
	}
	return added, nil
}

// Unblock removes blocker's block of blocked (sqlstore.Store.Unblock).
func (s *Store) Unblock(ctx context.Context, blocker, blocked int64) (bool, error) {
	k := s.m.Of(blocker)
	if k == s.m.Of(blocked) {
		return s.writePair(ctx, k, (*sqlstore.Store).Unblock, blocker, blocked)
	}
	removed, err := s.writePair(ctx, k, (*sqlstore.Store).UnblockOut, blocker, blocked)
	if err != nil {
		return false, err
	}
	if err := s.settle(ctx, k, []sqlstore.Sync{{Kind: sqlstore.SyncBlock, A: blocker, B: blocked}}); err != nil {
		return removed, fmt.Errorf("shards: unblock %d -> %d is made; its mirror waits for the repairer: %w", blocker, blocked, err)
	}
	return removed, nil
}

// Mute makes user mute target (sqlstore.Store.Mute). A mute lives on the
// muter's shard only: nobody else's reads look at it.
func (s *Store) Mute(ctx context.Context, user, target int64) (bool, error) {
	k := s.m.Of(user)
	if k == s.m.Of(target) {
		return s.writePair(ctx, k, (*sqlstore.Store).Mute, user, target)
	}
	if err := feed.CheckNotSelf("mute or block", user, target); err != nil {
		return false, fmt.Errorf("shards: mute %d -> %d: %w", user, target, err)
	}
	if err := s.userOn(ctx, target); err != nil {
		return false, fmt.Errorf("shards: mute %d -> %d: %w", user, target, err)
	}
	return s.writePair(ctx, k, (*sqlstore.Store).MuteOut, user, target)
}

// Unmute removes user's mute of target (sqlstore.Store.Unmute).
func (s *Store) Unmute(ctx context.Context, user, target int64) (bool, error) {
	return s.writePair(ctx, s.m.Of(user), (*sqlstore.Store).Unmute, user, target)
}
