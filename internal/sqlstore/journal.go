package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The journal of the writes that span shards (shard_syncs): the rows a
// truth half writes, the repairers' claims of the rows a dead writer left,
// and their deletion once synced. mirror.go syncs the mirrors.

// SyncDelay is how long after its write a journal row waits before a
// repairer (ClaimSyncs) may take it: the writer syncs at once, and the
// repairer is for the writer that died first.
const SyncDelay = 5 * time.Second

func compareSyncs(x, y Sync) int {
	return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B))
}

// sortedSyncs returns syncs in key order without repeats: the journal's
// lock order.
func sortedSyncs(syncs []Sync) []Sync {
	out := slices.SortedFunc(slices.Values(syncs), compareSyncs)
	return slices.CompactFunc(out, func(x, y Sync) bool { return compareSyncs(x, y) == 0 })
}

// journal records, in the truth's transaction, that the mirrors of syncs
// must be brought in line, and sets each one's Due to the due_at it
// wrote: the writer that syncs them after its commit deletes the rows
// without reading them again (DoneSyncs). A row that is there already
// gets a later due_at, strictly: a sync that read the row before this
// write, and so may have read the truth before it, leaves the row in
// place (and a Due below the stored one leaves it to the repairer).
func (s *Store) journal(ctx context.Context, tx *sql.Tx, syncs []Sync) error {
	if len(syncs) == 0 {
		return nil
	}
	due := millis(time.Now().Add(SyncDelay))
	for i := range syncs {
		syncs[i].Due = due
	}
	for chunk := range slices.Chunk(sortedSyncs(syncs), importRows) {
		args := make([]any, 0, 4*len(chunk))
		for _, y := range chunk {
			args = append(args, int64(y.Kind), y.A, y.B, due)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO shard_syncs (kind, a, b, due_at) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", len(chunk)), ", ")+s.d.upsertSync, args...); err != nil {
			return fmt.Errorf("journal %d syncs: %w", len(chunk), err)
		}
	}
	return nil
}

// syncChunks splits syncs, in key order, into chunks of at most pairMax
// rows and pairTerms first users (pairChunks' bounds): a batch's journal
// rows share their first users, which syncsWhere names once each.
func syncChunks(syncs []Sync) [][]Sync {
	return boundedChunks(sortedSyncs(syncs), func(x, y Sync) bool { return x.Kind == y.Kind && x.A == y.A && x.Due == y.Due })
}

// syncChunks is the package's syncChunks, or, where syncsWhere lists
// the rows as VALUES (dialect.pairWhere), chunks of up to pairMax rows of
// one due_at each when byDue: a statement has one due_at condition.
func (d dialect) syncChunks(syncs []Sync, byDue bool) [][]Sync {
	if !d.valuesIn {
		return syncChunks(syncs)
	}
	sorted := sortedSyncs(syncs)
	if byDue {
		slices.SortStableFunc(sorted, func(x, y Sync) int { return cmp.Compare(x.Due, y.Due) })
	}
	var out [][]Sync
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && end-start < pairMax && (!byDue || sorted[end].Due == sorted[start].Due) {
			end++
		}
		out = append(out, sorted[start:end:end])
		start = end
	}
	return out
}

// syncsWhere is the package's syncsWhere, or, on a dialect.valuesIn
// server, the rows of syncs (a chunk of syncChunks) as a VALUES list,
// withDue adding their one "due_at <= Due".
func (d dialect) syncsWhere(syncs []Sync, withDue bool) (string, []any) {
	if !d.valuesIn {
		return syncsWhere(syncs, withDue)
	}
	args := make([]any, 0, 3*len(syncs)+1)
	for _, y := range syncs {
		args = append(args, int64(y.Kind), y.A, y.B)
	}
	where := "(kind, a, b) IN " + valuesOf(3, len(syncs))
	if withDue {
		where += " AND due_at <= ?"
		args = append(args, syncs[0].Due)
	}
	return where, args
}

