package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// pair is an edge: follower a, followee b.
type pair struct{ a, b int64 }

// ImportFollows adds the edges (follower, followee) that do not exist yet,
// with exact counts: edges that exist are left alone and not counted
// again, so running it twice changes nothing. An edge naming an unknown
// user, a follow of oneself, and an edge a block forbids are left out
// and said so in the outcomes.
//
// One transaction per call, first on the fast path, which locks its
// users only at its end: it inserts the edges, then locks every user of
// them in id order (a locking read walks its IN list sorted, and the
// chunks go in ascending order, as Follow does), sees under those locks
// that each is live and that no block stands between two of them, and
// moves the counts by the edges it inserted. A live Follow or Unfollow of
// one of these pairs meets the inserted row's lock and queues behind the
// import, and every count moves by increments, so counts stay exact.
// Two batches of the same users overlap everywhere but in their short
// count updates: when each batch locked its users for its whole insert,
// two writers took turns (92–97k follows/s against 114–121k/s, same
// run, docs/performance.md#importing).
//
// A batch that is not all new edges of live, unblocked users (a re-run,
// a bad line, a block) is undone and run again on the locking path: every
// user locked first, then the edges read and inserted.
func (s *Store) ImportFollows(ctx context.Context, edges [][2]int64) (feed.FollowImport, error) {
	res, _, err := s.ImportFollowsOn(ctx, Shard{}, edges, nil)
	return res, err
}

// ImportFollowsOn is ImportFollows on home, the shard of every edge's
// follower: live tells which followees of other shards exist (the caller
// asked their shards). The edges to them that it adds are journaled for
// their mirrors, one whole row per follower (SyncFollowsOf), which it
// returns with their Due, for the caller to sync the edges and then
// delete the rows; their followees' counts move with the mirrors.
func (s *Store) ImportFollowsOn(ctx context.Context, home Shard, edges [][2]int64, live map[int64]bool) (feed.FollowImport, []Sync, error) {
	var res feed.FollowImport
	var syncs []Sync
	var err error
	for lockFirst := false; ; lockFirst = true {
		err = s.write(ctx, func(tx *sql.Tx) error {
			var err error
			res, syncs, err = s.importFollows(ctx, tx, home, live, edges, lockFirst)
			return err
		})
		if lockFirst || !errors.Is(err, errLockFirst) {
			break
		}
	}
	if err != nil {
		return feed.FollowImport{}, nil, fmt.Errorf("sqlstore: import %d follows: %w", len(edges), err)
	}
	return res, syncs, nil
}

// errLockFirst says a batch of follows left the fast path: it held edges
// that exist, users that are not live, or blocked pairs.
var errLockFirst = errors.New("the batch takes the locking path")

