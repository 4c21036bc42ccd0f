package shards

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// How the router follows a shard that moved (Move): the source database
// refuses writes from the fence on (sqlstore.IsMoving) and, once moved,
// names the new place. A write refused so waits for the move to end,
// switches the shard to the new place and runs again there; WatchMoves
// switches a process that only reads. Until a process switches, its reads
// of the shard go to the source, which stops changing at the fence: a
// process that does not write there reads the shard as it was at the
// fence for up to WatchMoves' interval (1 s) plus one poll after the move
// ends.

const (
	// movePoll is how often a refused write reads the move's state.
	movePoll = 50 * time.Millisecond
	// moveWait bounds how long a refused write waits for the move to
	// end: the move's pause is under 2 s.
	moveWait = 5 * time.Second
	// retireAfter is how long a switched-from store stays open, for the
	// calls that loaded it just before the switch.
	retireAfter = 10 * time.Second
)

// moves is what a Store needs to switch shards.
type moves struct {
	share    []sqlstore.Pools // each shard's pools, for its new place
	timeouts sqlstore.Timeouts
	locks    []sync.Mutex // one switch of a shard at a time

	mu      sync.Mutex
	retired map[*sqlstore.Store]*time.Timer
}

func newMoves(n int) *moves {
	return &moves{share: make([]sqlstore.Pools, n), locks: make([]sync.Mutex, n), retired: map[*sqlstore.Store]*time.Timer{}}
}

// retire closes st after retireAfter (or at Close).
func (mv *moves) retire(st *sqlstore.Store) {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	mv.retired[st] = time.AfterFunc(retireAfter, func() {
		mv.mu.Lock()
		_, ok := mv.retired[st]
		delete(mv.retired, st)
		mv.mu.Unlock()
		if ok {
			st.Close()
		}
	})
}

func (mv *moves) closeRetired() error {
	mv.mu.Lock()
	defer mv.mu.Unlock()
	var errs []error
	for st, t := range mv.retired {
		if t.Stop() {
			errs = append(errs, st.Close())
		}
		delete(mv.retired, st)
	}
	return errors.Join(errs...)
}

// write runs w on shard k's store. A write the shard refuses because it
// is fenced for a move or has moved changed nothing there: it waits for
// the move to end, and runs again at the shard's new place. A write that
// found nothing to change (ENOTFOUND) runs again there too if the shard
// turns out to have moved: a moved source refuses every change, but an
// update that matches no row changes nothing and so fires no trigger.
// Every write of a request goes through it, the halves of a cross-shard
// write (truth, mirror sync) each on its own shard; the background jobs
// that retry anyway (a purge's steps, the repairer's claims) fail with
// the refusal and run again once WatchMoves has switched the shard.
func (s *Store) write(ctx context.Context, k int, w func(st *sqlstore.Store) error) error {
	for hop := 0; ; hop++ {
		st := s.Shard(k)
		err := w(st)
		moving := sqlstore.IsMoving(err)
		if err == nil || hop == 3 || !moving && feed.ErrorCode(err) != feed.ENOTFOUND {
			return err
		}
		switched, ferr := s.follow(ctx, k, st, moving)
		switch {
		case ferr != nil:
			return fmt.Errorf("shards: shard %d: %w (%w)", k, err, ferr)
		case !switched && !moving:
			return err
		}
		// Switched, or the move gave up (aborted) and the source takes
		// writes again: run once more.
	}
}

// writePair is write for the writes about a pair of users (a follow, a
// block, a mute): it runs w(a, b) on shard k and returns whether it
// changed anything.
func (s *Store) writePair(ctx context.Context, k int, w func(*sqlstore.Store, context.Context, int64, int64) (bool, error), a, b int64) (bool, error) {
	var changed bool
	err := s.write(ctx, k, func(st *sqlstore.Store) (err error) {
		changed, err = w(st, ctx, a, b)
		return err
	})
	return changed, err
}

