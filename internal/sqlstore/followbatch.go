package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// FollowBatch makes the follows and then the unfollows of one batch, each
// list in order, in one transaction, and returns the outcome of every pair
// (feed.EdgeCreated and the rest) in the order given. The outcomes are
// those of the same calls to Follow and Unfollow one after the other: a
// pair repeated is EdgeExists (or EdgeAbsent) the second time, and a pair
// both followed and unfollowed ends unfollowed. A pair with a missing or
// deleted user is EdgeUnknownUser, a follow between users who block each
// other (either way) EdgeBlocked; neither changes anything. Counts move by
// exactly the edges added and removed. The batch must pass
// feed.CheckFollowBatch (EINVALID or EBATCHTOOLARGE otherwise).
func (s *Store) FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) (followed, unfollowed []string, err error) {
	if err := feed.CheckFollowBatch(follow, unfollow); err != nil {
		return nil, nil, fmt.Errorf("sqlstore: follow batch: %w", err)
	}
	all := slices.Concat(follow, unfollow)
	if len(all) == 0 {
		return []string{}, []string{}, nil
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var err error
		followed, unfollowed, _, err = s.followBatch(ctx, tx, Shard{}, follow, unfollow, nil)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstore: follow batch of %d pairs: %w", len(all), err)
	}
	return followed, unfollowed, nil
}

// FollowBatchOn is FollowBatch on home, the shard of every pair's
// follower: live tells which followees of other shards exist (the caller
// asked their shards), and the edges to them that change are journaled
// for their mirrors, and returned, for the caller to sync.
func (s *Store) FollowBatchOn(ctx context.Context, home Shard, follow, unfollow []feed.Edge, live map[int64]bool) (followed, unfollowed []string, syncs []Sync, err error) {
	if err := feed.CheckFollowBatch(follow, unfollow); err != nil {
		return nil, nil, nil, fmt.Errorf("sqlstore: follow batch: %w", err)
	}
	all := slices.Concat(follow, unfollow)
	if len(all) == 0 {
		return []string{}, []string{}, nil, nil
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		var err error
		followed, unfollowed, syncs, err = s.followBatch(ctx, tx, home, follow, unfollow, live)
		return err
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sqlstore: follow batch of %d pairs: %w", len(all), err)
	}
	return followed, unfollowed, syncs, nil
}

// followBatch is FollowBatch's transaction. Users that home does not
// hold are taken as live when foreign says so, and not locked here.
func (s *Store) followBatch(ctx context.Context, tx *sql.Tx, home Shard, follow, unfollow []feed.Edge, foreign map[int64]bool) (followed, unfollowed []string, syncs []Sync, err error) {
	all := slices.Concat(follow, unfollow)
	users := make([]int64, 0, 2*len(all))
	exists := make(map[int64]bool, len(users))
	for _, e := range all {
		for _, id := range []int64{e.Follower, e.Followee} {
			if home.Holds(id) {
				users = append(users, id)
			} else if foreign[id] {
				exists[id] = true
			}
		}
	}
	// Lock every user of the batch in ascending id order, as Follow and
	// BulkFollow do (InnoDB walks an IN list sorted, and the chunks come
	// in order), so that this transaction and single follows, blocks and
	// other batches queue rather than deadlock.
	slices.Sort(users)
	for _, chunk := range chunks(users) {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM users WHERE id IN ("+placeholders(len(chunk))+
			") AND deleted_at IS NULL ORDER BY id"+s.d.forUpdate, chunk...)
		if err != nil {
			return nil, nil, nil, err
		}
		found, err := scanIDs(rows, len(chunk))
		if err != nil {
			return nil, nil, nil, err
		}
		for _, id := range found {
			exists[id] = true
		}
	}
	known := func(e feed.Edge) bool { return exists[e.Follower] && exists[e.Followee] }

	// Under the locks nobody else changes these edges or blocks, so what
	// is read now is what the pairs below act on.
	var candidates, blockPairs []feed.Edge
	for _, e := range all {
		if known(e) {
			candidates = append(candidates, e)
		}
	}
	for _, e := range follow {
		if known(e) {
			blockPairs = append(blockPairs, e, feed.Edge{Follower: e.Followee, Followee: e.Follower})
		}
	}
	had, err := s.pairsIn(ctx, tx, "follows", "follower_id", "followee_id", candidates)
	if err != nil {
		return nil, nil, nil, err
	}
	blocks, err := s.pairsIn(ctx, tx, "blocks", "blocker_id", "blocked_id", blockPairs)
	if err != nil {
		return nil, nil, nil, err
	}

	// Play the batch on the edges in memory, then write the difference.
	now := maps.Clone(had)
	followed = make([]string, len(follow))
	for i, e := range follow {
		switch {
		case !known(e):
			followed[i] = feed.EdgeUnknownUser
		case blocks[e] || blocks[feed.Edge{Follower: e.Followee, Followee: e.Follower}]:
			followed[i] = feed.EdgeBlocked
		case now[e]:
			followed[i] = feed.EdgeExists
		default:
			followed[i] = feed.EdgeCreated
			now[e] = true
		}
	}
	unfollowed = make([]string, len(unfollow))
	for i, e := range unfollow {
		switch {
		case !known(e):
			unfollowed[i] = feed.EdgeUnknownUser
		case now[e]:
			unfollowed[i] = feed.EdgeRemoved
			delete(now, e)
		default:
			unfollowed[i] = feed.EdgeAbsent
		}
	}
	var added, removed []feed.Edge
	for e := range now {
		if !had[e] {
			added = append(added, e)
		}
	}
	for e := range had {
		if !now[e] {
			removed = append(removed, e)
		}
	}
	if err := s.writeEdges(ctx, tx, added, removed); err != nil {
		return nil, nil, nil, err
	}
	// The followees of this database are told here; the others by their
	// mirrors' syncs.
	var told, untold []feed.Notice
	for _, e := range added {
		if home.Holds(e.Followee) {
			told = append(told, followNotice(e.Follower, e.Followee, time.Now()))
		}
	}
	for _, e := range removed {
		untold = append(untold, followNotice(e.Follower, e.Followee, time.Time{}))
	}
	if err := s.addNotices(ctx, tx, told); err != nil {
		return nil, nil, nil, err
	}
	if err := s.removeNotices(ctx, tx, untold); err != nil {
		return nil, nil, nil, err
	}
	for _, e := range slices.Concat(added, removed) {
		if !home.Holds(e.Followee) {
			syncs = append(syncs, Sync{Kind: SyncFollow, A: e.Follower, B: e.Followee})
		}
	}
	if err := s.journal(ctx, tx, syncs); err != nil {
		return nil, nil, nil, err
	}
	return followed, unfollowed, syncs, nil
}

