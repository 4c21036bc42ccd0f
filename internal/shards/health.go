package shards

import (
	"context"
	"errors"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// A shard whose server is down must not take the others' users down with
// it: a read about many shards that carries feed.Gaps is answered from
// the shards that answer, and records what it missed; the page it serves
// is marked degraded. What a shard is, up or down, is learnt from the
// calls' outcomes and from a ping a second (Watch).

// Up reports whether shard k answered its last call.
func (s *Store) Up(k int) bool { return !s.down[k].Load() }

// note records the outcome of a call on shard k. Errors of the caller's
// own making (a cancelled request, a bad input, a missing row) say
// nothing of the server.
func (s *Store) note(k int, err error) {
	switch {
	case err == nil:
		s.down[k].Store(false)
	case errors.Is(err, context.Canceled), feed.ErrorCode(err) != feed.EINTERNAL:
	default:
		s.down[k].Store(true)
	}
}

// Watch pings every shard each interval until ctx is done, so that a
// shard's return is seen without waiting for a call, and a dead one is
// known before a reader asks it.
func (s *Store) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		_ = s.each(ctx, func(ctx context.Context, _ int, st *sqlstore.Store) error {
			ctx, cancel := context.WithTimeout(ctx, every)
			defer cancel()
			return st.Ping(ctx)
		})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// read is some for reads that may be partial: with feed.Gaps in ctx, a
// shard that fails while another answers is left out (missed(k) tells
// the Gaps what it held) instead of failing the read. A read whose every
// shard fails fails: then SQL as a whole is out, which the caller's
// breaker and degraded path are for.
func (s *Store) read(ctx context.Context, ks []int, missed func(g *feed.Gaps, k int), f func(ctx context.Context, k int, st *sqlstore.Store) error) error {
	gaps := feed.GapsOf(ctx)
	if gaps == nil {
		return s.some(ctx, ks, f)
	}
	skip := make([]bool, s.m.N)
	var ask []int
	for _, k := range ks {
		// A shard known down is not asked while another answers: a read
		// must not wait for its timeout every time.
		if skip[k] = !s.Up(k) && s.anyUp(); !skip[k] {
			ask = append(ask, k)
		}
	}
	errs := s.run(ctx, ask, f)
	if !s.anyUp() || ctx.Err() != nil {
		return errors.Join(errs...)
	}
	for _, k := range ks {
		if skip[k] || errs[k] != nil {
			missed(gaps, k)
		}
	}
	return nil
}

var errShardDown = errors.New("shards: the shard's server is down")

// anyUp reports whether some shard answers.
func (s *Store) anyUp() bool {
	for k := range s.down {
		if s.Up(k) {
			return true
		}
	}
	return false
}
