package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// importRows bounds the rows of one multi-row statement of the users,
// follows and likes an import brings: under SQLite's 32766 bound
// variables at 5 per row, and well under MySQL's default packet size.
const importRows = 2000

// importIDs bounds the ids of one IN list of an import: one statement for
// a whole batch's users, under SQLite's bound on variables.
const importIDs = 5000

// idChunks is chunks with importIDs per chunk; ids must be sorted and
// without repeats.
func idChunks(ids []int64) [][]any {
	var out [][]any
	for start := 0; start < len(ids); start += importIDs {
		part := ids[start:min(start+importIDs, len(ids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		out = append(out, args)
	}
	return out
}

// ImportUsers stores the users that do not exist yet, with the rules of
// CreateUser (counts start at zero; an id whose earlier user was purged
// starts at that user's token generation), and leaves existing ones as
// they are: running it twice changes nothing. outcomes[i] is what became
// of users[i].
func (s *Store) ImportUsers(ctx context.Context, users []feed.User) ([]feed.ImportOutcome, error) {
	out := make([]feed.ImportOutcome, len(users))
	for start := 0; start < len(users); start += importRows {
		chunk := users[start:min(start+importRows, len(users))]
		if err := s.importUsers(ctx, chunk, out[start:]); err != nil {
			return nil, fmt.Errorf("sqlstore: import %d users: %w", len(users), err)
		}
	}
	return out, nil
}

func (s *Store) importUsers(ctx context.Context, users []feed.User, out []feed.ImportOutcome) error {
	ids := make([]any, 0, len(users))
	for _, u := range users {
		ids = append(ids, u.ID)
	}
	deleted := map[int64]bool{}
	exists := map[int64]bool{}
	rows, err := s.db.QueryContext(ctx, "SELECT id, deleted_at IS NOT NULL FROM users WHERE id IN ("+placeholders(len(ids))+")", ids...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var del bool
		if err := rows.Scan(&id, &del); err != nil {
			rows.Close()
			return err
		}
		exists[id], deleted[id] = true, del
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	gens := map[int64]int64{}
	rows, err = s.db.QueryContext(ctx, "SELECT user_id, token_generation FROM user_purges WHERE user_id IN ("+placeholders(len(ids))+")", ids...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, gen int64
		if err := rows.Scan(&id, &gen); err != nil {
			rows.Close()
			return err
		}
		gens[id] = gen
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	held, err := s.handleHolders(ctx, users)
	if err != nil {
		return err
	}
	now := millis(time.Now())
	var args []any
	var fresh []int
	for i, u := range users {
		switch {
		case deleted[u.ID]:
			out[i] = feed.Deleting
			continue
		case exists[u.ID]:
			out[i] = feed.Unchanged
			continue
		case u.Handle != "" && held[u.Handle] != 0:
			out[i] = feed.HandleInUse
			continue
		}
		exists[u.ID] = true // the same id again in this batch is unchanged
		if u.Handle != "" {
			held[u.Handle] = u.ID
		}
		created := now
		if !u.CreatedAt.IsZero() {
			created = millis(u.CreatedAt)
		}
		args = append(args, u.ID, u.Name, feed.NameKey(u.Name), nullString(u.Handle), created, gens[u.ID])
		fresh = append(fresh, i)
		out[i] = feed.Imported
	}
	if len(fresh) == 0 {
		return nil
	}
	res, err := s.db.ExecContext(ctx, "INSERT INTO users (id, name, name_key, handle, follower_count, following_count, created_at, token_generation) VALUES "+
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, 0, 0, ?, ?), ", len(fresh)), ", ")+s.d.keepExisting, args...)
	if err != nil {
		return err
	}
	// A user created meanwhile (the API, another import) was kept as it
	// was: count those rows unchanged, so that the totals stay exact.
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	for k := len(fresh) - 1; k >= 0 && int64(len(fresh)) > n; k-- {
		out[fresh[k]] = feed.Unchanged
		fresh = fresh[:k]
	}
	return nil
}

// handleHolders returns the holders of the handles users bring, by
// handle: an import leaves out a user whose handle another holds, rather
// than the insert dropping it without a word.
func (s *Store) handleHolders(ctx context.Context, users []feed.User) (map[string]int64, error) {
	held := map[string]int64{}
	var hs []any
	for _, u := range users {
		if u.Handle != "" {
			hs = append(hs, u.Handle)
		}
	}
	if len(hs) == 0 {
		return held, nil
	}
	rows, err := s.db.QueryContext(ctx, "SELECT handle, id FROM users WHERE handle IN ("+placeholders(len(hs))+")", hs...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var h string
		var id int64
		if err := rows.Scan(&h, &id); err != nil {
			rows.Close()
			return nil, err
		}
		held[h] = id
	}
	return held, closeRows(rows)
}

func closeRows(rows *sql.Rows) error {
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}
