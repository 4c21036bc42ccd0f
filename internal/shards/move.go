package shards

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/sqlstore"
)

// Moving a shard online (feedd shards move): the shard's database is
// copied to another server while it serves, and its writes pause only
// while the last changes are copied. The steps are sqlstore's (ShardMove);
// the router follows the move on its own (moved.go).

const (
	// copyChunk is the rows of one page of the copy.
	copyChunk = 1000
	// replayLimit is the changes one replay reads at a time.
	replayLimit = 5000
	// fenceBelow is the changes left in a round under which the move
	// fences: what is then replayed with writes paused.
	fenceBelow = 500
	// fenceWait bounds one attempt of the fence at waiting for the
	// transactions in flight; fenceTries is how many attempts it makes.
	fenceWait  = time.Second
	fenceTries = 5
)

// MoveReport tells what a move did.
type MoveReport struct {
	Shard int
	// Rows is each moved table's rows, equal on both sides at the end.
	Rows map[string]int64
	// Copied is the rows the copy wrote, Replayed the changes replayed
	// over Rounds rounds (the last one fenced).
	Copied   int64
	Replayed int
	Rounds   int
	// Pause is how long the shard's writes were refused: from the fence
	// to the moved state, measured here.
	Pause time.Duration
	// Took is the whole move's time.
	Took time.Duration
	// Map is the shard map with the shard at its new place: what
	// FEEDD_SHARD_DSNS should say from now on (Map.Spec).
	Map Map
}

// Move moves logical shard k of m to the server to reaches (a DSN naming
// the shards' database prefix there, as a place of FEEDD_SHARD_DSNS
// does), while the shard keeps serving: its database is created there,
// migrated and claimed as shard k, its rows copied while the changes made
// meanwhile are recorded and replayed, and then its writes are fenced for
// as long as the last changes take to copy and the row counts to be
// checked. Every process's router then finds the shard at its new place
// (moved.go), and the source refuses writes for good. A move that fails
// before the end gives the shard back to the source. log reports the
// progress (printf style); it never shows a DSN.
//
// A shard may move back to a place it left: that database forgets the
// earlier move when the new one starts. A process that has not followed
// the earlier move by then (it neither wrote the shard nor ran
// WatchMoves since) could write there, and the copy would lose its
// write: every process runs WatchMoves.
func Move(ctx context.Context, m Map, k int, to string, log func(string, ...any)) (MoveReport, error) {
	start := time.Now()
	rep := MoveReport{Shard: k}
	if log == nil {
		log = func(string, ...any) {}
	}
	if k < 0 || k >= m.N {
		return rep, fmt.Errorf("shards: move: there is no shard %d (the map has 0-%d)", k, m.N-1)
	}
	from := m.DSN(k)
	if BackendOf(from) != BackendOf(to) {
		return rep, fmt.Errorf("shards: move shard %d: the target is a %s server and the shard lives on %s", k, BackendOf(to), BackendOf(from))
	}
	srcDSN, _, _, err := ShardDSN(from, k)
	if err != nil {
		return rep, fmt.Errorf("shards: move shard %d: %w", k, err)
	}
	dstDSN, server, prefix, err := ShardDSN(to, k)
	if err != nil {
		return rep, fmt.Errorf("shards: move shard %d: the target: %w", k, err)
	}
	if srcDSN == dstDSN {
		return rep, fmt.Errorf("shards: move shard %d: it already lives there", k)
	}

	pools := sqlstore.Pools{Write: 4}
	src, err := openShard(ctx, from, k, pools, sqlstore.Timeouts{})
	if err != nil {
		return rep, err
	}
	defer src.Close()
	if err := src.CheckShard(ctx, k, m.N); err != nil {
		return rep, fmt.Errorf("shards: move shard %d: %w", k, err)
	}
	switch ms, err := src.MoveState(ctx); {
	case err != nil:
		return rep, fmt.Errorf("shards: move shard %d: %w", k, err)
	case ms.State == sqlstore.MoveMoved:
		return rep, fmt.Errorf("shards: move shard %d: it has moved already; feedd shards status shows where, and FEEDD_SHARD_DSNS should say so", k)
	case ms.State == sqlstore.MoveFenced:
		log("shard %d: an earlier move stopped while fenced; starting over (writes resume meanwhile)", k)
	}

	if err := sqlstore.CreateDatabase(ctx, server, DatabaseName(prefix, k), BackendOf(to) == Postgres); err != nil {
		return rep, fmt.Errorf("shards: move shard %d: %w", k, err)
	}
	dst, err := openShard(ctx, to, k, pools, sqlstore.Timeouts{})
	if err != nil {
		return rep, err
	}
	defer dst.Close()
	if err := dst.Migrate(ctx); err != nil {
		return rep, fmt.Errorf("shards: move shard %d: migrate the target: %w", k, err)
	}
	if err := dst.ClaimShard(ctx, k, m.N); err != nil {
		return rep, fmt.Errorf("shards: move shard %d: the target: %w", k, err)
	}
	// The target may be a place the shard once left: it refuses writes
	// until it forgets that move.
	if err := dst.ForgetMove(ctx); err != nil {
		return rep, fmt.Errorf("shards: move shard %d: the target: %w", k, err)
	}

	mv, err := src.StartMove(ctx, dst)
	if err != nil {
		return rep, fmt.Errorf("shards: move shard %d: %w", k, err)
	}
	log("shard %d: recording changes; copying %s", k, strings.Join(mv.Tables(), ", "))
	rep, err = run(ctx, mv, m, k, to, log)
	rep.Took = time.Since(start)
	if err != nil {
		if aerr := mv.Abort(context.WithoutCancel(ctx)); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return rep, fmt.Errorf("shards: move shard %d (given back to its old place): %w", k, err)
	}
	return rep, nil
}

