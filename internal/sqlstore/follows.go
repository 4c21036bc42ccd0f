package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Follow makes follower follow followee. It reports whether the edge is
// new; only then, in the same transaction, does it count it in both users'
// counts, so repeated and racing calls keep the counts exact. A missing
// user is ENOTFOUND; following oneself is EINVALID.
func (s *Store) Follow(ctx context.Context, follower, followee int64) (bool, error) {
	if err := feed.CheckNotSelf("follow", follower, followee); err != nil {
		return false, fmt.Errorf("sqlstore: follow %d -> %d: %w", follower, followee, err)
	}
	var added bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		added = false
		found, err := s.lockUsers(ctx, tx, follower, followee)
		if err != nil {
			return err
		}
		for _, id := range []int64{follower, followee} {
			if !found[id] {
				return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", id)
			}
		}
		// Block takes the same user locks, so a block and a follow of one
		// pair cannot interleave: the follow sees the block or the block
		// removes the edge.
		if blocked, err := blockedEitherWay(ctx, tx, follower, followee); err != nil || blocked {
			if err == nil {
				err = feed.Errorf(feed.EBLOCKED, "a block between you and user %d forbids following", followee)
			}
			return err
		}
		now := time.Now()
		res, err := tx.ExecContext(ctx, s.d.insertFollow, follower, followee, millis(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n != 1 { // n == 0: the edge was there already
			return err
		}
		added = true
		if err := s.addNotices(ctx, tx, []feed.Notice{followNotice(follower, followee, now)}); err != nil {
			return err
		}
		return addToCounts(ctx, tx, follower, followee, 1)
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: follow %d -> %d: %w", follower, followee, err)
	}
	return added, nil
}

// Unfollow removes the edge from follower to followee, if any, and reports
// whether there was one; only then does it uncount it.
func (s *Store) Unfollow(ctx context.Context, follower, followee int64) (bool, error) {
	var removed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := s.lockUsers(ctx, tx, follower, followee); err != nil {
			return err
		}
		var err error
		removed, err = s.removeEdge(ctx, tx, follower, followee)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: unfollow %d -> %d: %w", follower, followee, err)
	}
	return removed, nil
}

// removeEdge deletes the edge from follower to followee, if any, and
// uncounts it; the caller holds both users' locks (lockUsers).
// The follow's notification goes with it where the followee lives (on
// another shard nothing matches: its mirror's sync takes it out there).
func (s *Store) removeEdge(ctx context.Context, tx *sql.Tx, follower, followee int64) (bool, error) {
	res, err := tx.ExecContext(ctx, "DELETE FROM follows WHERE follower_id = ? AND followee_id = ?", follower, followee)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n != 1 { // n == 0: there was no edge
		return false, err
	}
	if err := s.removeNotices(ctx, tx, []feed.Notice{followNotice(follower, followee, time.Time{})}); err != nil {
		return false, err
	}
	return true, addToCounts(ctx, tx, follower, followee, -1)
}

// followNotice is what followee is told of follower's follow at at.
func followNotice(follower, followee int64, at time.Time) feed.Notice {
	return feed.Notice{Recipient: followee, Actor: follower, Kind: feed.NoticeFollow, At: at}
}

// lockUsers reads, and on MySQL and PostgreSQL locks until the transaction
// ends, the user rows of both ends of an edge, and reports which exist.
// Every change to an edge takes these locks before touching follows,
// always in id order (ORDER BY: PostgreSQL may scan a small table in
// its heap order, which updates reshuffle), so that Follow and Unfollow on one
// pair queue behind each other instead of deadlocking between the follows
// row and the counters.
func (s *Store) lockUsers(ctx context.Context, tx *sql.Tx, a, b int64) (map[int64]bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id FROM users WHERE id IN (?, ?) AND deleted_at IS NULL ORDER BY id"+s.d.forUpdate, a, b)
	if err != nil {
		return nil, err
	}
	ids, err := scanIDs(rows, 2)
	if err != nil {
		return nil, err
	}
	found := make(map[int64]bool, 2)
	for _, id := range ids {
		found[id] = true
	}
	return found, nil
}