// writeEdges inserts added, deletes removed and moves the counts of every
// user involved by exactly as much.
func (s *Store) writeEdges(ctx context.Context, tx *sql.Tx, added, removed []feed.Edge) error {
	following := map[int64]int64{}
	followers := map[int64]int64{}
	if len(added) > 0 {
		at := millis(time.Now())
		values := make([]string, len(added))
		args := make([]any, 0, 3*len(added))
		for i, e := range added {
			values[i] = "(?, ?, ?)"
			args = append(args, e.Follower, e.Followee, at)
			following[e.Follower]++
			followers[e.Followee]++
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO follows (follower_id, followee_id, created_at) VALUES "+
			strings.Join(values, ", "), args...); err != nil {
			return err
		}
	}
	if len(removed) > 0 {
		for _, chunk := range pairChunks(removed) {
			where, args := pairClause("follower_id", "followee_id", chunk)
			if _, err := tx.ExecContext(ctx, "DELETE FROM follows WHERE "+where, args...); err != nil {
				return err
			}
		}
		for _, e := range removed {
			following[e.Follower]--
			followers[e.Followee]--
		}
	}
	if err := addToCount(ctx, tx, "following_count", following); err != nil {
		return err
	}
	return addToCount(ctx, tx, "follower_count", followers)
}

