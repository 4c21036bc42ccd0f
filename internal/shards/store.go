package shards

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/feedd/feedd/internal/sqlstore"
)

// Store is feedd's SQL store over logical shards: it has the methods of
// sqlstore.Store that the services call, and routes each to the shard of
// the user or post it is about. A call about one user touches one shard; a
// read about many (a batch of posts, a home feed from SQL, the most liked
// posts) asks the shards concerned at once and merges their answers.
type Store struct {
	m Map
	// shards[k] is logical shard k's database. A move (move.go) swaps
	// one while the others serve on.
	shards []atomic.Pointer[sqlstore.Store]
	// down[k] is set while shard k's server does not answer (health.go).
	down []atomic.Bool
	// wrote[k] is set when a post went into shard k's outbox since the
	// relays were last woken (notify.go).
	wrote []atomic.Bool
	// mv switches a shard that moved to its new place (moved.go).
	mv *moves
}

// New returns a Store over shards, one store per logical shard of m, in
// shard order. It takes ownership of them (Close closes them).
func New(m Map, shards []*sqlstore.Store) (*Store, error) {
	if len(shards) != m.N {
		return nil, fmt.Errorf("shards: %d stores for %d shards", len(shards), m.N)
	}
	s := &Store{m: m, shards: make([]atomic.Pointer[sqlstore.Store], len(shards)), down: make([]atomic.Bool, len(shards)), wrote: make([]atomic.Bool, len(shards)), mv: newMoves(m.N)}
	for k, st := range shards {
		s.shards[k].Store(st)
	}
	return s, nil
}

// Map returns the shard map.
func (s *Store) Map() Map { return s.m }

// N returns the number of logical shards.
func (s *Store) N() int { return s.m.N }

// Shard returns logical shard k's store: a relay runs on each one's
// outbox, and the metrics read each one's pools.
func (s *Store) Shard(k int) *sqlstore.Store { return s.shards[k].Load() }

// of returns the shard that holds id's rows: a user's, or a post's (its
// id carries its author's shard).
func (s *Store) of(id int64) *sqlstore.Store { return s.Shard(s.m.Of(id)) }

// byShard groups ids by the shard that holds them, keeping their order.
func (s *Store) byShard(ids []int64) map[int][]int64 {
	g := make(map[int][]int64)
	for _, id := range ids {
		k := s.m.Of(id)
		g[k] = append(g[k], id)
	}
	return g
}

// each runs f on every shard at once and returns the shards' errors
// joined; f's results go where f puts them (index k is shard k's).
func (s *Store) each(ctx context.Context, f func(ctx context.Context, k int, st *sqlstore.Store) error) error {
	return s.some(ctx, allOf(len(s.shards)), f)
}

// some is each over the shards ks only.
func (s *Store) some(ctx context.Context, ks []int, f func(ctx context.Context, k int, st *sqlstore.Store) error) error {
	return errors.Join(s.run(ctx, ks, f)...)
}

// run runs f on the shards ks at once, notes each outcome (health.go),
// and returns their errors, index k being shard k's.
func (s *Store) run(ctx context.Context, ks []int, f func(ctx context.Context, k int, st *sqlstore.Store) error) []error {
	errs := make([]error, s.m.N)
	call := func(k int) {
		errs[k] = f(ctx, k, s.Shard(k))
		s.note(k, errs[k])
	}
	if len(ks) == 1 {
		call(ks[0])
		return errs
	}
	var wg sync.WaitGroup
	for _, k := range ks {
		wg.Go(func() { call(k) })
	}
	wg.Wait()
	return errs
}

func allOf(n int) []int {
	ks := make([]int, n)
	for i := range ks {
		ks[i] = i
	}
	return ks
}

// Close closes every shard's pools.
func (s *Store) Close() error {
	var errs []error
	for k := range s.shards {
		errs = append(errs, s.Shard(k).Close())
	}
	errs = append(errs, s.mv.closeRetired())
	return errors.Join(errs...)
}
