package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// PurgeBatchRows bounds the rows of one table one purge transaction
// removes, so that no batch holds locks, or grows the undo log, for long
// enough to stall the writes around it.
const PurgeBatchRows = 1000

// ErrLeaseLost is returned by PurgeBatch when the caller no longer owns
// the purge (its lease ran out and another worker claimed it, or it is
// done): the caller stops, the batch is not applied.
var ErrLeaseLost = feed.Errorf(feed.ECONFLICT, "the purge's lease was lost to another worker")

// DeleteUser marks user deleted (every read of users skips them from the
// commit on, and their token generation moves on, so no token of theirs
// is accepted once the token caches learn of it) and records the purge
// job, in one transaction. Repeated while the purge runs, it returns the
// running purge with started false. ENOTFOUND for an unknown user, or one
// already purged.
func (s *Store) DeleteUser(ctx context.Context, user int64) (p feed.Purge, started bool, err error) {
	now := time.Now()
	err = s.write(ctx, func(tx *sql.Tx) error {
		started = false
		res, err := tx.ExecContext(ctx,
			"UPDATE users SET deleted_at = ?, token_generation = token_generation + 1 WHERE id = ? AND deleted_at IS NULL",
			millis(now), user)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return err
			}
			p, err = purgeOf(ctx, tx, user)
			if err == nil && p.Done() {
				err = feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
			}
			return err
		}
		var gen int64
		if err := tx.QueryRowContext(ctx, "SELECT token_generation FROM users WHERE id = ?", user).Scan(&gen); err != nil {
			return err
		}
		// A row of an earlier user of the id, purged before, is replaced.
		if _, err := tx.ExecContext(ctx, "DELETE FROM user_purges WHERE user_id = ?", user); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			"INSERT INTO user_purges (user_id, requested_at, token_generation) VALUES (?, ?, ?)",
			user, millis(now), gen); err != nil {
			return err
		}
		p, started = feed.Purge{User: user, RequestedAt: fromMillis(millis(now))}, true
		return nil
	})
	if err != nil {
		return feed.Purge{}, false, fmt.Errorf("sqlstore: delete user %d: %w", user, err)
	}
	return p, started, nil
}

const purgeColumns = "user_id, requested_at, finished_at, following_removed, followers_removed, likes_removed, posts_removed"

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func purgeOf(ctx context.Context, q querier, user int64) (feed.Purge, error) {
	var p feed.Purge
	var requested int64
	var finished sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT "+purgeColumns+" FROM user_purges WHERE user_id = ?", user).
		Scan(&p.User, &requested, &finished, &p.Following, &p.Followers, &p.Likes, &p.Posts)
	if errors.Is(err, sql.ErrNoRows) {
		return feed.Purge{}, feed.Errorf(feed.ENOTFOUND, "no deletion of user %d was asked", user)
	}
	if err != nil {
		return feed.Purge{}, err
	}
	p.RequestedAt = fromMillis(requested)
	if finished.Valid {
		p.FinishedAt = fromMillis(finished.Int64)
	}
	return p, nil
}

// Purge returns the state of the last deletion of user; ENOTFOUND if none
// was asked.
func (s *Store) Purge(ctx context.Context, user int64) (feed.Purge, error) {
	p, err := purgeOf(ctx, s.rdb, user)
	if err != nil {
		return feed.Purge{}, fmt.Errorf("sqlstore: purge of %d: %w", user, err)
	}
	return p, nil
}

// DeletedUsers returns the users deleted and not created again whose purge
// runs or finished at or after since: the authors whose posts a reader
// must not see although a cache may still hold them.
func (s *Store) DeletedUsers(ctx context.Context, since time.Time) ([]int64, error) {
	ids, err := s.queryIDsOn(ctx, s.rdb, 64, `SELECT p.user_id FROM user_purges p
		WHERE (p.finished_at IS NULL OR p.finished_at >= ?)
		AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = p.user_id AND u.deleted_at IS NULL)`, millis(since))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: deleted users: %w", err)
	}
	return ids, nil
}