func (s *Store) importFollows(ctx context.Context, tx *sql.Tx, home Shard, foreign map[int64]bool, edges [][2]int64, lockFirst bool) (feed.FollowImport, []Sync, error) {
	res := feed.FollowImport{Outcomes: make([]feed.ImportOutcome, len(edges))}
	users := make([]int64, 0, 2*len(edges))
	for _, e := range edges {
		users = append(users, e[0], e[1])
	}
	slices.Sort(users)
	users = slices.Compact(users)
	// The users of other shards are not locked here, nor counted: their
	// side is the mirror's.
	local := slices.DeleteFunc(slices.Clone(users), func(id int64) bool { return !home.Holds(id) })
	live, blocked := map[int64]bool{}, map[pair]bool{}
	if lockFirst {
		var err error
		if live, err = s.liveUsers(ctx, tx, local, s.d.forUpdate); err != nil {
			return res, nil, err
		}
		for id, ok := range foreign {
			if ok && !home.Holds(id) {
				live[id] = true
			}
		}
		// Block takes both users' locks: under ours, this read is final.
		if blocked, err = s.blocksAmong(ctx, tx, users, ""); err != nil {
			return res, nil, err
		}
	}
	var want []pair
	for i, e := range edges {
		switch {
		case e[0] == e[1]:
			res.Outcomes[i] = feed.SelfFollow
		case lockFirst && (!live[e[0]] || !live[e[1]]):
			res.Outcomes[i] = feed.UnknownUser
		case blocked[pair{e[0], e[1]}]:
			res.Outcomes[i] = feed.Blocked
		default:
			res.Outcomes[i] = feed.Unchanged // until found missing below
			want = append(want, pair{e[0], e[1]})
		}
	}
	slices.SortFunc(want, func(x, y pair) int { return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b)) })
	want = slices.Compact(want)
	// Most batches are all new (a first run) or all there (a re-run): one
	// insert that keeps existing edges tells which by its count of
	// affected rows. On the locking path, where nobody else can add or
	// remove these edges, a batch of both kinds is undone to a savepoint
	// and reads which edges exist first.
	now := millis(time.Now())
	have := make(map[pair]bool, len(want))
	if _, err := tx.ExecContext(ctx, "SAVEPOINT import_edges"); err != nil {
		return res, nil, err
	}
	n, err := insertEdges(ctx, tx, want, now, s.d.keepExisting)
	if err != nil {
		return res, nil, err
	}
	switch {
	case n == int64(len(want)):
	case !lockFirst:
		return res, nil, errLockFirst
	case n == 0:
		for _, p := range want {
			have[p] = true
		}
	default:
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT import_edges"); err != nil {
			return res, nil, err
		}
		if err := s.readEdges(ctx, tx, want, have); err != nil {
			return res, nil, err
		}
		var missing []pair
		for _, p := range want {
			if !have[p] {
				missing = append(missing, p)
			}
		}
		if _, err := insertEdges(ctx, tx, missing, now, ""); err != nil {
			return res, nil, err
		}
	}
	added := make(map[pair]bool, len(want))
	following := map[int64]int64{}
	followers := map[int64]int64{}
	for _, p := range want {
		if have[p] {
			continue
		}
		added[p] = true
		following[p.a]++
		followers[p.b]++
	}
	// Every user of this shard whose counts move, in id order; and the
	// followees of other shards that gain followers.
	var moved, away []int64
	for id := range following {
		moved = append(moved, id)
	}
	for id := range followers {
		switch {
		case !home.Holds(id):
			away = append(away, id)
		case following[id] == 0:
			moved = append(moved, id)
		}
	}
	slices.Sort(moved)
	slices.Sort(away)
	if !lockFirst {
		locked, err := s.liveUsers(ctx, tx, moved, s.d.forUpdate)
		if err != nil {
			return res, nil, err
		}
		if len(locked) != len(moved) {
			return res, nil, errLockFirst
		}
		for _, id := range away {
			if !foreign[id] {
				return res, nil, errLockFirst
			}
		}
		// A locking read: it sees every block committed before our
		// locks, whatever this transaction read before (the blocks by
		// users of other shards are mirrored here).
		if blocked, err = s.blocksAmong(ctx, tx, slices.Sorted(slices.Values(slices.Concat(moved, away))), s.d.forUpdate); err != nil {
			return res, nil, err
		}
		for p := range added {
			if blocked[p] {
				return res, nil, errLockFirst
			}
		}
	}
	args := make([]any, 0, 5*len(moved))
	for _, id := range moved {
		args = append(args, id, "", followers[id], following[id], now)
	}
	for start := 0; start < len(args); start += 5 * importRows {
		chunk := args[start:min(start+5*importRows, len(args))]
		if _, err := tx.ExecContext(ctx, "INSERT INTO users (id, name, follower_count, following_count, created_at) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", len(chunk)/5), ", ")+s.d.addCounts, chunk...); err != nil {
			return res, nil, fmt.Errorf("count %d users: %w", len(chunk)/5, err)
		}
	}
	for i, e := range edges {
		if p := (pair{e[0], e[1]}); added[p] {
			res.Outcomes[i] = feed.Imported
			delete(added, p) // the same edge again in the batch is unchanged
		}
	}
	for _, id := range moved {
		if following[id] > 0 {
			res.Followers = append(res.Followers, id)
		}
		if followers[id] > 0 {
			res.Followees = append(res.Followees, id)
		}
	}
	var syncs []Sync
	if len(away) > 0 {
		res.Followees = slices.Sorted(slices.Values(slices.Concat(res.Followees, away)))
		token := WholeToken()
		journaled := map[int64]bool{}
		for _, p := range want {
			if !have[p] && !home.Holds(p.b) && !journaled[p.a] {
				journaled[p.a] = true
				syncs = append(syncs, Sync{Kind: SyncFollowsOf, A: p.a, B: token})
			}
		}
	}
	return res, syncs, s.journal(ctx, tx, syncs)
}

