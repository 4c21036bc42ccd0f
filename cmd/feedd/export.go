package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/feedd/feedd/internal/export"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// runExport is `feedd export`: everything feedd holds about one user as
// JSON Lines (package export), read from the configured store, for an
// operator answering a data-access or portability request. It reads only,
// so it is safe while feedd serves. A command of its own, like
// requeue-dead: it has flags no role has and needs only SQL.
func runExport(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	var user, out string
	var cfg config
	f := newFlagSet("feedd export", getenv, stderr, `usage: feedd export -user ID [-out FILE] [flags]

Writes everything feedd holds about a user (profile, posts with their data,
follows both ways, likes, mutes, blocks, read marker) as JSON Lines, one
object per line with a "kind"; feedd import --export takes it as it is
(users, follows, posts and likes). See docs/operations.md, "Exporting a
user's data".
`)
	f.str(&user, "user", "", "the id of the user to export (required)")
	f.str(&out, "out", "-", "the file to write; - is standard output. The file is written whole or not at all (it appears once complete), readable by its owner only")
	// The store settings are the roles' own.
	f.settings(&cfg, "mysql-dsn", "postgres-dsn", "shards", "shard-dsns", "data-dir")
	if err := f.parse(args); err != nil {
		return err
	}
	if err := cfg.checkSQL(); err != nil {
		return err
	}
	id, err := feed.ParseID(user)
	if err != nil {
		return usageError{fmt.Errorf("export: -user %q: want the user's id, a positive integer", user)}
	}

	if cfg.embedded() {
		// Opening would create an empty database: say what is missing.
		if _, err := os.Stat(filepath.Join(cfg.dataDir, "feedd.db")); err != nil {
			return fmt.Errorf("export: no embedded database in %s (set -data-dir, or FEEDD_MYSQL_DSN or FEEDD_POSTGRES_DSN for a SQL server): %w", cfg.dataDir, err)
		}
	}
	store, err := openStore(ctx, cfg, sqlstore.Pools{Write: 1}, sqlstore.Timeouts{})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer store.Close()
	if out == "-" {
		return export.Write(ctx, store, id, stdout)
	}
	return writeFileAtomically(out, func(w io.Writer) error { return export.Write(ctx, store, id, w) })
}

// writeFileAtomically writes path through fill: into a temporary file of
// the same directory, renamed over path only once fill and the sync
// succeed, so a failed export leaves no file that looks whole. The file is
// readable by its owner only: it holds a person's data.
func writeFileAtomically(path string, fill func(w io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