// addToCount adds deltas[id] to column of each user id, one statement per
// distinct delta (most batches have one or two), the ids in order.
func addToCount(ctx context.Context, tx *sql.Tx, column string, deltas map[int64]int64) error {
	byDelta := map[int64][]int64{}
	for id, d := range deltas {
		if d != 0 {
			byDelta[d] = append(byDelta[d], id)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(byDelta)) {
		ids := byDelta[d]
		slices.Sort(ids)
		for _, chunk := range chunks(ids) {
			if _, err := tx.ExecContext(ctx, "UPDATE users SET "+column+" = "+column+" + ? WHERE id IN ("+
				placeholders(len(chunk))+")", append([]any{d}, chunk...)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// pairTerms and pairMax bound one statement's pairs: at most pairTerms
// distinct first ids (pairClause's ORed terms) and pairMax pairs in all.
// MariaDB's range optimizer takes time that grows faster than the OR
// terms: a SELECT of 1,000 pairs of as many first ids in one statement
// took 2 s, one of 100 pairs 0.08 s, on the loaded 2-core test machine
// (10.11, a follows table of 1,000,000 rows); and SQLite refuses an
// expression more than 1,000 deep, which 1,000 ORed terms are. Pairs that
// share their first ids cost little each: on the 1M bench graph's 30 M
// follows, 50 pairs of a few followers took 18 ms, 1,000 of 22 followers
// 102 ms, so an import's batch (a follower's edges together) is read in
// a twentieth of the statements.
const (
	pairTerms = 50
	pairMax   = 1000
)

// pairChunks splits pairs, sorted so that a chunk's terms share their
// first ids, into chunks within pairTerms and pairMax.
func pairChunks(pairs []feed.Edge) [][]feed.Edge {
	sorted := slices.Compact(slices.SortedFunc(slices.Values(pairs), compareEdges))
	return boundedChunks(sorted, func(x, y feed.Edge) bool { return x.Follower == y.Follower })
}

// boundedChunks splits sorted into chunks of at most pairMax items in
// which at most pairTerms runs start: neighbours for which sameTerm holds
// are one run, one term of the statement.
func boundedChunks[T any](sorted []T, sameTerm func(x, y T) bool) [][]T {
	var out [][]T
	start, terms := 0, 0
	for i := range sorted {
		first := i == start || !sameTerm(sorted[i-1], sorted[i])
		if i > start && (i-start == pairMax || first && terms == pairTerms) {
			out = append(out, sorted[start:i:i])
			start, terms, first = i, 0, true
		}
		if first {
			terms++
		}
	}
	if start < len(sorted) {
		out = append(out, sorted[start:])
	}
	return out
}

// pairsIn returns which of pairs are rows of table, whose key is (a, b);
// lock, if given, ends the statement.
func (s *Store) pairsIn(ctx context.Context, tx *sql.Tx, table, a, b string, pairs []feed.Edge, lock ...string) (map[feed.Edge]bool, error) {
	in := map[feed.Edge]bool{}
	for _, chunk := range s.d.pairChunks(pairs) {
		where, args := s.d.pairWhere(a, b, chunk)
		rows, err := tx.QueryContext(ctx, "SELECT "+a+", "+b+" FROM "+table+" WHERE "+where+strings.Join(lock, ""), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var e feed.Edge
			if err := rows.Scan(&e.Follower, &e.Followee); err != nil {
				rows.Close()
				return nil, err
			}
			in[e] = true
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// pairChunks is the package's pairChunks, or, where pairWhere lists the
// pairs as VALUES, chunks of up to pairMax pairs whatever their first
// ids: the statement's cost is its lookups, not its terms.
func (d dialect) pairChunks(pairs []feed.Edge) [][]feed.Edge {
	if !d.valuesIn {
		return pairChunks(pairs)
	}
	sorted := slices.Compact(slices.SortedFunc(slices.Values(pairs), compareEdges))
	return slices.Collect(slices.Chunk(sorted, pairMax))
}

// pairWhere matches the rows whose (a, b) is one of pairs, a chunk of
// pairChunks. On MariaDB the pairs are a VALUES list that the IN joins by
// the primary key, one lookup a pair: 12,410 pairs of 300 followers read
// in 36 ms, in statements of 1,000, against 250 ms as ORed terms of 50
// first ids (whose range optimizer's work grows faster than the terms)
// and 1.4-1.9 s as a row IN list under 1,000 values, which MariaDB hands
// to the same range optimizer (10.11, the 25,000-user import's follows;
// docs/performance.md, "Sharded beside one database").
func (d dialect) pairWhere(a, b string, pairs []feed.Edge) (string, []any) {
	if !d.valuesIn {
		return pairClause(a, b, pairs)
	}
	args := make([]any, 0, 2*len(pairs))
	for _, e := range pairs {
		args = append(args, e.Follower, e.Followee)
	}
	return "(" + a + ", " + b + ") IN " + valuesOf(2, len(pairs)), args
}

// valuesOf returns "(VALUES (...), ...)" of n rows of cols placeholders
// (cols at most 3). MariaDB names a VALUES list's columns after its first
// row's expressions, and two of the same name are an error (a pair of
// equal ids, or kind 1 of user 1): the first row's are written apart.
func valuesOf(cols, n int) string {
	first := []string{"? + 0", "? - 0", "? * 1"}[:cols]
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return "(VALUES (" + strings.Join(first, ", ") + ")" + strings.Repeat(", "+row, n-1) + ")"
}

func compareEdges(x, y feed.Edge) int {
	return cmp.Or(cmp.Compare(x.Follower, y.Follower), cmp.Compare(x.Followee, y.Followee))
}

// pairClause matches the rows whose (a, b) is one of pairs: one
// "a = ? AND b IN (...)" per distinct a, ORed, which both MySQL and SQLite
// read as one primary-key range per pair. The alternatives do worse:
// "a IN (...) AND b IN (...)" reads every edge of every a, SQLite knows
// no "(a, b) IN ((?, ?), ...)", and MariaDB turns a long one into a
// table it joins.
func pairClause(a, b string, pairs []feed.Edge) (string, []any) {
	byA := map[int64][]int64{}
	for _, e := range pairs {
		byA[e.Follower] = append(byA[e.Follower], e.Followee)
	}
	terms := make([]string, 0, len(byA))
	args := make([]any, 0, len(byA)+len(pairs))
	for _, x := range slices.Sorted(maps.Keys(byA)) {
		bs := slices.Compact(slices.Sorted(slices.Values(byA[x])))
		terms = append(terms, "("+a+" = ? AND "+b+" IN ("+placeholders(len(bs))+"))")
		args = append(args, x)
		for _, y := range bs {
			args = append(args, y)
		}
	}
	return strings.Join(terms, " OR "), args
}
