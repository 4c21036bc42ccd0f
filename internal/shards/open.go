package shards

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/feedd/feedd/internal/sqlstore"
)

// Open connects to every logical shard of m and checks that each database
// is the shard the map places there (sqlstore.ErrShardMismatch otherwise,
// which the caller turns into a refusal to start). pools are one
// process's connections to one server, shared out among the shards the
// server holds (at least 2 each).
func Open(ctx context.Context, m Map, pools sqlstore.Pools, timeouts sqlstore.Timeouts) (*Store, error) {
	stores, err := open(ctx, m, pools, timeouts)
	if err != nil {
		return nil, err
	}
	s, err := New(m, stores)
	if err != nil {
		return nil, err
	}
	if err := s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		return st.CheckShard(ctx, k, m.N)
	}); err != nil {
		s.Close()
		return nil, fmt.Errorf("shards: %w", err)
	}
	return s, nil
}

// Migrate creates each shard's database where it is missing, brings its
// schema up to date and records which shard it is: feedd migrate on a
// sharded deployment. A database that is another shard is refused.
func Migrate(ctx context.Context, m Map) error {
	for _, p := range m.Places {
		for k := p.From; k <= p.To; k++ {
			_, server, prefix, err := ShardDSN(p.DSN, k)
			if err != nil {
				return fmt.Errorf("shards: shard %d: %w", k, err)
			}
			if err := sqlstore.CreateDatabase(ctx, server, DatabaseName(prefix, k), BackendOf(p.DSN) == Postgres); err != nil {
				return fmt.Errorf("shards: shard %d: %w", k, err)
			}
		}
	}
	stores, err := open(ctx, m, sqlstore.Pools{Write: 2}, sqlstore.Timeouts{})
	if err != nil {
		return err
	}
	s, _ := New(m, stores)
	defer s.Close()
	return s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		if err := st.Migrate(ctx); err != nil {
			return fmt.Errorf("shards: migrate shard %d: %w", k, err)
		}
		if err := st.ClaimShard(ctx, k, m.N); err != nil {
			return fmt.Errorf("shards: %w", err)
		}
		return nil
	})
}

// open opens one store per logical shard, in shard order.
func open(ctx context.Context, m Map, pools sqlstore.Pools, timeouts sqlstore.Timeouts) ([]*sqlstore.Store, error) {
	stores := make([]*sqlstore.Store, m.N)
	closeAll := func() {
		for _, st := range stores {
			if st != nil {
				st.Close()
			}
		}
	}
	for _, p := range m.Places {
		n := p.To - p.From + 1
		share := sqlstore.Pools{Write: max(2, cmp.Or(pools.Write, 32)/n)}
		if pools.Read > 0 {
			share.Read = max(2, pools.Read/n)
		}
		for k := p.From; k <= p.To; k++ {
			dsn, _, _, err := ShardDSN(p.DSN, k)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("shards: shard %d: %w", k, err)
			}
			var st *sqlstore.Store
			if BackendOf(p.DSN) == Postgres {
				st, err = sqlstore.OpenPostgresReplicated(ctx, dsn, "", share, timeouts)
			} else {
				st, err = sqlstore.OpenMySQLReplicated(ctx, dsn, "", share)
			}
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("shards: open shard %d: %w", k, err)
			}
			stores[k] = st
		}
	}
	for k, st := range stores {
		if st == nil {
			closeAll()
			return nil, errors.New("shards: shard " + fmt.Sprint(k) + " has no place")
		}
	}
	return stores, nil
}
