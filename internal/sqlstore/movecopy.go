package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// The copy of a move's tables, and the replay of their changes. Both
// write with upserts, so a row copied twice, or copied and then replayed,
// ends as the source has it.

// replayBatch bounds the keys of one read or write of a replay.
const replayBatch = 200

// Copy copies table's rows to the target in pages of chunk rows, in key
// order, reading each page anew (keyset paging), and reports the rows
// copied so far after each page. The writes that race with it are in
// shard_changes, for Replay.
func (m *ShardMove) Copy(ctx context.Context, table string, chunk int, progress func(rows int64)) (int64, error) {
	var t moveTable
	for _, c := range m.tables {
		if c.name == table {
			t = c
		}
	}
	if t.name == "" {
		return 0, fmt.Errorf("sqlstore: move: copy %s: not a moved table", table)
	}
	pkAt := t.pkIndexes()
	var last []any
	var total int64
	for {
		q := "SELECT " + t.colNames() + " FROM " + t.name
		var args []any
		if last != nil {
			cond, a := t.after(last)
			q += " WHERE " + cond
			args = a
		}
		q += " ORDER BY " + t.pkNames() + fmt.Sprintf(" LIMIT %d", chunk)
		page, err := m.src.readRows(ctx, t, q, args...)
		if err != nil {
			return total, fmt.Errorf("sqlstore: move: copy %s: %w", t.name, err)
		}
		if len(page) == 0 {
			return total, nil
		}
		if err := m.dst.upsertRows(ctx, t, page); err != nil {
			return total, fmt.Errorf("sqlstore: move: copy %s: %w", t.name, err)
		}
		total += int64(len(page))
		if progress != nil {
			progress(total)
		}
		row := page[len(page)-1]
		last = make([]any, len(pkAt))
		for i, at := range pkAt {
			last[i] = row[at]
		}
		if len(page) < chunk {
			return total, nil
		}
	}
}

// Replay applies up to limit recorded changes, oldest first: each changed
// key's row is read anew on the source and upserted on the target, or
// deleted there if the source has it no more; then the changes are
// forgotten. It returns how many changes it applied; a change made meanwhile is
// a new one, for the next call. Exactly the changes read are deleted: a
// change whose transaction commits late may have a lower seq than the
// ones read.
func (m *ShardMove) Replay(ctx context.Context, limit int) (int, error) {
	rows, err := m.src.db.QueryContext(ctx, "SELECT seq, tbl, k1, k2, k3, ks FROM shard_changes ORDER BY seq LIMIT ?", limit)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: move: replay: %w", err)
	}
	var seqs []int64
	keys := map[string][][]any{}
	seen := map[string]bool{}
	for rows.Next() {
		var seq int64
		var tbl string
		var k [3]sql.NullInt64
		var ks []byte
		if err := rows.Scan(&seq, &tbl, &k[0], &k[1], &k[2], &ks); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sqlstore: move: replay: %w", err)
		}
		seqs = append(seqs, seq)
		t, ok := m.table(tbl)
		if !ok {
			continue
		}
		key := make([]any, len(t.pk))
		for i, c := range t.pk {
			switch {
			case c.slot == "ks" && c.kind == colText:
				key[i] = sql.NullString{String: string(ks), Valid: ks != nil}
			case c.slot == "ks":
				key[i] = ks
			default:
				key[i] = k[c.slot[1]-'1']
			}
		}
		if id := tbl + "\x00" + keyString(key); !seen[id] {
			seen[id] = true
			keys[tbl] = append(keys[tbl], key)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sqlstore: move: replay: %w", err)
	}
	for _, t := range m.tables {
		ks := keys[t.name]
		for len(ks) > 0 {
			n := min(len(ks), replayBatch)
			if err := m.replayKeys(ctx, t, ks[:n]); err != nil {
				return 0, fmt.Errorf("sqlstore: move: replay %s: %w", t.name, err)
			}
			ks = ks[n:]
		}
	}
	n := len(seqs)
	for len(seqs) > 0 {
		n := min(len(seqs), 1000)
		args := make([]any, n)
		for i, s := range seqs[:n] {
			args[i] = s
		}
		if _, err := m.src.db.ExecContext(ctx, "DELETE FROM shard_changes WHERE seq IN ("+placeholders(n)+")", args...); err != nil {
			return 0, fmt.Errorf("sqlstore: move: replay: forget changes: %w", err)
		}
		seqs = seqs[n:]
	}
	return n, nil
}