// ClaimPurge gives owner, for lease, an unfinished purge no live worker
// holds (oldest first), and reports whether there was one. On MySQL the
// claim skips rows another worker is claiming.
func (s *Store) ClaimPurge(ctx context.Context, owner string, lease time.Duration) (int64, bool, error) {
	var user int64
	var found bool
	err := s.inTx(ctx, s.d.relayTx, func(tx *sql.Tx) error {
		found = false
		now := time.Now()
		err := tx.QueryRowContext(ctx, `SELECT user_id FROM user_purges
			WHERE finished_at IS NULL AND lease_until < ? ORDER BY requested_at LIMIT 1`+s.d.skipLocked, millis(now)).Scan(&user)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		_, err = tx.ExecContext(ctx, "UPDATE user_purges SET lease_owner = ?, lease_until = ? WHERE user_id = ?",
			owner, millis(now.Add(lease)), user)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("sqlstore: claim purge: %w", err)
	}
	return user, found, nil
}

// PurgeBatch removes, in one transaction, up to PurgeBatchRows rows of the
// first kind of user's data that has any left, in this order: the edges
// to whom they follow (and those users' follower counts), the edges from
// their followers (and those users' following counts), their likes (and
// the liked posts' counts), their posts (and their stats), their
// idempotency keys, their mutes and blocks, list memberships and
// notifications (told and made); and when none is left, their read markers and the user
// row, marking the purge finished. Each batch's counts move by exactly the
// rows it deleted, in the same transaction, so a batch interrupted
// anywhere leaves nothing half done, and running the purge again from any
// point is exact.
//
// It renews owner's lease in the same transaction, and applies nothing
// (ErrLeaseLost) if owner no longer holds it.
func (s *Store) PurgeBatch(ctx context.Context, user int64, owner string, lease time.Duration) (feed.PurgeBatch, error) {
	r, _, err := s.purgeBatch(ctx, user, owner, lease, true)
	return r, err
}

// PurgeStep is PurgeBatch on the shard of user in a sharded deployment,
// while rows of theirs remain on other shards: when none is left here it
// renews the lease and finishes nothing. It reports whether it found rows.
func (s *Store) PurgeStep(ctx context.Context, user int64, owner string, lease time.Duration) (feed.PurgeBatch, bool, error) {
	return s.purgeBatch(ctx, user, owner, lease, false)
}

// PurgeElsewhere is a batch of the purge of user on a shard that is not
// theirs: the rows here that name them (edges either way, likes rows,
// mutes and blocks either way), with the counts of this shard's users and
// posts moved as PurgeBatch moves them (an UPDATE of a user or post of
// another shard matches no row here). The job, its lease and its progress
// live on the user's shard, which counted every edge and like of theirs
// (truth or mirror) before this runs. It reports whether it found rows.
func (s *Store) PurgeElsewhere(ctx context.Context, user int64) (feed.PurgeBatch, bool, error) {
	var r feed.PurgeBatch
	var did bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, did = feed.PurgeBatch{}, false
		for _, step := range []func(context.Context, *sql.Tx, int64, *feed.PurgeBatch) (bool, error){
			s.purgeFollowing, s.purgeFollowers, s.purgeLikes, s.purgeReplies, s.purgeReposted, s.purgeRelations, s.purgeMemberships, s.purgeNotices,
		} {
			var err error
			if did, err = step(ctx, tx, user, &r); did || err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return feed.PurgeBatch{}, false, fmt.Errorf("sqlstore: purge batch of %d elsewhere: %w", user, err)
	}
	return r, did, nil
}

func (s *Store) purgeBatch(ctx context.Context, user int64, owner string, lease time.Duration, finish bool) (feed.PurgeBatch, bool, error) {
	var r feed.PurgeBatch
	var did bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, did = feed.PurgeBatch{}, false
		now := time.Now()
		// batches changes the row whatever the clock says: MySQL counts
		// only changed rows as affected.
		res, err := tx.ExecContext(ctx,
			"UPDATE user_purges SET lease_until = ?, batches = batches + 1 WHERE user_id = ? AND lease_owner = ? AND finished_at IS NULL",
			millis(now.Add(lease)), user, owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = ErrLeaseLost
			}
			return err
		}
		for _, step := range []func(context.Context, *sql.Tx, int64, *feed.PurgeBatch) (bool, error){
			s.purgeFollowing, s.purgeFollowers, s.purgeLikes, s.purgeReplies, s.purgeReposted, s.purgeOwnReposts, s.purgePosts, s.purgeIdempotency, s.purgeRelations, s.purgeMemberships, s.purgeNotices,
		} {
			if did, err = step(ctx, tx, user, &r); did || err != nil {
				return err
			}
		}
		if !finish {
			return nil
		}
		for _, table := range []string{"markers", "notice_markers"} {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE user_id = ?", user); err != nil {
				return err
			}
		}
		// The user's own lists (at most MaxLists, on the user's shard);
		// their memberships in others' lists went with purgeMemberships.
		if _, err := tx.ExecContext(ctx, "DELETE FROM list_members WHERE owner_id = ?", user); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM lists WHERE owner_id = ?", user); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM users WHERE id = ? AND deleted_at IS NOT NULL", user); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE user_purges SET finished_at = ?, lease_owner = '', lease_until = 0 WHERE user_id = ?",
			millis(now), user)
		r.Done = true
		return err
	})
	if err != nil {
		return feed.PurgeBatch{}, false, fmt.Errorf("sqlstore: purge batch of %d: %w", user, err)
	}
	return r, did, nil
}

