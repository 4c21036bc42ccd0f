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
