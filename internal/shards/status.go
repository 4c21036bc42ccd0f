package shards

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/sqlstore"
)

// ShardStatus is where a logical shard lives and how full it is: a row
// of feedd shards status.
type ShardStatus struct {
	Shard int
	// DSN is the shard's own DSN (its database named): the caller hides
	// its password before showing it.
	DSN      string
	Database string
	// Counts are the rows of sqlstore.RowCountTables; nil when Err is set.
	Counts map[string]int64
	Err    error
}

// Status reads every shard's row counts at once. A shard that does not
// answer has its Err set, and the others are still reported: the command
// is for finding which one is in trouble.
func (s *Store) Status(ctx context.Context) []ShardStatus {
	out := make([]ShardStatus, s.m.N)
	_ = s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		out[k] = ShardStatus{Shard: k}
		dsn, _, prefix, err := ShardDSN(s.m.DSN(k), k)
		if err != nil {
			out[k].Err = fmt.Errorf("shards: shard %d: %w", k, err)
			return nil
		}
		out[k].DSN, out[k].Database = dsn, DatabaseName(prefix, k)
		if out[k].Counts, err = st.RowCounts(ctx); err != nil {
			out[k].Err = fmt.Errorf("shards: shard %d: %w", k, err)
		}
		return nil
	})
	return out
}

// checkPlaces looks on the map's servers for the shard databases already
// there (under the map's prefixes) and refuses (sqlstore.ErrShardMismatch)
// a map that places one elsewhere, or under which one is another shard
// than its name says (a count changed). Migrate creates the databases a
// map names where they are missing: without this look first, a map with
// two servers swapped, or a new count, would make empty shards beside the
// data, which a start would then accept.
func checkPlaces(ctx context.Context, m Map) error {
	seen := map[[2]string]bool{}
	for _, p := range m.Places {
		_, srv, prefix, err := ShardDSN(p.DSN, p.From)
		if err != nil {
			return fmt.Errorf("shards: shard %d: %w", p.From, err)
		}
		if seen[[2]string{srv, prefix}] {
			continue
		}
		seen[[2]string{srv, prefix}] = true
		postgres := BackendOf(p.DSN) == Postgres
		ks, err := sqlstore.ShardDatabases(ctx, srv, prefix, postgres)
		if err != nil {
			return fmt.Errorf("shards: the server of shards %d-%d: %w", p.From, p.To, err)
		}
		for _, k := range ks {
			name := DatabaseName(prefix, k)
			if k >= m.N {
				return fmt.Errorf("shards: %w: the server of shards %d-%d holds %s, a shard beyond the %d of FEEDD_SHARDS", sqlstore.ErrShardMismatch, p.From, p.To, name, m.N)
			}
			_, placed, placedPrefix, err := ShardDSN(m.DSN(k), k)
			if err != nil {
				return fmt.Errorf("shards: shard %d: %w", k, err)
			}
			if placed != srv || placedPrefix != prefix {
				return fmt.Errorf("shards: %w: %s is on the server of shards %d-%d, but the map places shard %d elsewhere", sqlstore.ErrShardMismatch, name, p.From, p.To, k)
			}
			if err := checkIdentity(ctx, p.DSN, k, m.N, postgres); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkIdentity refuses a shard database that says it is another shard
// than k of n; one that says nothing yet (created, not yet claimed) passes.
func checkIdentity(ctx context.Context, placeDSN string, k, n int, postgres bool) error {
	dsn, _, _, err := ShardDSN(placeDSN, k)
	if err != nil {
		return fmt.Errorf("shards: shard %d: %w", k, err)
	}
	var st *sqlstore.Store
	if postgres {
		st, err = sqlstore.OpenPostgresReplicated(ctx, dsn, "", sqlstore.Pools{Write: 1}, sqlstore.Timeouts{})
	} else {
		st, err = sqlstore.OpenMySQLReplicated(ctx, dsn, "", sqlstore.Pools{Write: 1})
	}
	if err != nil {
		return fmt.Errorf("shards: open shard %d: %w", k, err)
	}
	defer st.Close()
	gotK, gotN, ok, err := st.ShardIdentity(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("shards: shard %d: %w", k, err)
	case ok && (gotK != k || gotN != n):
		return fmt.Errorf("shards: %w: the database placed as shard %d of %d says it is shard %d of %d", sqlstore.ErrShardMismatch, k, n, gotK, gotN)
	}
	return nil
}