// liveUsers returns which of users (ascending, without repeats) exist and
// are not deleted, reading with the statement ending lock.
func (s *Store) liveUsers(ctx context.Context, tx *sql.Tx, users []int64, lock string) (map[int64]bool, error) {
	live := make(map[int64]bool, len(users))
	for _, chunk := range idChunks(users) {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM users WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL ORDER BY id"+lock, chunk...)
		if err != nil {
			return nil, fmt.Errorf("read users: %w", err)
		}
		found, err := scanIDs(rows, len(chunk))
		if err != nil {
			return nil, fmt.Errorf("read users: %w", err)
		}
		for _, id := range found {
			live[id] = true
		}
	}
	return live, nil
}

// blocksAmong returns every pair that a block by one of users forbids to
// follow, both ways, reading with the statement ending lock. Blocks are
// few, so it reads them all and the caller filters.
func (s *Store) blocksAmong(ctx context.Context, tx *sql.Tx, users []int64, lock string) (map[pair]bool, error) {
	blocked := map[pair]bool{}
	for _, chunk := range idChunks(users) {
		rows, err := tx.QueryContext(ctx, "SELECT blocker_id, blocked_id FROM blocks WHERE blocker_id IN ("+placeholders(len(chunk))+") ORDER BY blocker_id, blocked_id"+lock, chunk...)
		if err != nil {
			return nil, fmt.Errorf("read blocks: %w", err)
		}
		for rows.Next() {
			var p pair
			if err := rows.Scan(&p.a, &p.b); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read blocks: %w", err)
			}
			blocked[p], blocked[pair{p.b, p.a}] = true, true
		}
		if err := closeRows(rows); err != nil {
			return nil, fmt.Errorf("read blocks: %w", err)
		}
	}
	return blocked, nil
}

// MarkPulled sets the stored pull state of every author with at least
// high followers, for a hybrid deployment after an import added followers
// without going through the timeline, and reports how many changed. It
// is the state the timeline would have recorded on the follow that
// crossed the threshold, so that the author turns push again only below
// the hysteresis band, with the catch-up fan-out SetPullMode queues.
func (s *Store) MarkPulled(ctx context.Context, high int64) (int64, error) {
	res, err := s.db.ExecContext(ctx, "UPDATE users SET pull_mode = 1 WHERE follower_count >= ? AND pull_mode = 0 AND deleted_at IS NULL", high)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: mark pulled authors: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlstore: mark pulled authors: %w", err)
	}
	return n, nil
}

// readPairs runs query WHERE cond OR cond ..., one cond (two
// placeholders, filled by args) per key, likePairsPerSelect keys a
// statement, and hands each row to scan.
func readPairs[K any](ctx context.Context, tx *sql.Tx, keys []K, query, cond string, args func(K) []any, scan func(*sql.Rows) error) error {
	for start := 0; start < len(keys); start += likePairsPerSelect {
		chunk := keys[start:min(start+likePairsPerSelect, len(keys))]
		conds := make([]string, len(chunk))
		vals := make([]any, 0, 2*len(chunk))
		for i, k := range chunk {
			conds[i] = cond
			vals = append(vals, args(k)...)
		}
		rows, err := tx.QueryContext(ctx, query+" WHERE "+strings.Join(conds, " OR "), vals...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		if err := closeRows(rows); err != nil {
			return err
		}
	}
	return nil
}

// insertEdges inserts edges created at now, with the statement ending
// onDup, and returns how many rows it added.
func insertEdges(ctx context.Context, tx *sql.Tx, edges []pair, now int64, onDup string) (int64, error) {
	var added int64
	for start := 0; start < len(edges); start += importRows {
		chunk := edges[start:min(start+importRows, len(edges))]
		args := make([]any, 0, 3*len(chunk))
		for _, p := range chunk {
			args = append(args, p.a, p.b, now)
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO follows (follower_id, followee_id, created_at) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(chunk)), ", ")+onDup, args...)
		if err != nil {
			return 0, fmt.Errorf("insert %d edges: %w", len(chunk), err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		added += n
	}
	return added, nil
}

// readEdges adds to have those of edges that exist.
func (s *Store) readEdges(ctx context.Context, tx *sql.Tx, edges []pair, have map[pair]bool) error {
	err := readPairs(ctx, tx, edges, "SELECT follower_id, followee_id FROM follows"+s.d.likesByKey, "(follower_id = ? AND followee_id = ?)",
		func(p pair) []any { return []any{p.a, p.b} },
		func(rows *sql.Rows) error {
			var p pair
			err := rows.Scan(&p.a, &p.b)
			have[p] = true
			return err
		})
	if err != nil {
		return fmt.Errorf("read edges: %w", err)
	}
	return nil
}
