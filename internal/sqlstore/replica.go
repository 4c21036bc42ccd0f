package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Reads from a replica that never show a user less than they wrote.
//
// A store opened with a read DSN sends its lag-tolerant reads (Store.replica)
// to the replica only while WatchReplica's heartbeat says it may:
//
//   - every BeatInterval the process writes its own row of replica_heartbeats
//     on the primary, with its clock's time h, and reads the row back from
//     the replica. A replica that shows h has applied every transaction
//     committed before h was taken (it applies in commit order), so it is
//     "caught up to h", and its lag is now − h.
//   - a replica behind by more than MaxLag, or whose read failed, is not
//     read: the reads go to the primary until a heartbeat finds it back.
//   - a read on behalf of a user whose last write committed at t (feed.WithLastWrite)
//     goes to the replica only once it is caught up past t + ClockSkew;
//     before that it reads the primary.
//   - a read the replica fails is retried once on the primary, so that a
//     replica dying under load costs no request an error.

// ClockSkew is the margin between the clocks of two feedd hosts that a
// read after a user's write (feed.WithLastWrite) allows for: the mark of a write is taken by the clock of the
// process that made it, the heartbeat by the clock of the process that
// reads. Hosts kept by NTP differ by a few milliseconds.
const ClockSkew = 100 * time.Millisecond

// BeatInterval is how often a process checks how far its replica is.
const BeatInterval = 250 * time.Millisecond

// lagWatch is what the heartbeat learnt of the replica; the zero value
// (never caught up) sends every read to the primary.
type lagWatch struct {
	// maxLag is the lag past which the replica is not read, nanoseconds.
	maxLag atomic.Int64
	// seen is the newest heartbeat the replica showed, Unix microseconds.
	seen atomic.Int64
	// lag is the last measured lag, nanoseconds; -1 while the replica
	// does not answer.
	lag atomic.Int64
	// down is set when a read of the replica failed, and cleared by the
	// next heartbeat that reads it.
	down atomic.Bool
}

// serves reports whether a lag-tolerant read with ctx may go to the
// replica now.
func (w *lagWatch) serves(ctx context.Context) bool {
	if w.down.Load() {
		return false
	}
	seen := time.UnixMicro(w.seen.Load())
	if time.Since(seen) > time.Duration(w.maxLag.Load()) {
		return false
	}
	if t, ok := feed.LastWrite(ctx); ok && !seen.After(t.Add(ClockSkew)) {
		return false
	}
	return true
}

// ReplicaLag returns the replica's lag as the last heartbeat measured it,
// and true; while the replica does not answer, the time since the newest
// heartbeat it showed (0 if none), and false; 0 and false without a replica.
func (s *Store) ReplicaLag() (time.Duration, bool) {
	if s.lag == nil {
		return 0, false
	}
	if lag := s.lag.lag.Load(); lag >= 0 && !s.lag.down.Load() {
		return time.Duration(lag), true
	}
	if seen := s.lag.seen.Load(); seen > 0 {
		return time.Since(time.UnixMicro(seen)), false
	}
	return 0, false
}

// ReplicaSeen returns the newest heartbeat the replica showed (the zero
// time if none, or without a replica): a user who wrote before it, by
// ClockSkew, has its reads served by the replica.
func (s *Store) ReplicaSeen() time.Time {
	if s.lag == nil || s.lag.seen.Load() == 0 {
		return time.Time{}
	}
	return time.UnixMicro(s.lag.seen.Load())
}

// HasReplica reports whether the store was opened with a read replica.
func (s *Store) HasReplica() bool { return s.lag != nil }

// WatchReplica runs the heartbeat that decides which reads the replica
// takes (see above) until ctx ends; maxLag is the lag past which the
// replica is not read. Until it has run once, every read goes to the
// primary. A store without a replica returns at once.
func (s *Store) WatchReplica(ctx context.Context, maxLag time.Duration, logger *slog.Logger) {
	if s.lag == nil {
		return
	}
	s.lag.maxLag.Store(int64(maxLag))
	var id [8]byte
	_, _ = rand.Read(id[:])
	process := hex.EncodeToString(id[:])
	defer func() {
		// The row is the process's own: leave no trace of it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_, _ = s.db.ExecContext(ctx, "DELETE FROM replica_heartbeats WHERE process = ?", process)
	}()
	t := time.NewTicker(BeatInterval)
	defer t.Stop()
	// Down until the first beat reads the replica: a new database
	// reaches it a moment after the primary.
	wasUp := false
	for {
		err := s.beat(ctx, process, min(maxLag, time.Second))
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && wasUp:
			logger.Warn("read replica not read: its heartbeat failed; reads go to the primary", "err", err)
		case err == nil && !wasUp:
			logger.Info("read replica answers its heartbeat; it takes the reads it is fresh enough for", "lag", time.Duration(s.lag.lag.Load()))
		}
		wasUp = err == nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// beat writes process's heartbeat on the primary and reads the newest
// one the replica shows, each within timeout.
func (s *Store) beat(ctx context.Context, process string, timeout time.Duration) error {
	ctx = forJob(ctx, "replica_heartbeat")
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	now := time.Now().UnixMicro()
	res, err := s.db.ExecContext(wctx, "UPDATE replica_heartbeats SET beat = ? WHERE process = ?", now, process)
	if n, _ := rowsAffected(res, err); err == nil && n == 0 {
		_, err = s.db.ExecContext(wctx, "INSERT INTO replica_heartbeats (process, beat) VALUES (?, ?)", process, now)
	}
	if err != nil {
		// The primary is not answering: the replica's lag is unknown, and
		// grows as seen ages; the reads go to the primary anyway.
		return fmt.Errorf("sqlstore: replica heartbeat: write: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var seen int64
	err = s.replica.QueryRowContext(rctx, "SELECT beat FROM replica_heartbeats WHERE process = ?", process).Scan(&seen)
	if errors.Is(err, sql.ErrNoRows) {
		// The first beat has not reached the replica yet: it answers, but
		// is not caught up to anything of this process's.
		err = nil
	}
	if err != nil {
		s.lag.lag.Store(-1)
		s.lag.down.Store(true)
		return fmt.Errorf("sqlstore: replica heartbeat: read: %w", err)
	}
	if seen > s.lag.seen.Load() {
		s.lag.seen.Store(seen)
	}
	s.lag.lag.Store(int64(time.Since(time.UnixMicro(s.lag.seen.Load()))))
	s.lag.down.Store(false)
	return nil
}

func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// fromReplica runs read, a lag-tolerant read, on the replica if it may
// take it (see lagWatch.serves), else on the read pool; a read the
// replica fails is retried once on the read pool, and the replica is not
// read again until a heartbeat finds it back.
func (s *Store) fromReplica(ctx context.Context, read func(db *sql.DB) error) error {
	if s.lag == nil {
		return read(s.replica)
	}
	if !s.lag.serves(ctx) {
		return read(s.rdb)
	}
	err := read(s.replica)
	if err == nil || errors.Is(err, sql.ErrNoRows) || ctx.Err() != nil {
		return err
	}
	s.lag.down.Store(true)
	return read(s.rdb)
}

// replicaIDs is queryIDs on the lag-tolerant read path.
func (s *Store) replicaIDs(ctx context.Context, n int, query string, args ...any) ([]int64, error) {
	var ids []int64
	err := s.fromReplica(ctx, func(db *sql.DB) (err error) {
		ids, err = s.queryIDsOn(ctx, db, n, query, args...)
		return err
	})
	return ids, err
}