// replayKeys brings the target's rows of keys to the source's state:
// the rows gone from the source go first, so that an upsert never meets a
// unique key held by a row the source no longer has.
func (m *ShardMove) replayKeys(ctx context.Context, t moveTable, keys [][]any) error {
	cond, args := t.keysIn(keys)
	found, err := m.src.readRows(ctx, t, "SELECT "+t.colNames()+" FROM "+t.name+" WHERE "+cond, args...)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	pkAt := t.pkIndexes()
	for _, row := range found {
		key := make([]any, len(pkAt))
		for i, at := range pkAt {
			key[i] = row[at]
		}
		have[keyString(key)] = true
	}
	var gone [][]any
	for _, k := range keys {
		if !have[keyString(k)] {
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		cond, args := t.keysIn(gone)
		if _, err := m.dst.db.ExecContext(ctx, "DELETE FROM "+t.name+" WHERE "+cond, args...); err != nil {
			return err
		}
	}
	if len(found) > 0 {
		return m.dst.upsertRows(ctx, t, found)
	}
	return nil
}

func (m *ShardMove) table(name string) (moveTable, bool) {
	for _, t := range m.tables {
		if t.name == name {
			return t, true
		}
	}
	return moveTable{}, false
}

// readRows runs q and reads t's rows.
func (s *Store) readRows(ctx context.Context, t moveTable, q string, args ...any) ([][]any, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		row, err := t.scanRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// upsertRows writes rows into t, each replacing the row of its key.
// Identity columns keep the source's values.
func (s *Store) upsertRows(ctx context.Context, t moveTable, rows [][]any) error {
	for len(rows) > 0 {
		n := min(len(rows), replayBatch)
		var q strings.Builder
		q.WriteString("INSERT INTO " + t.name + " (" + t.colNames() + ")")
		if s.postgres() && t.serial != "" {
			q.WriteString(" OVERRIDING SYSTEM VALUE")
		}
		q.WriteString(" VALUES ")
		one := "(" + placeholders(len(t.cols)) + ")"
		args := make([]any, 0, n*len(t.cols))
		for i, row := range rows[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(one)
			args = append(args, row...)
		}
		var set []string
		for _, c := range t.cols {
			if t.isKey(c.name) {
				continue
			}
			if s.postgres() {
				set = append(set, c.name+" = EXCLUDED."+c.name)
			} else {
				set = append(set, c.name+" = VALUES("+c.name+")")
			}
		}
		switch {
		case s.postgres() && len(set) == 0:
			q.WriteString(" ON CONFLICT (" + t.pkNames() + ") DO NOTHING")
		case s.postgres():
			q.WriteString(" ON CONFLICT (" + t.pkNames() + ") DO UPDATE SET " + strings.Join(set, ", "))
		case len(set) == 0:
			q.WriteString(" ON DUPLICATE KEY UPDATE " + t.pk[0].name + " = " + t.pk[0].name)
		default:
			q.WriteString(" ON DUPLICATE KEY UPDATE " + strings.Join(set, ", "))
		}
		if _, err := s.db.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

func (t moveTable) pkNames() string {
	names := make([]string, len(t.pk))
	for i, c := range t.pk {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

func (t moveTable) isKey(col string) bool {
	return slices.ContainsFunc(t.pk, func(c moveColumn) bool { return c.name == col })
}

// pkIndexes are the positions of the key's columns among t.cols.
func (t moveTable) pkIndexes() []int {
	at := make([]int, len(t.pk))
	for i, p := range t.pk {
		for j, c := range t.cols {
			if c.name == p.name {
				at[i] = j
			}
		}
	}
	return at
}

// after is the keyset condition "key > last", spelt out column by column
// (a > ? OR (a = ? AND b > ?)), which both servers' range optimizers use.
func (t moveTable) after(last []any) (string, []any) {
	var b strings.Builder
	var args []any
	for i, c := range t.pk {
		if i > 0 {
			b.WriteString(" OR (")
			for j := range i {
				b.WriteString(t.pk[j].name + " = ? AND ")
				args = append(args, last[j])
			}
		}
		b.WriteString(c.name + " > ?")
		args = append(args, last[i])
		if i > 0 {
			b.WriteString(")")
		}
	}
	return "(" + b.String() + ")", args
}

// keysIn is the condition that matches the rows of keys.
func (t moveTable) keysIn(keys [][]any) (string, []any) {
	args := make([]any, 0, len(keys)*len(t.pk))
	if len(t.pk) == 1 {
		for _, k := range keys {
			args = append(args, k[0])
		}
		return t.pk[0].name + " IN (" + placeholders(len(keys)) + ")", args
	}
	one := make([]string, len(t.pk))
	for i, c := range t.pk {
		one[i] = c.name + " = ?"
	}
	match := "(" + strings.Join(one, " AND ") + ")"
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = match
		args = append(args, k...)
	}
	return "(" + strings.Join(parts, " OR ") + ")", args
}

// keyString is a key's values as one comparable string.
func keyString(key []any) string {
	var b strings.Builder
	for _, v := range key {
		switch v := v.(type) {
		case sql.NullInt64:
			fmt.Fprintf(&b, "%d", v.Int64)
		case sql.NullString:
			b.WriteString(v.String)
		case []byte:
			b.Write(v)
		}
		b.WriteByte(0)
	}
	return b.String()
}
