package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Handles, names and finding people. On one database users.handle's
// unique key is the whole of a handle's uniqueness; sharded, the handles
// table of the handle's shard is (the claims below, which package shards
// drives; docs/clusters.md).

// UpdateUser changes user's name, handle or both (e checked by
// feed.UserEdit.Check; a Handle of "" removes it) and returns the user as
// changed. Renaming frees the old handle in the same statement, so no two
// users ever hold one. ENOTFOUND for an unknown user, EHANDLETAKEN for a
// handle another user holds.
func (s *Store) UpdateUser(ctx context.Context, user int64, e feed.UserEdit) (feed.User, error) {
	set, args := "", []any{}
	if e.Name != nil {
		set, args = "name = ?, name_key = ?", append(args, *e.Name, feed.NameKey(*e.Name))
	}
	if e.Handle != nil {
		if set != "" {
			set += ", "
		}
		set, args = set+"handle = ?", append(args, nullString(*e.Handle))
	}
	if set == "" {
		return s.User(ctx, user)
	}
	res, err := s.db.ExecContext(ctx, "UPDATE users SET "+set+" WHERE id = ? AND deleted_at IS NULL", append(args, user)...)
	if s.d.duplicate(err) && e.Handle != nil {
		err = feed.HandleTaken(*e.Handle)
	}
	if err == nil {
		var n int64
		// MySQL counts only changed rows: an edit to the same values
		// is found by reading the user back.
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			_, err = s.User(ctx, user)
		}
	}
	if err != nil {
		return feed.User{}, fmt.Errorf("sqlstore: update user %d: %w", user, err)
	}
	return s.User(ctx, user)
}

// UserByHandle returns the user whose handle is h (lower case), or
// ENOTFOUND.
func (s *Store) UserByHandle(ctx context.Context, h string) (feed.User, error) {
	u, err := s.userBy(ctx, "handle = ?", h, feed.Errorf(feed.ENOTFOUND, "no user has the handle %q", h))
	if err != nil {
		return feed.User{}, fmt.Errorf("sqlstore: user by handle %q: %w", h, err)
	}
	return u, nil
}

// HandleHeld reports whether user, deleted or not (a deleted user keeps
// its handle until its purge is done), holds handle h here.
func (s *Store) HandleHeld(ctx context.Context, user int64, h string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM users WHERE id = ? AND handle = ?", user, h).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sqlstore: does %d hold %q: %w", user, h, err)
	}
	return n > 0, nil
}

// HandleOf returns user's handle, deleted or not; "" for none or no user.
func (s *Store) HandleOf(ctx context.Context, user int64) (string, error) {
	var h sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT handle FROM users WHERE id = ?", user).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return "", fmt.Errorf("sqlstore: handle of %d: %w", user, err)
	}
	return h.String, nil
}

// handleEnd is above every handle that starts with a prefix, when put
// after it: '~' sorts after every character a handle may have.
const handleEnd = "~"

// nameEnd is above every name key that starts with a prefix, when put
// after it: the last code point, whose UTF-8 bytes sort after every
// other's.
const nameEnd = "\U0010FFFF"

// SearchHandles returns up to n users whose handle starts with prefix
// and sorts after after ("": from the first), in handle order: a range of
// users_handle.
func (s *Store) SearchHandles(ctx context.Context, prefix, after string, n int) ([]feed.User, error) {
	from, op := prefix, ">="
	if after > from {
		from, op = after, ">"
	}
	users, err := s.searchUsers(ctx, "handle "+op+" ? AND handle < ?", "handle", []any{from, prefix + handleEnd}, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: search handles %q: %w", prefix, err)
	}
	return users, nil
}

// SearchNames returns up to n users whose feed.NameKey starts with
// prefix, in (key, id) order after (afterKey, afterID) (afterKey "": from
// the first): a range of users_name_key.
func (s *Store) SearchNames(ctx context.Context, prefix, afterKey string, afterID int64, n int) ([]feed.User, error) {
	where, args := "name_key >= ? AND name_key < ?", []any{prefix, prefix + nameEnd}
	if afterKey != "" {
		where, args = where+" AND (name_key > ? OR (name_key = ? AND id > ?))", append(args, afterKey, afterKey, afterID)
	}
	users, err := s.searchUsers(ctx, where, "name_key, id", args, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: search names %q: %w", prefix, err)
	}
	return users, nil
}