// addToCounts moves follower's following_count and followee's
// follower_count by delta, in one statement.
func addToCounts(ctx context.Context, tx *sql.Tx, follower, followee, delta int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE users SET
		following_count = following_count + CASE WHEN id = ? THEN ? ELSE 0 END,
		follower_count = follower_count + CASE WHEN id = ? THEN ? ELSE 0 END
		WHERE id IN (?, ?)`,
		follower, delta, followee, delta, follower, followee)
	return err
}

// Followers returns up to n ids of user's followers above after, in
// ascending order: pass the last id of a page as the next page's after.
func (s *Store) Followers(ctx context.Context, user, after int64, n int) ([]int64, error) {
	if n <= 0 {
		return []int64{}, nil
	}
	ids, err := s.queryIDs(ctx, n, `SELECT follower_id FROM follows
		WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id LIMIT ?`, user, after, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: followers of %d after %d: %w", user, after, err)
	}
	return ids, nil
}

// EachFollower calls fn with every follower of each of authors (a user
// who follows several, once per author), as the rows stream in: the
// import drops the inboxes of the followers of a batch's authors, which
// one Followers page per author read in a statement per author (25,000
// for 250,000 posts), in a statement per thousand authors instead, and in
// constant memory whatever their followers.
func (s *Store) EachFollower(ctx context.Context, authors []int64, fn func(follower int64)) error {
	for _, chunk := range idChunks(authors) {
		rows, err := s.rdb.QueryContext(ctx, "SELECT follower_id FROM follows WHERE followee_id IN ("+placeholders(len(chunk))+")", chunk...)
		if err != nil {
			return fmt.Errorf("sqlstore: followers of %d authors: %w", len(chunk), err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("sqlstore: followers of %d authors: %w", len(chunk), err)
			}
			fn(id)
		}
		if err := closeRows(rows); err != nil {
			return fmt.Errorf("sqlstore: followers of %d authors: %w", len(chunk), err)
		}
	}
	return nil
}

// Following returns up to n ids of the users user follows above after, in
// ascending order.
func (s *Store) Following(ctx context.Context, user, after int64, n int) ([]int64, error) {
	if n <= 0 {
		return []int64{}, nil
	}
	ids, err := s.queryIDs(ctx, n, `SELECT followee_id FROM follows
		WHERE follower_id = ? AND followee_id > ? ORDER BY followee_id LIMIT ?`, user, after, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: followed by %d after %d: %w", user, after, err)
	}
	return ids, nil
}

// FollowersInRange returns the ids of user's followers in (after, upto],
// ascending: one range of a split made with FollowerRangeEnd.
func (s *Store) FollowersInRange(ctx context.Context, user, after, upto int64) ([]int64, error) {
	if upto <= after {
		return []int64{}, nil
	}
	ids, err := s.queryIDs(ctx, 0, `SELECT follower_id FROM follows
		WHERE followee_id = ? AND follower_id > ? AND follower_id <= ? ORDER BY follower_id`, user, after, upto)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: followers of %d in (%d, %d]: %w", user, after, upto, err)
	}
	return ids, nil
}

// FollowerRangeEnd returns upto, the n-th follower id of user above after
// (the last one if there are fewer), and count, how many followers lie in
// (after, upto]. A dispatcher splits the followers into ranges of n by
// calling it again from upto until count is 0 (upto is then 0 too).
//
// One query per range: it walks at most n entries of the followee index,
// from after, and returns one row.
func (s *Store) FollowerRangeEnd(ctx context.Context, user, after int64, n int) (upto int64, count int, err error) {
	if n <= 0 {
		return 0, 0, nil
	}
	var last sql.NullInt64
	err = s.rdb.QueryRowContext(ctx, `SELECT MAX(follower_id), COUNT(*) FROM (
		SELECT follower_id FROM follows WHERE followee_id = ? AND follower_id > ? ORDER BY follower_id LIMIT ?
	) AS page`, user, after, n).Scan(&last, &count)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlstore: follower range of %d after %d: %w", user, after, err)
	}
	if count == 0 {
		return 0, 0, nil
	}
	return last.Int64, count, nil
}

// queryIDs runs a read returning one column of ids; n sizes the result.
func (s *Store) queryIDs(ctx context.Context, n int, query string, args ...any) ([]int64, error) {
	return s.queryIDsOn(ctx, s.rdb, n, query, args...)
}

// queryIDsOn is queryIDs on pool db (the replica, for the read path).
func (s *Store) queryIDsOn(ctx context.Context, db *sql.DB, n int, query string, args ...any) ([]int64, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanIDs(rows, n)
}