// run copies, replays, fences and finishes a started move.
func run(ctx context.Context, mv *sqlstore.ShardMove, m Map, k int, to string, log func(string, ...any)) (MoveReport, error) {
	rep := MoveReport{Shard: k}
	for _, t := range mv.Tables() {
		n, err := mv.Copy(ctx, t, copyChunk, nil)
		rep.Copied += n
		if err != nil {
			return rep, err
		}
		log("shard %d: copied %s: %d rows", k, t, n)
	}
	for {
		n, err := replayAll(ctx, mv)
		rep.Replayed += n
		rep.Rounds++
		if err != nil {
			return rep, err
		}
		log("shard %d: round %d: replayed %d changes", k, rep.Rounds, n)
		if n < fenceBelow {
			break
		}
	}

	var fenced time.Time
	for try := 1; ; try++ {
		fenced = time.Now()
		err := mv.Fence(ctx, fenceWait)
		if err == nil {
			break
		}
		if try == fenceTries {
			return rep, err
		}
		log("shard %d: fence attempt %d: %v; replaying and trying again", k, try, err)
		n, err := replayAll(ctx, mv)
		rep.Replayed += n
		if err != nil {
			return rep, err
		}
	}
	// Where the pause goes, for the log: an operator whose pause is long
	// sees which step to blame.
	var steps []string
	lap := fenced
	step := func(name string) {
		steps = append(steps, fmt.Sprintf("%s %s", name, time.Since(lap).Round(time.Millisecond)))
		lap = time.Now()
	}
	step("fence")
	n, err := replayAll(ctx, mv)
	rep.Replayed += n
	rep.Rounds++
	if err != nil {
		return rep, err
	}
	step(fmt.Sprintf("last %d changes", n))
	if err := mv.Counters(ctx); err != nil {
		return rep, err
	}
	step("counters")
	counts, err := mv.Counts(ctx)
	step("row counts")
	if err != nil {
		return rep, err
	}
	rep.Rows = map[string]int64{}
	var differ []string
	for _, t := range mv.Tables() {
		c := counts[t]
		rep.Rows[t] = c[1]
		if c[0] != c[1] {
			differ = append(differ, fmt.Sprintf("%s has %d rows at the source and %d at the target", t, c[0], c[1]))
		}
	}
	if len(differ) > 0 {
		return rep, fmt.Errorf("the copy differs: %s", strings.Join(differ, "; "))
	}
	if err := mv.Finish(ctx, to); err != nil {
		return rep, err
	}
	rep.Pause = time.Since(fenced)
	rep.Map = m.With(k, to)
	step("moved")
	log("shard %d: moved; writes paused for %s (%s)", k, rep.Pause.Round(time.Millisecond), strings.Join(steps, ", "))
	return rep, nil
}

// replayAll replays the recorded changes until a replay finds fewer than
// it may take: the changes of one round.
func replayAll(ctx context.Context, mv *sqlstore.ShardMove) (int, error) {
	total := 0
	for {
		n, err := mv.Replay(ctx, replayLimit)
		total += n
		if err != nil || n < replayLimit {
			return total, err
		}
	}
}

// With returns m with shard k placed on dsn (a DSN naming the shards'
// database prefix), the other shards where they were.
func (m Map) With(k int, dsn string) Map {
	place := make([]string, m.N)
	for _, p := range m.Places {
		for i := p.From; i <= p.To; i++ {
			place[i] = p.DSN
		}
	}
	place[k] = dsn
	out := Map{N: m.N}
	for i, d := range place {
		if n := len(out.Places); n > 0 && out.Places[n-1].DSN == d && out.Places[n-1].To == i-1 {
			out.Places[n-1].To = i
			continue
		}
		out.Places = append(out.Places, Place{From: i, To: i, DSN: d})
	}
	return out
}

// Spec is m as FEEDD_SHARD_DSNS says it, passwords included.
func (m Map) Spec() string {
	places := slices.Clone(m.Places)
	slices.SortFunc(places, func(a, b Place) int { return a.From - b.From })
	parts := make([]string, len(places))
	for i, p := range places {
		if p.From == p.To {
			parts[i] = fmt.Sprintf("%d=%s", p.From, p.DSN)
		} else {
			parts[i] = fmt.Sprintf("%d-%d=%s", p.From, p.To, p.DSN)
		}
	}
	return strings.Join(parts, ";")
}
