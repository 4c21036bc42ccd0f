package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// RelayOutbox hands up to n unsent outbox events, in id order, to publish,
// and marks them sent only if publish returns nil: publish returns once the
// broker has confirmed them. Otherwise the events stay unsent and the error
// is returned. It reports how many events were relayed (0: none waiting).
//
// The claim and the mark are one transaction held across publish. On MySQL
// the claim skips rows another relay holds, so relays in several processes
// share the backlog without publishing an event twice; on SQLite the write
// transaction excludes every other writer while publish runs, so publish
// must not write through this store. Delivery is still at-least-once: if
// the commit fails after publish, the events go out again later.
func (s *Store) RelayOutbox(ctx context.Context, n int, publish func(ctx context.Context, evs []feed.OutboxEvent) error) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	var relayed int
	err := s.inTx(ctx, s.d.relayTx, func(tx *sql.Tx) error {
		relayed = 0
		rows, err := tx.QueryContext(ctx,
			"SELECT id, payload FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT ?"+s.d.skipLocked, n)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		evs := make([]feed.OutboxEvent, 0, min(n, 1024))
		for rows.Next() {
			var ev feed.OutboxEvent
			if err := rows.Scan(&ev.ID, &ev.Payload); err != nil {
				rows.Close()
				return fmt.Errorf("claim: %w", err)
			}
			evs = append(evs, ev)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		if len(evs) == 0 {
			return nil
		}
		if err := publish(ctx, evs); err != nil {
			return fmt.Errorf("publish %d events: %w", len(evs), err)
		}
		ids := make([]any, 0, len(evs)+1)
		ids = append(ids, millis(time.Now()))
		for _, ev := range evs {
			ids = append(ids, ev.ID)
		}
		if _, err := tx.ExecContext(ctx,
			"UPDATE outbox SET sent_at = ? WHERE id IN ("+placeholders(len(evs))+")", ids...); err != nil {
			return fmt.Errorf("mark %d events sent: %w", len(evs), err)
		}
		relayed = len(evs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: relay outbox: %w", err)
	}
	return relayed, nil
}

// OutboxOldest returns how many events wait to be relayed and when the
// oldest of them was written (the zero time when none waits): how far
// behind the relay runs, for the ops console.
func (s *Store) OutboxOldest(ctx context.Context) (int64, time.Time, error) {
	n, err := s.OutboxBacklog(ctx)
	if err != nil || n == 0 {
		return n, time.Time{}, err
	}
	// The lowest unsent id is the oldest event: ids grow with time, and
	// the outbox_sent index (sent_at, id) finds it without a scan.
	var created int64
	err = s.rdb.QueryRowContext(ctx, "SELECT created_at FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT 1").Scan(&created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Relayed between the two queries.
		return 0, time.Time{}, nil
	case err != nil:
		return 0, time.Time{}, fmt.Errorf("sqlstore: oldest outbox event: %w", err)
	}
	return n, fromMillis(created), nil
}

// sweepChunk bounds the rows one sweep statement deletes, so that no
// statement holds locks or grows the log for long.
const sweepChunk = 1000

// SweepOutbox deletes the events sent before sentBefore, a chunk at a
// time, and returns how many it deleted.
func (s *Store) SweepOutbox(ctx context.Context, sentBefore time.Time) (int64, error) {
	var total int64
	for {
		// Two statements per chunk because neither MySQL (no LIMIT in an
		// IN subquery) nor stock SQLite (no DELETE ... LIMIT) deletes a
		// bounded set in one.
		ids, err := s.queryIDs(ctx, sweepChunk,
			"SELECT id FROM outbox WHERE sent_at < ? ORDER BY sent_at, id LIMIT ?", millis(sentBefore), sweepChunk)
		if err != nil {
			return total, fmt.Errorf("sqlstore: sweep outbox: %w", err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		res, err := s.db.ExecContext(ctx, "DELETE FROM outbox WHERE id IN ("+placeholders(len(ids))+")", args...)
		if err != nil {
			return total, fmt.Errorf("sqlstore: sweep outbox: %w", err)
		}
		deleted, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("sqlstore: sweep outbox: %w", err)
		}
		total += deleted
		if len(ids) < sweepChunk {
			return total, nil
		}
	}
}

// OutboxBacklog returns how many events wait to be relayed.
func (s *Store) OutboxBacklog(ctx context.Context) (int64, error) {
	var n int64
	if err := s.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL").Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlstore: outbox backlog: %w", err)
	}
	return n, nil
}
