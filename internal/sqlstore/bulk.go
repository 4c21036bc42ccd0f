package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/feedd/feedd/internal/feed"
)

// BulkCreateUsers stores many new users, a chunk per transaction, with the
// rules of CreateUser. It is for tools, seeding and load tests: an
// existing id is ECONFLICT and leaves the users of earlier chunks stored.
func (s *Store) BulkCreateUsers(ctx context.Context, users []feed.User) error {
	now := time.Now()
	for chunk := range slices.Chunk(users, chunkSize) {
		rows := make([]string, len(chunk))
		args := make([]any, 0, 3*len(chunk))
		for i, u := range chunk {
			if u.ID <= 0 || utf8.RuneCountInString(u.Name) > maxNameRunes {
				return fmt.Errorf("sqlstore: bulk create users: %w",
					feed.Errorf(feed.EINVALID, "user %d: ids are positive and names at most %d characters", u.ID, maxNameRunes))
			}
			created := u.CreatedAt
			if created.IsZero() {
				created = now
			}
			rows[i] = "(?, ?, 0, 0, ?)"
			args = append(args, u.ID, u.Name, millis(created))
		}
		_, err := s.db.ExecContext(ctx,
			"INSERT INTO users (id, name, follower_count, following_count, created_at) VALUES "+strings.Join(rows, ", "),
			args...)
		if s.d.duplicate(err) {
			err = feed.Errorf(feed.ECONFLICT, "one of users %d..%d already exists", chunk[0].ID, chunk[len(chunk)-1].ID)
		}
		if err != nil {
			return fmt.Errorf("sqlstore: bulk create users: %w", err)
		}
	}
	return nil
}

// BulkFollow makes every one of followers follow followee, with exact
// counts as Follow keeps them: edges that exist are left alone and not
// counted again. It works a chunk of followers per transaction, so a
// failure can leave earlier chunks done; running it again completes the
// job. A missing user is ENOTFOUND, followee among followers EINVALID.
func (s *Store) BulkFollow(ctx context.Context, followee int64, followers []int64) error {
	for _, chunk := range chunks(followers) {
		err := s.write(ctx, func(tx *sql.Tx) error { return s.followChunk(ctx, tx, followee, chunk) })
		if err != nil {
			return fmt.Errorf("sqlstore: bulk follow %d: %w", followee, err)
		}
	}
	return nil
}

// followChunk is one transaction of BulkFollow; chunk holds distinct ids.
func (s *Store) followChunk(ctx context.Context, tx *sql.Tx, followee int64, chunk []any) error {
	// Lock every user involved, in id order as Follow does, so that this
	// transaction and concurrent Follows queue rather than deadlock.
	ids := append([]any{followee}, chunk...)
	rows, err := tx.QueryContext(ctx, "SELECT id FROM users WHERE id IN ("+placeholders(len(ids))+") AND deleted_at IS NULL"+s.d.forUpdate, ids...)
	if err != nil {
		return err
	}
	found, err := scanIDs(rows, len(ids))
	if err != nil {
		return err
	}
	exists := make(map[int64]bool, len(found))
	for _, id := range found {
		exists[id] = true
	}
	for _, id := range ids {
		if id := id.(int64); !exists[id] {
			return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", id)
		}
	}

	// Under the locks no one else changes these edges: the ones missing
	// now are exactly the ones this transaction adds.
	rows, err = tx.QueryContext(ctx, "SELECT follower_id FROM follows WHERE followee_id = ? AND follower_id IN ("+
		placeholders(len(chunk))+")", append([]any{followee}, chunk...)...)
	if err != nil {
		return err
	}
	have, err := scanIDs(rows, len(chunk))
	if err != nil {
		return err
	}
	already := make(map[int64]bool, len(have))
	for _, id := range have {
		already[id] = true
	}
	now := millis(time.Now())
	var values []string
	var args, added []any
	for _, id := range chunk {
		id := id.(int64)
		if id == followee {
			return feed.Errorf(feed.EINVALID, "a user cannot follow themselves")
		}
		if already[id] {
			continue
		}
		values = append(values, "(?, ?, ?)")
		args = append(args, id, followee, now)
		added = append(added, id)
	}
	if len(added) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO follows (follower_id, followee_id, created_at) VALUES "+
		strings.Join(values, ", "), args...); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE users SET following_count = following_count + 1 WHERE id IN ("+
		placeholders(len(added))+")", added...); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "UPDATE users SET follower_count = follower_count + ? WHERE id = ?", len(added), followee)
	return err
}
