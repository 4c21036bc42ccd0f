package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Marker returns user's read marker in its home feed; a user who never set
// one gets the zero Marker. It reads the primary: a replica behind it would
// show a marker that just moved forward moved back.
func (s *Store) Marker(ctx context.Context, user int64) (feed.Marker, error) {
	var last, at int64
	err := s.db.QueryRowContext(ctx, "SELECT last_read_id, updated_at FROM markers WHERE user_id = ?", user).Scan(&last, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return feed.Marker{}, nil
	}
	if err != nil {
		return feed.Marker{}, fmt.Errorf("sqlstore: marker of %d: %w", user, err)
	}
	return feed.Marker{LastReadID: last, UpdatedAt: fromMillis(at)}, nil
}

// SetMarker moves user's read marker forward to lastRead, at time at, and
// returns the marker as it then is. A lastRead at or below the stored one
// changes nothing. The comparison is part of the one upsert statement, so
// concurrent calls cannot move the marker back whatever their order.
func (s *Store) SetMarker(ctx context.Context, user, lastRead int64, at time.Time) (feed.Marker, error) {
	if s.d.setMarker != "" {
		var last, updated int64
		err := s.db.QueryRowContext(ctx, s.d.setMarker, user, lastRead, millis(at)).Scan(&last, &updated)
		switch {
		case err == nil:
			return feed.Marker{LastReadID: last, UpdatedAt: fromMillis(updated)}, nil
		case !errors.Is(err, sql.ErrNoRows):
			return feed.Marker{}, fmt.Errorf("sqlstore: set marker of %d: %w", user, err)
		}
		// No row: the stored marker is at or past lastRead, perhaps moved
		// there by a racing call this statement waited for, which only a
		// new read sees.
		return s.Marker(ctx, user)
	}
	if _, err := s.db.ExecContext(ctx,
		"INSERT INTO markers (user_id, last_read_id, updated_at) VALUES (?, ?, ?)"+s.d.upsertMarker,
		user, lastRead, millis(at)); err != nil {
		return feed.Marker{}, fmt.Errorf("sqlstore: set marker of %d: %w", user, err)
	}
	return s.Marker(ctx, user)
}