// follow switches shard k from old to where old says it moved. wait says
// old refused a write: then follow waits for a fenced move to end (up to
// moveWait), and reports false if it was aborted. A caller that finds the
// shard switched by another already reports true.
func (s *Store) follow(ctx context.Context, k int, old *sqlstore.Store, wait bool) (bool, error) {
	s.mv.locks[k].Lock()
	defer s.mv.locks[k].Unlock()
	if s.Shard(k) != old {
		return true, nil
	}
	deadline := time.Now().Add(moveWait)
	for {
		ms, err := old.MoveState(ctx)
		switch {
		case err != nil:
			return false, err
		case ms.State == sqlstore.MoveMoved:
			return true, s.switchTo(ctx, k, old, ms.MovedTo)
		case !wait || ms.State != sqlstore.MoveFenced:
			return false, nil
		case time.Now().After(deadline):
			return false, feed.Errorf(feed.EUNAVAILABLE, "shard %d is moving and was not done after %s", k, moveWait)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(movePoll):
		}
	}
}

// followMoved switches shard k if st, its store, says it moved.
func (s *Store) followMoved(ctx context.Context, k int, st *sqlstore.Store) error {
	ms, err := st.MoveState(ctx)
	if err != nil || ms.State != sqlstore.MoveMoved {
		return err
	}
	_, err = s.follow(ctx, k, st, false)
	return err
}

// switchTo opens shard k at place (a DSN naming the shards' database
// prefix, as in FEEDD_SHARD_DSNS), checks it is shard k, and swaps it in
// for old, which closes after retireAfter.
func (s *Store) switchTo(ctx context.Context, k int, old *sqlstore.Store, place string) error {
	if place == "" {
		return fmt.Errorf("shards: shard %d says it moved but not where", k)
	}
	st, err := openShard(ctx, place, k, s.mv.share[k], s.mv.timeouts)
	if err != nil {
		return err
	}
	if err := st.CheckShard(ctx, k, s.m.N); err != nil {
		st.Close()
		return fmt.Errorf("shards: shard %d's new place: %w", k, err)
	}
	if !s.shards[k].CompareAndSwap(old, st) {
		st.Close() // cannot happen under the shard's lock; keep the other
		return nil
	}
	s.mv.retire(old)
	return nil
}

// WatchMoves switches, every interval, each shard whose database says it
// has moved, until ctx ends: what lets a process that only reads a shard
// leave its old place. Each look is one primary-key read per shard. A
// look that fails is tried again at the next interval.
func (s *Store) WatchMoves(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.each(ctx, func(ctx context.Context, k int, st *sqlstore.Store) error {
			return s.followMoved(ctx, k, st)
		})
	}
}

// Outbox is shard k's outbox for a relay (relay.Outbox), at wherever the
// shard lives: a relay given Shard(k) itself would go on claiming events
// at the old place after a move, and fail there. An event whose publish
// the fence caught before the relay marked it sent is published again
// from the new place: at least once, as after a relay's crash.
func (s *Store) Outbox(k int) *ShardOutbox { return &ShardOutbox{s: s, k: k} }

// ShardOutbox is one shard's outbox, following the shard's moves.
type ShardOutbox struct {
	s *Store
	k int
}

func (o *ShardOutbox) RelayOutbox(ctx context.Context, n int, publish func(ctx context.Context, evs []feed.OutboxEvent) error) (sent int, err error) {
	err = o.s.write(ctx, o.k, func(st *sqlstore.Store) (err error) {
		sent, err = st.RelayOutbox(ctx, n, publish)
		return err
	})
	return sent, err
}

func (o *ShardOutbox) SweepOutbox(ctx context.Context, sentBefore time.Time) (swept int64, err error) {
	err = o.s.write(ctx, o.k, func(st *sqlstore.Store) (err error) {
		swept, err = st.SweepOutbox(ctx, sentBefore)
		return err
	})
	return swept, err
}

func (o *ShardOutbox) OutboxBacklog(ctx context.Context) (int64, error) {
	return o.s.Shard(o.k).OutboxBacklog(ctx)
}

// ListenOutbox listens at the shard's place when it is called: after a
// move the relay hears nothing until it listens again, and finds the
// events by its poll meanwhile.
func (o *ShardOutbox) ListenOutbox(ctx context.Context, wake func()) error {
	return o.s.Shard(o.k).ListenOutbox(ctx, wake)
}
