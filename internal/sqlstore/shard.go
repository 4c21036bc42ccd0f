package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// ClaimShard records in an empty database that it is logical shard k of
// n, or checks that it already is; a database that says otherwise is
// refused (feed.ErrShardMismatch). Migrations call it, after the schema is
// up to date.
func (s *Store) ClaimShard(ctx context.Context, k, n int) error {
	_, err := s.db.ExecContext(ctx, "INSERT INTO shard_identity (one, shard, shards, created_at) SELECT 1, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM shard_identity)",
		k, n, millis(time.Now()))
	if err != nil && !s.d.duplicate(err) {
		return fmt.Errorf("sqlstore: claim shard %d of %d: %w", k, n, err)
	}
	return s.CheckShard(ctx, k, n)
}

// ErrShardMismatch is CheckShard's answer when the database is another
// shard than the one the map places there, or is not a migrated shard.
var ErrShardMismatch = errors.New("the shard map disagrees with the data")

// CheckShard reports whether the database says it is shard k of n. A
// database migrated before shards existed says nothing, and passes as
// shard 0 of 1 only.
func (s *Store) CheckShard(ctx context.Context, k, n int) error {
	var gotK, gotN int
	err := s.rdb.QueryRowContext(ctx, "SELECT shard, shards FROM shard_identity WHERE one = 1").Scan(&gotK, &gotN)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if k == 0 && n == 1 {
			return nil
		}
		return fmt.Errorf("%w: the database placed as shard %d of %d is not a shard (run feedd migrate with the shard map)", ErrShardMismatch, k, n)
	case err != nil:
		return fmt.Errorf("sqlstore: check shard %d of %d: %w", k, n, err)
	case gotK != k || gotN != n:
		return fmt.Errorf("%w: the database placed as shard %d of %d says it is shard %d of %d", ErrShardMismatch, k, n, gotK, gotN)
	}
	return nil
}

var databaseName = regexp.MustCompile(`^[A-Za-z0-9_]{1,63}$`)

// CreateDatabase creates the database name on the server that serverDSN
// (a DSN without a database) reaches, unless it exists: a logical shard's
// home. postgres says which kind of server it is.
func CreateDatabase(ctx context.Context, serverDSN, name string, postgres bool) error {
	if !databaseName.MatchString(name) {
		return fmt.Errorf("sqlstore: create database: %q is not a plain database name", name)
	}
	if postgres {
		cfg, err := pgx.ParseConfig(serverDSN)
		if err != nil {
			return errors.New("sqlstore: create database: the DSN does not parse")
		}
		db := stdlib.OpenDB(*cfg)
		defer db.Close()
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
			return fmt.Errorf("sqlstore: create database %s: %w", name, err)
		}
		if n > 0 {
			return nil
		}
		_, err = db.ExecContext(ctx, "CREATE DATABASE "+name)
		var pe interface{ SQLState() string }
		if errors.As(err, &pe) && pe.SQLState() == "42P04" { // created meanwhile
			err = nil
		}
		if err != nil {
			return fmt.Errorf("sqlstore: create database %s: %w", name, err)
		}
		return nil
	}
	dsn, _ := splitHosts(serverDSN)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return errors.New("sqlstore: create database: the DSN does not parse")
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("sqlstore: create database %s: %w", name, err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		return fmt.Errorf("sqlstore: create database %s: %w", name, err)
	}
	return nil
}
