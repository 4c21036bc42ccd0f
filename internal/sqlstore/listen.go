package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// outboxChannel is the channel NotifyOutbox notifies on.
const outboxChannel = "feedd_outbox"

// notifyOutbox is one round trip, an implicit transaction of two
// statements (no arguments: pgx sends it by the simple protocol).
// synchronous_commit off: nothing to make durable, and a notifying commit
// holds PostgreSQL's one notification lock until it returns, so waiting
// for the disk would serialize the notifiers.
const notifyOutbox = "SET LOCAL synchronous_commit = off; SELECT pg_notify('" + outboxChannel + "', '')"

// NotifyOutbox tells the relays that listen (ListenOutbox), in whatever
// process, that outbox events committed. It is a transaction of its own,
// sent after theirs, never a statement of theirs: a transaction that
// notifies takes PostgreSQL's one notification lock at its commit and
// holds it while the commit is flushed, so posts that notified as they
// committed would commit one at a time (BenchmarkCreatePostNotify;
// docs/performance.md has the figures). On MySQL and SQLite it returns
// errors.ErrUnsupported.
func (s *Store) NotifyOutbox(ctx context.Context) error {
	if s.pgConfig == nil {
		return fmt.Errorf("sqlstore: notify outbox listeners: %w", errors.ErrUnsupported)
	}
	if _, err := s.db.ExecContext(ctx, notifyOutbox); err != nil {
		return fmt.Errorf("sqlstore: notify outbox listeners: %w", err)
	}
	return nil
}

// listenCheck is how long the listener waits for a notification before it
// checks that its connection still answers: a connection whose server
// vanished without a word would otherwise wait until TCP gives up.
const listenCheck = time.Minute

// ListenOutbox calls wake for each NotifyOutbox, on PostgreSQL (from any
// process on the same database), until ctx ends (it then returns nil) or the
// connection it listens on fails (it returns the error, and the caller
// listens again). It calls wake once as soon as it listens, too: events
// may have committed while nobody listened. wake must not block.
//
// It holds a connection of its own, outside the pools, for as long as it
// runs. On MySQL and SQLite it returns errors.ErrUnsupported at once:
// their relays find new events by polling.
func (s *Store) ListenOutbox(ctx context.Context, wake func()) error {
	if s.pgConfig == nil {
		return fmt.Errorf("sqlstore: listen for outbox events: %w", errors.ErrUnsupported)
	}
	cfg := s.pgConfig.Copy()
	// Named, so that an operator can find it in pg_stat_activity.
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "feedd outbox listener"
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		// pgx names the user and database of a failed connection, never
		// the password.
		return fmt.Errorf("sqlstore: listen for outbox events: %w", err)
	}
	defer func() {
		// A fresh context: ctx may be over, and the server should hear
		// the connection end rather than find it dead.
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+outboxChannel); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("sqlstore: listen for outbox events: %w", err)
	}
	wake()
	for {
		wctx, cancel := context.WithTimeout(ctx, listenCheck)
		_, err := conn.WaitForNotification(wctx)
		idle := wctx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			wake()
		case idle:
			// A timeout leaves a pgx connection usable.
			if err := conn.Ping(ctx); err != nil && ctx.Err() == nil {
				return fmt.Errorf("sqlstore: listen for outbox events: check the connection: %w", err)
			}
		default:
			return fmt.Errorf("sqlstore: listen for outbox events: %w", err)
		}
	}
}