// purgeEdges deletes up to a batch of user's edges on one side and moves
// the other ends' counts.
func (s *Store) purgeEdges(ctx context.Context, tx *sql.Tx, user int64, mine, other, count, progress string) (bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+other+" FROM follows WHERE "+mine+" = ? ORDER BY "+other+" LIMIT ?"+s.d.forUpdate,
		user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	ids, err := scanIDs(rows, PurgeBatchRows)
	if err != nil || len(ids) == 0 {
		return false, err
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, user)
	for _, id := range ids {
		args = append(args, id)
	}
	in := "(" + placeholders(len(ids)) + ")"
	if _, err := tx.ExecContext(ctx, "DELETE FROM follows WHERE "+mine+" = ? AND "+other+" IN "+in, args...); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE users SET "+count+" = "+count+" - 1 WHERE id IN "+in, args[1:]...); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, "UPDATE user_purges SET "+progress+" = "+progress+" + ? WHERE user_id = ?", len(ids), user)
	return true, err
}

func (s *Store) purgeFollowing(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	return s.purgeEdges(ctx, tx, user, "follower_id", "followee_id", "follower_count", "following_removed")
}

func (s *Store) purgeFollowers(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	return s.purgeEdges(ctx, tx, user, "followee_id", "follower_id", "following_count", "followers_removed")
}

// purgeLikes deletes a batch of user's likes rows (likes and unlike
// tombstones) and takes each like out of its post's count.
func (s *Store) purgeLikes(ctx context.Context, tx *sql.Tx, user int64, r *feed.PurgeBatch) (bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT post_id, liked FROM likes WHERE user_id = ? ORDER BY post_id LIMIT ?"+s.d.forUpdate,
		user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	var all []any
	var liked []any
	for rows.Next() {
		var post int64
		var l int
		if err := rows.Scan(&post, &l); err != nil {
			rows.Close()
			return false, err
		}
		all = append(all, post)
		if l != 0 {
			liked = append(liked, post)
			r.Counted = append(r.Counted, post)
		}
	}
	if err := rows.Close(); err != nil {
		return false, err
	}
	if err := rows.Err(); err != nil || len(all) == 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM likes WHERE user_id = ? AND post_id IN ("+placeholders(len(all))+")",
		append([]any{user}, all...)...); err != nil {
		return false, err
	}
	if len(liked) > 0 {
		if _, err := tx.ExecContext(ctx, "UPDATE post_stats SET like_count = like_count - 1, like_seq = like_seq + 1, updated_at = ? WHERE post_id IN ("+placeholders(len(liked))+")",
			append([]any{millis(time.Now())}, liked...)...); err != nil {
			return false, err
		}
	}
	_, err = tx.ExecContext(ctx, "UPDATE user_purges SET likes_removed = likes_removed + ? WHERE user_id = ?", len(liked), user)
	return true, err
}

