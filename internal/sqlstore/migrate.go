package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"
)

// migration is one numbered .sql file.
type migration struct {
	version int64
	name    string
	stmts   []string
}

// Migrate brings the schema up to date: it applies, in order, the embedded
// migrations that schema_migrations does not list yet. It is idempotent,
// and several processes may run it at once: on MySQL a named lock lets one
// migrate while the others wait, on PostgreSQL a transaction advisory lock
// does, in the one transaction that applies every pending migration (all
// or none), and on SQLite each migration is one immediate transaction that
// re-checks whether another process applied it.
func (s *Store) Migrate(ctx context.Context) error {
	migs, err := loadMigrations(s.d.migrations)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: migrate: %w", err)
	}
	defer conn.Close()

	var ex execQuerier = conn
	var tx *sql.Tx
	if s.d.lockMigrationsTx != nil {
		// One transaction takes the lock and applies every pending
		// migration (see dialect.lockMigrationsTx).
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
		defer tx.Rollback()
		if err := s.d.lockMigrationsTx(ctx, tx); err != nil {
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
		ex = tx
	} else {
		release, err := s.d.lockMigrations(ctx, conn)
		if err != nil {
			return fmt.Errorf("sqlstore: migrate: %w", err)
		}
		defer release()
	}

	if _, err := ex.ExecContext(ctx, s.d.createMigrations); err != nil {
		return fmt.Errorf("sqlstore: migrate: create schema_migrations: %w", err)
	}
	for _, m := range migs {
		if err := s.apply(ctx, conn, tx, m); err != nil {
			return fmt.Errorf("sqlstore: migrate: %d %s: %w", m.version, m.name, err)
		}
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqlstore: migrate: commit: %w", err)
		}
	}
	return nil
}

// execQuerier is what a migration runs on: a transaction or a connection.
type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// apply runs m unless schema_migrations lists it: in outer, the
// transaction of the whole run, when there is one; else in a transaction
// of its own where DDL is transactional, or statement by statement on
// conn.
func (s *Store) apply(ctx context.Context, conn *sql.Conn, outer *sql.Tx, m migration) error {
	var ex execQuerier = conn
	var tx *sql.Tx
	switch {
	case outer != nil:
		ex = outer
	case s.d.transactionalDDL:
		var err error
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return err
		}
		defer tx.Rollback()
		ex = tx
	}
	var n int
	if err := ex.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations WHERE version = ?", m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	for _, stmt := range m.stmts {
		if _, err := ex.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	_, err := ex.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.version, m.name, millis(time.Now()))
	if err != nil && !s.d.duplicate(err) {
		return err
	}
	if tx != nil {
		return tx.Commit()
	}
	return nil
}

// loadMigrations reads the files named like 0001_init.sql, in version
// order.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var migs []migration
	for _, name := range names {
		num, _, ok := strings.Cut(name, "_")
		version, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration %q: want a name like 0001_what.sql", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		migs = append(migs, migration{version: version, name: name, stmts: splitStatements(string(body))})
	}
	slices.SortFunc(migs, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	for i := 1; i < len(migs); i++ {
		if migs[i].version == migs[i-1].version {
			return nil, fmt.Errorf("migrations %q and %q share version %d", migs[i-1].name, migs[i].name, migs[i].version)
		}
	}
	return migs, nil
}

// splitStatements splits a migration into statements, one per Exec: the
// MySQL driver runs one statement at a time. A statement ends with a
// semicolon at the end of a line; whole-line -- comments are dropped.
func splitStatements(body string) []string {
	var stmts []string
	var cur strings.Builder
	for line := range strings.Lines(body) {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		if strings.HasSuffix(trimmed, ";") {
			if stmt := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"); stmt != "" {
				stmts = append(stmts, stmt)
			}
			cur.Reset()
		}
	}
	if stmt := strings.TrimSpace(cur.String()); stmt != "" {
		stmts = append(stmts, stmt)
	}
	return stmts
}
