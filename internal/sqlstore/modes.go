package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// SetPullMode records whether author's posts are pulled at read time, and
// reports whether the state changed. When it turns push again, the
// author's posts from the pull period never reached any inbox, so the same
// transaction queues their fan-out (up to refan of the newest) through the
// outbox: the switch and the catch-up commit together or not at all.
func (s *Store) SetPullMode(ctx context.Context, author int64, pull bool, refan int) (bool, error) {
	var changed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		changed = false
		res, err := tx.ExecContext(ctx, "UPDATE users SET pull_mode = ? WHERE id = ? AND pull_mode <> ?", boolInt(pull), author, boolInt(pull))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		changed = true
		if pull || refan <= 0 {
			return nil
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM posts WHERE author_id = ? AND deleted_at IS NULL
			ORDER BY id DESC LIMIT ?`, author, refan)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		now := millis(time.Now())
		for _, id := range ids {
			payload := feed.PostCreated(ctx, id, author).Encode()
			if _, err := tx.ExecContext(ctx, "INSERT INTO outbox (payload, created_at) VALUES (?, ?)", payload, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: set pull mode of %d to %v: %w", author, pull, err)
	}
	return changed, nil
}

// PullFollowees returns the authors of reader's feed whose posts are
// pulled: follower_count >= high, or in [low, high) with pull_mode set
// (the hysteresis band). The authors of reader's feed are those it
// follows and reader itself, so a pulled reader reads its own posts from
// its author list as its followers do. Ascending. Two queries: the pulled
// authors of all, through the follower_count index, then which of them
// reader follows, by primary key; beyond pullCandidates of them, one join
// from reader's follows instead, and one primary-key read of reader.
func (s *Store) PullFollowees(ctx context.Context, reader, high, low int64) ([]int64, error) {
	ids, self, err := s.pullFollowees(ctx, reader, high, low)
	if err != nil {
		return nil, err
	}
	if self {
		// No edge leads from a user to itself (Follow refuses one), so
		// reader is not among ids yet.
		i, _ := slices.BinarySearch(ids, reader)
		ids = slices.Insert(ids, i, reader)
	}
	return ids, nil
}

// pullFollowees is PullFollowees' followees, and whether reader itself is
// pulled.
func (s *Store) pullFollowees(ctx context.Context, reader, high, low int64) ([]int64, bool, error) {
	// The pulled authors are few (those near or above the threshold) and
	// the follower_count index finds them; which of them reader follows
	// is then a primary-key lookup each. The join from reader's follows
	// cost a lookup per followee: 15 ms idle for a reader following
	// 5,000, and up to 400 ms under the bench's read load.
	pulled, err := s.replicaIDs(ctx, s.pullCandidates+1,
		`SELECT id FROM users WHERE follower_count >= ? AND (follower_count >= ? OR pull_mode = 1) LIMIT ?`,
		low, high, s.pullCandidates+1)
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: pulled followees of %d: pulled authors: %w", reader, err)
	}
	if len(pulled) <= s.pullCandidates {
		if len(pulled) == 0 {
			return []int64{}, false, nil
		}
		args := make([]any, 0, 1+len(pulled))
		args = append(args, reader)
		for _, id := range pulled {
			args = append(args, id)
		}
		ids, err := s.replicaIDs(ctx, len(pulled), `SELECT followee_id FROM follows
			WHERE follower_id = ? AND followee_id IN (`+placeholders(len(pulled))+`) ORDER BY followee_id`, args...)
		if err != nil {
			return nil, false, fmt.Errorf("sqlstore: pulled followees of %d: %w", reader, err)
		}
		return ids, slices.Contains(pulled, reader), nil
	}
	// Pulled authors beyond one IN list: the join from reader's follows.
	ids, err := s.replicaIDs(ctx, 64, `SELECT u.id FROM follows f JOIN users u ON u.id = f.followee_id
		WHERE f.follower_id = ? AND (u.follower_count >= ? OR (u.follower_count >= ? AND u.pull_mode = 1))
		ORDER BY u.id`, reader, high, low)
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: pulled followees of %d: %w", reader, err)
	}
	self, err := s.replicaIDs(ctx, 1, `SELECT id FROM users
		WHERE id = ? AND (follower_count >= ? OR (follower_count >= ? AND pull_mode = 1))`, reader, high, low)
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: is %d pulled: %w", reader, err)
	}
	return ids, len(self) > 0, nil
}

// AuthorsPostIDs returns up to n ids of the non-deleted posts of authors
// below before (0: no bound), newest first: the posts of many pulled
// authors at once, one range on posts_author per author.
func (s *Store) AuthorsPostIDs(ctx context.Context, authors []int64, before int64, n int) ([]int64, error) {
	if n <= 0 || len(authors) == 0 {
		return []int64{}, nil
	}
	var out []int64
	for _, chunk := range chunks(authors) {
		args := append(chunk, upperBound(before), n)
		ids, err := s.replicaIDs(ctx, n, `SELECT id FROM posts WHERE author_id IN (`+placeholders(len(chunk))+`)
			AND id < ? AND deleted_at IS NULL ORDER BY id DESC LIMIT ?`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: post ids of %d authors: %w", len(authors), err)
		}
		out = mergeIDsDesc(out, ids, n)
	}
	return out, nil
}

func mergeIDsDesc(a, b []int64, n int) []int64 {
	if len(a) == 0 {
		return b
	}
	out := make([]int64, 0, min(len(a)+len(b), n))
	i, j := 0, 0
	for len(out) < n && (i < len(a) || j < len(b)) {
		if j >= len(b) || (i < len(a) && a[i] > b[j]) {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
