package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// Settings returns user's settings (feed.Settings), from the primary: a
// read right after a change sees it. ENOTFOUND for an unknown or deleted
// user.
func (s *Store) Settings(ctx context.Context, user int64) (feed.Settings, error) {
	var replies sql.NullInt64
	err := s.rdb.QueryRowContext(ctx, "SELECT home_replies FROM users WHERE id = ? AND deleted_at IS NULL", user).Scan(&replies)
	if errors.Is(err, sql.ErrNoRows) {
		err = feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	if err != nil {
		return feed.Settings{}, fmt.Errorf("sqlstore: settings of %d: %w", user, err)
	}
	return feed.Settings{HomeReplies: storedReplies(replies)}, nil
}

// SetSettings stores user's settings; ENOTFOUND for an unknown or deleted
// user. The default rule is stored as NULL, as a user who never chose has.
func (s *Store) SetSettings(ctx context.Context, user int64, st feed.Settings) error {
	var replies any
	if st.HomeReplies != feed.RepliesFollowing {
		replies = int64(st.HomeReplies)
	}
	_, err := s.db.ExecContext(ctx, "UPDATE users SET home_replies = ? WHERE id = ? AND deleted_at IS NULL", replies, user)
	if err == nil {
		// The user's existence is read, not RowsAffected: MySQL counts a
		// row set to the value it had as unaffected.
		_, err = s.Settings(ctx, user)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: set settings of %d: %w", user, err)
	}
	return nil
}

// storedReplies reads a home_replies column: NULL, or a value a later
// version wrote that this one does not know, is the default.
func storedReplies(v sql.NullInt64) feed.HomeReplies {
	if r := feed.HomeReplies(v.Int64); v.Valid && feed.ValidHomeReplies(r) {
		return r
	}
	return feed.RepliesFollowing
}

// FollowingAmong returns those of ids that user follows, from user's
// follows (on user's shard, sharded): one primary-key read per id. The
// home feed's reply rule asks it about the users a page's replies answer.
func (s *Store) FollowingAmong(ctx context.Context, user int64, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, user)
	for _, id := range ids {
		args = append(args, id)
	}
	found, err := s.queryIDs(ctx, len(ids), "SELECT followee_id FROM follows WHERE follower_id = ? AND followee_id IN ("+placeholders(len(ids))+")", args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: which of %d users %d follows: %w", len(ids), user, err)
	}
	return found, nil
}