// purgePosts deletes a batch of user's posts, live or deleted, and their
// stats rows. Other users' likes of them stay, as for any deleted post:
// they are those users' data, and their lists skip deleted posts.
func (s *Store) purgePosts(ctx context.Context, tx *sql.Tx, user int64, r *feed.PurgeBatch) (bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id FROM posts WHERE author_id = ? ORDER BY id LIMIT ?"+s.d.forUpdate,
		user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	ids, err := scanIDs(rows, PurgeBatchRows)
	if err != nil || len(ids) == 0 {
		return false, err
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	in := "(" + placeholders(len(ids)) + ")"
	if _, err := tx.ExecContext(ctx, "DELETE FROM post_stats WHERE post_id IN "+in, args...); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM posts WHERE id IN "+in, args...); err != nil {
		return false, err
	}
	r.Posts = ids
	_, err = tx.ExecContext(ctx, "UPDATE user_purges SET posts_removed = posts_removed + ? WHERE user_id = ?", len(ids), user)
	return true, err
}

func (s *Store) purgeIdempotency(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	return purgeBatchOf[string](ctx, tx, user, "SELECT idem_key FROM idempotency WHERE author_id = ? LIMIT ?"+s.d.forUpdate,
		"DELETE FROM idempotency WHERE author_id = ? AND idem_key IN ")
}

// purgeRelations deletes up to a batch of the user's mutes and blocks, in
// either direction: a mute or block of the user by someone else goes too,
// since it names a user who no longer exists (and a user created later
// with the id must not inherit it).
func (s *Store) purgeRelations(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	for _, q := range []struct{ table, mine, other string }{
		{"mutes", "user_id", "target_id"}, {"mutes", "target_id", "user_id"},
		{"blocks", "blocker_id", "blocked_id"}, {"blocks", "blocked_id", "blocker_id"},
	} {
		did, err := purgeBatchOf[int64](ctx, tx, user, "SELECT "+q.other+" FROM "+q.table+" WHERE "+q.mine+" = ? LIMIT ?"+s.d.forUpdate,
			"DELETE FROM "+q.table+" WHERE "+q.mine+" = ? AND "+q.other+" IN ")
		if did || err != nil {
			return did, err
		}
	}
	return false, nil
}

// purgeMemberships takes the user out of up to a batch of lists, other
// users' on this shard (list_members_by_member), each list's member count
// moved with it.
func (s *Store) purgeMemberships(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT owner_id, list_id FROM list_members WHERE member_id = ? LIMIT ?"+s.d.forUpdate, user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	var lists [][2]int64
	for rows.Next() {
		var l [2]int64
		if err := rows.Scan(&l[0], &l[1]); err != nil {
			rows.Close()
			return false, err
		}
		lists = append(lists, l)
	}
	if err := rows.Close(); err != nil {
		return false, err
	}
	if err := rows.Err(); err != nil || len(lists) == 0 {
		return false, err
	}
	for _, l := range lists {
		if _, err := tx.ExecContext(ctx, "DELETE FROM list_members WHERE owner_id = ? AND list_id = ? AND member_id = ?", l[0], l[1], user); err != nil {
			return false, err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE lists SET member_count = member_count - 1 WHERE owner_id = ? AND id = ?", l[0], l[1]); err != nil {
			return false, err
		}
	}
	return true, nil
}

// purgeBatchOf deletes up to PurgeBatchRows rows of user's: sel (user and
// the batch size as arguments) lists one column of them, of type T, and
// del (user, then that column's values) deletes them. It reports whether
// it found any.
func purgeBatchOf[T any](ctx context.Context, tx *sql.Tx, user int64, sel, del string) (bool, error) {
	rows, err := tx.QueryContext(ctx, sel, user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	var vals []any
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return false, err
		}
		vals = append(vals, v)
	}
	if err := rows.Close(); err != nil {
		return false, err
	}
	if err := rows.Err(); err != nil || len(vals) == 0 {
		return false, err
	}
	_, err = tx.ExecContext(ctx, del+"("+placeholders(len(vals))+")", append([]any{user}, vals...)...)
	return true, err
}
