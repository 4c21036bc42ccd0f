package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Mute makes user mute target and reports whether the mute is new. A
// missing user is ENOTFOUND; muting oneself is EINVALID.
func (s *Store) Mute(ctx context.Context, user, target int64) (bool, error) {
	var added bool
	err := s.relate(ctx, user, target, func(tx *sql.Tx) error {
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

// Unmute removes user's mute of target, if any, and reports whether
// there was one.
func (s *Store) Unmute(ctx context.Context, user, target int64) (bool, error) {
	removed, err := insertedRow(s.db.ExecContext(ctx, "DELETE FROM mutes WHERE user_id = ? AND target_id = ?", user, target))
	if err != nil {
		return false, fmt.Errorf("sqlstore: unmute %d -> %d: %w", user, target, err)
	}
	return removed, nil
}

// Block makes blocker block blocked and, in the same transaction and
// through the same path as Unfollow, removes the follow edges between
// them both ways, so that the counts stay exact. It reports whether the
// block is new. A missing user is ENOTFOUND; blocking oneself is EINVALID.
// While the block stands, Follow between the two fails with EBLOCKED.
func (s *Store) Block(ctx context.Context, blocker, blocked int64) (bool, error) {
	var added bool
	err := s.relate(ctx, blocker, blocked, func(tx *sql.Tx) error {
		var err error
		added, err = insertedRow(tx.ExecContext(ctx,
			"INSERT INTO blocks (blocker_id, blocked_id, created_at) VALUES (?, ?, ?)"+s.d.keepExisting,
			blocker, blocked, millis(time.Now())))
		if err != nil {
			return err
		}
		if _, err := s.removeEdge(ctx, tx, blocker, blocked); err != nil {
			return err
		}
		_, err = s.removeEdge(ctx, tx, blocked, blocker)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: block %d -> %d: %w", blocker, blocked, err)
	}
	return added, nil
}

// Unblock removes blocker's block of blocked, if any, and reports whether
// there was one. The follow edges the block removed stay removed.
func (s *Store) Unblock(ctx context.Context, blocker, blocked int64) (bool, error) {
	var removed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		// The users' locks order it with Follow, like Block.
		if _, err := s.lockUsers(ctx, tx, blocker, blocked); err != nil {
			return err
		}
		var err error
		removed, err = insertedRow(tx.ExecContext(ctx,
			"DELETE FROM blocks WHERE blocker_id = ? AND blocked_id = ?", blocker, blocked))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: unblock %d -> %d: %w", blocker, blocked, err)
	}
	return removed, nil
}

// relate runs fn in a write transaction holding both users' locks, after
// checking that both exist and differ.
func (s *Store) relate(ctx context.Context, user, target int64, fn func(tx *sql.Tx) error) error {
	if err := feed.CheckNotSelf("mute or block", user, target); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		found, err := s.lockUsers(ctx, tx, user, target)
		if err != nil {
			return err
		}
		for _, id := range []int64{user, target} {
			if !found[id] {
				return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", id)
			}
		}
		return fn(tx)
	})
}

// insertedRow reports whether an INSERT or DELETE changed exactly one row.
func insertedRow(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// blockedEitherWay reports whether a or b blocks the other.
func blockedEitherWay(ctx context.Context, tx *sql.Tx, a, b int64) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM blocks
		WHERE (blocker_id = ? AND blocked_id = ?) OR (blocker_id = ? AND blocked_id = ?)`, a, b, b, a).Scan(&n)
	return n > 0, err
}

// Mutes returns up to n ids of the users user mutes above after, in
// ascending order: pass the last id of a page as the next page's after.
func (s *Store) Mutes(ctx context.Context, user, after int64, n int) ([]int64, error) {
	if n <= 0 {
		return []int64{}, nil
	}
	ids, err := s.queryIDs(ctx, n, `SELECT target_id FROM mutes
		WHERE user_id = ? AND target_id > ? ORDER BY target_id LIMIT ?`, user, after, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: mutes of %d after %d: %w", user, after, err)
	}
	return ids, nil
}

// Blocks returns up to n ids of the users user blocks above after, in
// ascending order.
func (s *Store) Blocks(ctx context.Context, user, after int64, n int) ([]int64, error) {
	if n <= 0 {
		return []int64{}, nil
	}
	ids, err := s.queryIDs(ctx, n, `SELECT blocked_id FROM blocks
		WHERE blocker_id = ? AND blocked_id > ? ORDER BY blocked_id LIMIT ?`, user, after, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: blocks of %d after %d: %w", user, after, err)
	}
	return ids, nil
}

// Hidden returns what user must not see: the users user mutes, the users
// user blocks or is blocked by, and the members of user's exclusive lists
// (in their home feed only), with user's rule for replies in the home
// feed (feed.Hidden carries it). It reads the primary, not a replica, so that
// a read right after a mute sees it. Cost: one statement of four
// primary-key range reads, one row per mute, block or exclusive
// membership.
func (s *Store) Hidden(ctx context.Context, user int64) (feed.Hidden, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT 0, target_id FROM mutes WHERE user_id = ?
		UNION ALL SELECT 1, blocked_id FROM blocks WHERE blocker_id = ?
		UNION ALL SELECT 1, blocker_id FROM blocks WHERE blocked_id = ?
		UNION ALL SELECT 2, m.member_id FROM list_members m JOIN lists l ON l.owner_id = m.owner_id AND l.id = m.list_id
			WHERE m.owner_id = ? AND l.exclusive
		UNION ALL SELECT 3, home_replies FROM users WHERE id = ? AND home_replies IS NOT NULL
		UNION ALL SELECT 4, target_id FROM hidden_reposts WHERE user_id = ?
		UNION ALL SELECT 5, 1 FROM users WHERE id = ? AND EXISTS (SELECT 1 FROM reposts WHERE user_id = ?)`, user, user, user, user, user, user, user, user)
	if err != nil {
		return feed.Hidden{}, fmt.Errorf("sqlstore: mutes and blocks of %d: %w", user, err)
	}
	defer rows.Close()
	var muted, blocked, excluded, noReposts []int64
	replies := feed.RepliesFollowing
	reposter := false
	for rows.Next() {
		var kind, id int64
		if err := rows.Scan(&kind, &id); err != nil {
			return feed.Hidden{}, fmt.Errorf("sqlstore: mutes and blocks of %d: %w", user, err)
		}
		switch kind {
		case 0:
			muted = append(muted, id)
		case 1:
			blocked = append(blocked, id)
		case 3: // the reader's rule for replies, not an id
			replies = storedReplies(sql.NullInt64{Int64: id, Valid: true})
		case 4:
			noReposts = append(noReposts, id)
		case 5: // the user has reposted something
			reposter = true
		default: // a member of an exclusive list, maybe of several
			excluded = append(excluded, id)
		}
	}
	if err := rows.Err(); err != nil {
		return feed.Hidden{}, fmt.Errorf("sqlstore: mutes and blocks of %d: %w", user, err)
	}
	return feed.NewHidden(muted, blocked).WithExcluded(excluded).WithReplies(replies).WithoutRepostsOf(noReposts).WithReposter(reposter), nil
}
