package sqlstore

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// MarkFeedStale records that user's cached feed state missed a change.
func (s *Store) MarkFeedStale(ctx context.Context, user int64) error {
	if _, err := s.db.ExecContext(ctx, "INSERT INTO stale_feeds (user_id, mark) VALUES (?, 1)"+s.d.bumpStale, user); err != nil {
		return fmt.Errorf("sqlstore: mark the feed of %d stale: %w", user, err)
	}
	return nil
}

// staleSweep is the job the statements of the stale-feed sweep are
// counted under: every API process sends one SELECT a second for it.
const staleSweep = "stale_sweep"

// StaleFeeds returns up to n of the users marked by MarkFeedStale, by id.
func (s *Store) StaleFeeds(ctx context.Context, n int) ([]feed.StaleFeed, error) {
	ctx = forJob(ctx, staleSweep)
	rows, err := s.db.QueryContext(ctx, "SELECT user_id, mark FROM stale_feeds ORDER BY user_id LIMIT ?", n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: stale feeds: %w", err)
	}
	defer rows.Close()
	var out []feed.StaleFeed
	for rows.Next() {
		var f feed.StaleFeed
		if err := rows.Scan(&f.User, &f.Mark); err != nil {
			return nil, fmt.Errorf("sqlstore: stale feeds: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: stale feeds: %w", err)
	}
	return out, nil
}

// ClearStaleFeeds deletes the records of fs whose mark is unchanged: a
// miss recorded after StaleFeeds read them stays, for the next reset.
func (s *Store) ClearStaleFeeds(ctx context.Context, fs []feed.StaleFeed) error {
	ctx = forJob(ctx, staleSweep)
	for _, f := range fs {
		if _, err := s.db.ExecContext(ctx, "DELETE FROM stale_feeds WHERE user_id = ? AND mark = ?", f.User, f.Mark); err != nil {
			return fmt.Errorf("sqlstore: clear the stale feed of %d: %w", f.User, err)
		}
	}
	return nil
}