// syncsWhere matches the journal rows of syncs, one "kind = ? AND a = ?
// AND b IN (...)" term per kind and first user; withDue adds each one's
// "due_at <= Due".
func syncsWhere(syncs []Sync, withDue bool) (string, []any) {
	type term struct {
		kind   SyncKind
		a, due int64
	}
	var order []term
	bs := map[term][]any{}
	for _, y := range syncs {
		k := term{kind: y.Kind, a: y.A}
		if withDue {
			k.due = y.Due
		}
		if _, ok := bs[k]; !ok {
			order = append(order, k)
		}
		bs[k] = append(bs[k], y.B)
	}
	terms := make([]string, len(order))
	args := make([]any, 0, 3*len(order)+len(syncs))
	for i, k := range order {
		cond := "(kind = ? AND a = ?"
		args = append(args, int64(k.kind), k.a)
		if withDue {
			cond += " AND due_at <= ?"
			args = append(args, k.due)
		}
		terms[i] = cond + " AND b IN (" + placeholders(len(bs[k])) + "))"
		args = append(args, bs[k]...)
	}
	return strings.Join(terms, " OR "), args
}

// PendingSyncs returns those of syncs that have a journal row on this
// shard, with their due_at: the ones a writer still has to run after its
// commit. A row that is gone was synced by someone who read the truth
// after the write.
func (s *Store) PendingSyncs(ctx context.Context, syncs []Sync) ([]Sync, error) {
	var out []Sync
	for _, chunk := range s.d.syncChunks(syncs, false) {
		where, args := s.d.syncsWhere(chunk, false)
		rows, err := s.db.QueryContext(ctx, "SELECT kind, a, b, due_at FROM shard_syncs WHERE "+where, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: pending syncs: %w", err)
		}
		out, err = scanSyncs(rows, out)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: pending syncs: %w", err)
		}
	}
	return out, nil
}

func scanSyncs(rows *sql.Rows, out []Sync) ([]Sync, error) {
	defer rows.Close()
	for rows.Next() {
		var y Sync
		if err := rows.Scan(&y.Kind, &y.A, &y.B, &y.Due); err != nil {
			return nil, err
		}
		out = append(out, y)
	}
	return out, rows.Err()
}

// ClaimSyncs takes up to n journal rows due at now, oldest first, that no
// other repairer is claiming (SKIP LOCKED), and moves their due_at to
// now+lease, so that another repairer leaves them alone while this one
// runs them; a repairer that dies leaves them due again after the lease.
func (s *Store) ClaimSyncs(ctx context.Context, now time.Time, n int, lease time.Duration) ([]Sync, error) {
	var claimed []Sync
	err := s.inTx(ctx, s.d.relayTx, func(tx *sql.Tx) error {
		claimed = nil
		rows, err := tx.QueryContext(ctx, "SELECT kind, a, b, due_at FROM shard_syncs WHERE due_at <= ? ORDER BY due_at LIMIT ?"+s.d.skipLocked,
			millis(now), n)
		if err != nil {
			return err
		}
		if claimed, err = scanSyncs(rows, nil); err != nil || len(claimed) == 0 {
			return err
		}
		until := millis(now.Add(lease))
		for i := range claimed {
			claimed[i].Due = until
		}
		for _, chunk := range syncChunks(claimed) {
			where, args := syncsWhere(chunk, false)
			if _, err := tx.ExecContext(ctx, "UPDATE shard_syncs SET due_at = ? WHERE "+where, append([]any{until}, args...)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claim syncs: %w", err)
	}
	return claimed, nil
}

// DoneSyncs deletes the journal rows of syncs that no write moved since
// their Due was read; a sync without a Due has no row known to delete.
// The delete can be the victim of a deadlock with a write journaling the
// same pair (MySQL), and runs again then.
func (s *Store) DoneSyncs(ctx context.Context, syncs []Sync) error {
	syncs = slices.DeleteFunc(slices.Clone(syncs), func(y Sync) bool { return y.Due == 0 })
	// MariaDB joins a VALUES list to the table only in a multi-table
	// DELETE: the single-table one scans the table.
	del := "DELETE FROM shard_syncs WHERE "
	if s.d.valuesIn {
		del = "DELETE y FROM shard_syncs y WHERE "
	}
	for _, chunk := range s.d.syncChunks(syncs, true) {
		where, args := s.d.syncsWhere(chunk, true)
		err := s.write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, del+where, args...)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlstore: done syncs: %w", err)
		}
	}
	return nil
}