// searchUsers reads up to n live users of a range, lag-tolerant: a
// search may miss a user created a moment ago.
func (s *Store) searchUsers(ctx context.Context, where, order string, args []any, n int) ([]feed.User, error) {
	var users []feed.User
	err := s.fromReplica(ctx, func(db *sql.DB) error {
		users = users[:0]
		return eachUser(ctx, db, "SELECT "+userColumns+" FROM users WHERE "+where+" AND deleted_at IS NULL ORDER BY "+order+" LIMIT ?",
			append(args, n), func(u feed.User) { users = append(users, u) })
	})
	return users, err
}

// Relationship says how user stands to other, from user's rows: the
// follows both ways, user's mute, the blocks both ways (sharded, other's
// follow of user and block of user are mirrored on user's shard).
func (s *Store) Relationship(ctx context.Context, user, other int64) (feed.Relationship, error) {
	var r feed.Relationship
	var following, followedBy, muting, blocking, blockedBy, noReposts int
	err := s.rdb.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM follows WHERE follower_id = ? AND followee_id = ?),
		(SELECT COUNT(*) FROM follows WHERE follower_id = ? AND followee_id = ?),
		(SELECT COUNT(*) FROM mutes WHERE user_id = ? AND target_id = ?),
		(SELECT COUNT(*) FROM blocks WHERE blocker_id = ? AND blocked_id = ?),
		(SELECT COUNT(*) FROM blocks WHERE blocker_id = ? AND blocked_id = ?),
		(SELECT COUNT(*) FROM hidden_reposts WHERE user_id = ? AND target_id = ?)`,
		user, other, other, user, user, other, user, other, other, user, user, other).
		Scan(&following, &followedBy, &muting, &blocking, &blockedBy, &noReposts)
	if err != nil {
		return r, fmt.Errorf("sqlstore: relationship %d -> %d: %w", user, other, err)
	}
	r.Following, r.FollowedBy, r.Muting, r.Blocking, r.BlockedBy = following > 0, followedBy > 0, muting > 0, blocking > 0, blockedBy > 0
	r.Reposts = r.Following && noReposts == 0
	return r, nil
}

// HandleClaim is who claimed a handle in the handles table, and when.
type HandleClaim struct {
	User int64
	At   time.Time
}

// ClaimHandle claims h for user in the handles table, unless another user
// claimed it: it returns the claim that stands (user's own when it was
// free, or already user's). Running it twice is harmless.
func (s *Store) ClaimHandle(ctx context.Context, h string, user int64) (HandleClaim, error) {
	for {
		// A duplicate is a claim that stands: read it below.
		_, err := s.db.ExecContext(ctx, "INSERT INTO handles (handle, user_id, claimed_at) VALUES (?, ?, ?)", h, user, millis(time.Now()))
		if err != nil && !s.d.duplicate(err) {
			return HandleClaim{}, fmt.Errorf("sqlstore: claim handle %q for %d: %w", h, user, err)
		}
		// Not found: released between the two statements; claim it again.
		if c, ok, err := s.HandleClaimOf(ctx, h); ok || err != nil {
			return c, err
		}
	}
}

// HandleClaimOf returns h's claim, if any.
func (s *Store) HandleClaimOf(ctx context.Context, h string) (HandleClaim, bool, error) {
	var c HandleClaim
	var at int64
	err := s.db.QueryRowContext(ctx, "SELECT user_id, claimed_at FROM handles WHERE handle = ?", h).Scan(&c.User, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("sqlstore: claim of handle %q: %w", h, err)
	}
	c.At = fromMillis(at)
	return c, true, nil
}

// TakeOverHandle gives h to user if old is still its claim, and reports
// whether it did.
func (s *Store) TakeOverHandle(ctx context.Context, h string, old HandleClaim, user int64) (bool, error) {
	ok, err := insertedRow(s.db.ExecContext(ctx, "UPDATE handles SET user_id = ?, claimed_at = ? WHERE handle = ? AND user_id = ? AND claimed_at = ?",
		user, millis(time.Now()), h, old.User, millis(old.At)))
	if err != nil {
		return false, fmt.Errorf("sqlstore: take handle %q over from %d for %d: %w", h, old.User, user, err)
	}
	return ok, nil
}

// ReleaseHandle frees h if user claimed it.
func (s *Store) ReleaseHandle(ctx context.Context, h string, user int64) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM handles WHERE handle = ? AND user_id = ?", h, user); err != nil {
		return fmt.Errorf("sqlstore: release handle %q of %d: %w", h, user, err)
	}
	return nil
}
