package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/export"
	"github.com/feedd/feedd/internal/fanout"
	"github.com/feedd/feedd/internal/importer"
	"github.com/feedd/feedd/internal/likes"
	"github.com/feedd/feedd/internal/notices"
	"github.com/feedd/feedd/internal/relay"
	"github.com/feedd/feedd/internal/replies"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/social"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/timeline"
)

// truth is feedd's SQL truth as the services and commands call it: one
// database (*sqlstore.Store) or logical shards over several
// (*shards.Store, which routes each call to the shard it is about). It is
// the union of what its consumers declare, so that a method a service
// adds to its store interface is one the router must have too. What is
// per database (pools, replicas, the outbox a relay drains, migrations)
// is reached through databases. Starting never creates a shard's
// database: feedd migrate does (shards.Migrate), so that a wrong map
// cannot make empty shards beside the data.
type truth interface {
	timeline.Store
	social.Store
	social.KeySweeper
	social.PurgeStore
	fanout.Store
	likes.Store
	likes.Applier
	census.Outbox
	importer.Store
	export.Source
	graph.SQLStore
	replies.Store
	notices.Store
	// SetNoticeWindow sets how far apart a notification group's first
	// and newest notifications may be (FEEDD_NOTIFICATION_WINDOW).
	SetNoticeWindow(d time.Duration)
	// NotifyOutbox wakes the work processes' relays after a publish from
	// a process that runs none (relay.Waker).
	relay.Notifier
	// Migrate brings the schema up to date (every shard's, whose
	// databases feedd migrate created).
	Migrate(ctx context.Context) error
	AnyUsers(ctx context.Context) (bool, error)
	Close() error
}

var (
	_ truth = (*sqlstore.Store)(nil)
	_ truth = (*shards.Store)(nil)
)

// databases returns the databases of store: itself, or each logical
// shard's, in shard order.
func databases(store truth) []*sqlstore.Store {
	switch s := store.(type) {
	case *sqlstore.Store:
		return []*sqlstore.Store{s}
	case *shards.Store:
		out := make([]*sqlstore.Store, s.N())
		for k := range out {
			out[k] = s.Shard(k)
		}
		return out
	}
	return nil
}

// shardCount is the number of logical shards of store (1: one database).
func shardCount(store truth) int {
	if s, ok := store.(*shards.Store); ok {
		return s.N()
	}
	return 1
}

// openStore opens the SQL store; on a SQL server with pools sized for a
// role, and on PostgreSQL with timeouts (none: the commands that run long
// on purpose, such as a migration or an import). With FEEDD_SHARD_DSNS it
// is the logical shards, each checked to be the shard the map places
// there.
func openStore(ctx context.Context, cfg config, pools sqlstore.Pools, timeouts sqlstore.Timeouts) (truth, error) {
	var s *sqlstore.Store
	var err error
	switch cfg.sqlBackend() {
	case "shards":
		s, err := openShards(ctx, cfg, pools, timeouts)
		if err != nil {
			return nil, err
		}
		s.SetNoticeWindow(cfg.noticeWindow)
		return s, nil
	case "postgres":
		s, err = sqlstore.OpenPostgresReplicated(ctx, cfg.postgresDSN, cfg.postgresRead, pools, timeouts)
	case "mysql":
		s, err = sqlstore.OpenMySQLReplicated(ctx, cfg.mysqlDSN, cfg.mysqlReadDSN, pools)
	default:
		if err := makeDataDir(cfg.dataDir); err != nil {
			return nil, err
		}
		s, err = sqlstore.OpenSQLite(ctx, filepath.Join(cfg.dataDir, "feedd.db"))
	}
	if err != nil {
		// A nil truth, not a truth holding a nil *sqlstore.Store, which
		// the callers' nil checks would miss.
		return nil, err
	}
	// One logical shard's database opened as the whole truth would serve
	// a fraction of the users and take new ones that belong elsewhere.
	// Other errors of the check are left to the first statements: a
	// database not migrated yet has no record of what it is.
	if err := s.CheckShard(ctx, 0, 1); errors.Is(err, sqlstore.ErrShardMismatch) {
		s.Close()
		return nil, usageError{fmt.Errorf("%w: the database is one logical shard of a sharded deployment; open it with FEEDD_SHARDS and FEEDD_SHARD_DSNS", err)}
	}
	s.SetNoticeWindow(cfg.noticeWindow)
	return s, nil
}

// openShards opens the logical shards of the map. A map that disagrees
// with the data is the operator's to fix, not a failure to retry: a usage
// error (exit 2), as a map that does not parse is.
func openShards(ctx context.Context, cfg config, pools sqlstore.Pools, timeouts sqlstore.Timeouts) (*shards.Store, error) {
	m, err := cfg.shardMap()
	if err != nil {
		return nil, err
	}
	s, err := shards.Open(ctx, m, pools, timeouts)
	switch {
	case errors.Is(err, sqlstore.ErrShardMismatch):
		return nil, usageError{fmt.Errorf("%w; run feedd migrate with this map for a new deployment, or fix FEEDD_SHARDS and FEEDD_SHARD_DSNS to place each shard where it lives (feedd shards status shows what the map finds)", err)}
	case sqlstore.IsUnknownDatabase(err):
		return nil, usageError{fmt.Errorf("%w: FEEDD_SHARD_DSNS places a shard on a server without its database: run feedd migrate with this map for a new deployment, or fix the map", err)}
	case err != nil:
		return nil, err
	}
	return s, nil
}
