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
	for _, p := range m.Places {
		for k := p.From; k <= p.To; k++ {
			s.mv.share[k] = share(pools, p.To-p.From+1)
		}
	}
	s.mv.timeouts = timeouts
	if err := s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
		if err := st.CheckShard(ctx, k, m.N); err != nil {
			return err
		}
		// A shard moved since the map was written is followed to its
		// new place now, rather than read stale until WatchMoves sees it.
		return s.followMoved(ctx, k, st)
	}); err != nil {
		s.Close()
		return nil, fmt.Errorf("shards: %w", err)
	}
	return s, nil
}

// Migrate creates each shard's database where it is missing, brings its
// schema up to date and records which shard it is: feedd migrate on a
// sharded deployment. A map that places a shard elsewhere than its data,
// or a database that is another shard, is refused (sqlstore.ErrShardMismatch)
// before anything is created (checkPlaces).
func Migrate(ctx context.Context, m Map) error {
	if err := checkPlaces(ctx, m); err != nil {
		return err
	}
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
		pk := share(pools, p.To-p.From+1)
		for k := p.From; k <= p.To; k++ {
			st, err := openShard(ctx, p.DSN, k, pk, timeouts)
			if err != nil {
				closeAll()
				return nil, err
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

// share is one shard's part of a process's pools to a server that holds
// n shards.
func share(pools sqlstore.Pools, n int) sqlstore.Pools {
	// Every shard has a read pool of its own, even when the role gives
	// reads none: a mirror's sync (mirror.go) holds a write connection of
	// one shard while it reads another's truth, and two syncs crossing
	// each other must not wait on each other's write pools.
	w := cmp.Or(pools.Write, 32)
	return sqlstore.Pools{Write: max(2, w/n), Read: max(2, cmp.Or(pools.Read, w/2)/n)}
}

// openShard opens logical shard k's database on the server that place (a
// DSN naming the shards' database prefix) reaches.
func openShard(ctx context.Context, place string, k int, pools sqlstore.Pools, timeouts sqlstore.Timeouts) (*sqlstore.Store, error) {
	dsn, _, _, err := ShardDSN(place, k)
	if err != nil {
		return nil, fmt.Errorf("shards: shard %d: %w", k, err)
	}
	var st *sqlstore.Store
	if BackendOf(place) == Postgres {
		st, err = sqlstore.OpenPostgresReplicated(ctx, dsn, "", pools, timeouts)
	} else {
		st, err = sqlstore.OpenMySQLReplicated(ctx, dsn, "", pools)
	}
	if err != nil {
		return nil, fmt.Errorf("shards: open shard %d: %w", k, err)
	}
	return st, nil
}
