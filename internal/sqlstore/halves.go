package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// The truth halves of the writes between users of two shards
// (internal/shards). Each runs on the shard of the user who acts, locks
// that user only (the other lives elsewhere: the caller checked that they
// exist), and journals the sync of the other shard's mirror in the same
// transaction (mirror.go). Counts move on this side only: an UPDATE of
// the other user's row here matches no row.

// FollowOut is Follow on the follower's shard when the followee lives on
// another one: the edge, the follower's following_count, and the journal
// row. ENOTFOUND when the follower does not exist, EBLOCKED when a block
// stands either way (a block by the followee is mirrored here).
func (s *Store) FollowOut(ctx context.Context, follower, followee int64) (bool, error) {
	if err := feed.CheckNotSelf("follow", follower, followee); err != nil {
		return false, fmt.Errorf("sqlstore: follow %d -> %d: %w", follower, followee, err)
	}
	var added bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		added = false
		if live, err := s.lockUser(ctx, tx, follower); err != nil || !live {
			if err == nil {
				err = feed.Errorf(feed.ENOTFOUND, "user %d does not exist", follower)
			}
			return err
		}
		if blocked, err := blockedEitherWay(ctx, tx, follower, followee); err != nil || blocked {
			if err == nil {
				err = feed.Errorf(feed.EBLOCKED, "a block between you and user %d forbids following", followee)
			}
			return err
		}
		var err error
		if added, err = insertedRow(tx.ExecContext(ctx, s.d.insertFollow, follower, followee, millis(time.Now()))); err != nil || !added {
			return err
		}
		if err := addToCounts(ctx, tx, follower, followee, 1); err != nil {
			return err
		}
		return s.journal(ctx, tx, []Sync{{Kind: SyncFollow, A: follower, B: followee}})
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: follow %d -> %d: %w", follower, followee, err)
	}
	return added, nil
}

// UnfollowOut is Unfollow on the follower's shard when the followee lives
// on another one.
func (s *Store) UnfollowOut(ctx context.Context, follower, followee int64) (bool, error) {
	var removed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := s.lockUser(ctx, tx, follower); err != nil {
			return err
		}
		var err error
		if removed, err = s.removeEdge(ctx, tx, follower, followee); err != nil || !removed {
			return err
		}
		return s.journal(ctx, tx, []Sync{{Kind: SyncFollow, A: follower, B: followee}})
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: unfollow %d -> %d: %w", follower, followee, err)
	}
	return removed, nil
}

// BlockOut is Block on the blocker's shard when the blocked user lives on
// another one: the block, and the removal of the blocker's edge to the
// blocked user (whose truth is here), both journaled. The edge the other
// way is the blocked user's shard's to remove, after the block's mirror
// reached it (shards.Store.Block). ENOTFOUND when the blocker does not
// exist.
func (s *Store) BlockOut(ctx context.Context, blocker, blocked int64) (bool, error) {
	if err := feed.CheckNotSelf("mute or block", blocker, blocked); err != nil {
		return false, fmt.Errorf("sqlstore: block %d -> %d: %w", blocker, blocked, err)
	}
	var added bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		added = false
		if live, err := s.lockUser(ctx, tx, blocker); err != nil || !live {
			if err == nil {
				err = feed.Errorf(feed.ENOTFOUND, "user %d does not exist", blocker)
			}
			return err
		}
		var err error
		if added, err = insertedRow(tx.ExecContext(ctx,
			"INSERT INTO blocks (blocker_id, blocked_id, created_at) VALUES (?, ?, ?)"+s.d.keepExisting,
			blocker, blocked, millis(time.Now()))); err != nil {
			return err
		}
		var syncs []Sync
		if added {
			syncs = append(syncs, Sync{Kind: SyncBlock, A: blocker, B: blocked})
		}
		removed, err := s.removeEdge(ctx, tx, blocker, blocked)
		if err != nil {
			return err
		}
		if removed {
			syncs = append(syncs, Sync{Kind: SyncFollow, A: blocker, B: blocked})
		}
		return s.journal(ctx, tx, syncs)
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: block %d -> %d: %w", blocker, blocked, err)
	}
	return added, nil
}

// UnblockOut is Unblock on the blocker's shard when the blocked user lives
// on another one.
func (s *Store) UnblockOut(ctx context.Context, blocker, blocked int64) (bool, error) {
	var removed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := s.lockUser(ctx, tx, blocker); err != nil {
			return err
		}
		var err error
		if removed, err = insertedRow(tx.ExecContext(ctx,
			"DELETE FROM blocks WHERE blocker_id = ? AND blocked_id = ?", blocker, blocked)); err != nil || !removed {
			return err
		}
		return s.journal(ctx, tx, []Sync{{Kind: SyncBlock, A: blocker, B: blocked}})
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: unblock %d -> %d: %w", blocker, blocked, err)
	}
	return removed, nil
}

// MuteOut is Mute on the muter's shard when the target lives on another
// one (the caller checked that the target exists). A mute has no mirror:
// only the muter's reads look at it.
func (s *Store) MuteOut(ctx context.Context, user, target int64) (bool, error) {
	if err := feed.CheckNotSelf("mute or block", user, target); err != nil {
		return false, fmt.Errorf("sqlstore: mute %d -> %d: %w", user, target, err)
	}
	var added bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		if live, err := s.lockUser(ctx, tx, user); err != nil || !live {
			if err == nil {
				err = feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
			}
			return err
		}
		var err error
		added, err = insertedRow(tx.ExecContext(ctx,
			"INSERT INTO mutes (user_id, target_id, created_at) VALUES (?, ?, ?)"+s.d.keepExisting,
			user, target, millis(time.Now())))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: mute %d -> %d: %w", user, target, err)
	}
	return added, nil
}

// LikedPostIDs returns up to n ids of the posts user likes above after
// (0: from the first, negative ids included), ascending: LikedPosts
// without the join to posts, for a shard whose likes rows mirror posts
// that live on other shards.
func (s *Store) LikedPostIDs(ctx context.Context, user, after int64, n int) ([]int64, error) {
	if n <= 0 {
		return []int64{}, nil
	}
	ids, err := s.queryIDs(ctx, n, `SELECT post_id FROM likes
		WHERE user_id = ? AND post_id > ? AND liked = 1 ORDER BY post_id LIMIT ?`, user, lowerBound(after), n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: posts %d likes after %d: %w", user, after, err)
	}
	return ids, nil
}
