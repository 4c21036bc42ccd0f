package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/feedd/feedd/internal/feed"
)

// The bulk API is for tools that fill a database faster than its rules
// would let them: bench graph's synthetic graphs (BulkLoad*), seeding and
// tests (BulkCreateUsers, BulkFollow). It is not for a database that
// serves: an import goes through the Import* methods instead.

// BulkCreateUsers stores many new users, with the rules of CreateUser
// (counts start at zero), in one transaction: BulkLoadUsers with no
// counts. An existing id is ECONFLICT, and nothing is stored.
func (s *Store) BulkCreateUsers(ctx context.Context, users []feed.User) error {
	fresh := make([]feed.User, len(users))
	for i, u := range users {
		fresh[i] = feed.User{ID: u.ID, Name: u.Name, Handle: u.Handle, CreatedAt: u.CreatedAt}
	}
	return s.BulkLoadUsers(ctx, fresh)
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
	rows, err := tx.QueryContext(ctx, "SELECT id FROM users WHERE id IN ("+placeholders(len(ids))+") AND deleted_at IS NULL ORDER BY id"+s.d.forUpdate, ids...)
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

// loadChunk bounds the rows of one of BulkLoad's statements: large enough
// to amortize a round trip, small enough for SQLite's 32766 bound
// variables and MySQL's default packet size.
const loadChunk = 2000

// BulkLoadUsers stores new users with the follower and following counts
// they carry. Unlike CreateUser, Follow and CreatePost, the BulkLoad
// methods trust their caller (bench graph): counts are stored as given,
// edges are not checked against users, and posts get no outbox event, so
// nothing fans out. Each call is one transaction of multi-row INSERTs on
// the write pool, so that several goroutines keep the database busy
// without paying a commit per row; an existing key fails that call
// (ECONFLICT for a user) and rolls back only it. Nothing is retried: InnoDB does not deadlock
// inserts of new keys into tables without unique secondary indexes,
// which these tables are. The caller keeps the counts equal to the edges
// it loads with BulkLoadFollows.
func (s *Store) BulkLoadUsers(ctx context.Context, users []feed.User) error {
	now := time.Now()
	for _, u := range users {
		if u.ID <= 0 || utf8.RuneCountInString(u.Name) > maxNameRunes || u.FollowerCount < 0 || u.FollowingCount < 0 {
			return fmt.Errorf("sqlstore: bulk load users: %w", feed.Errorf(feed.EINVALID,
				"user %d: ids are positive, names at most %d characters, counts not negative", u.ID, maxNameRunes))
		}
	}
	err := s.bulkInsert(ctx, "users", []string{"id", "name", "name_key", "handle", "follower_count", "following_count", "created_at"},
		len(users), func(i int, args []any) []any {
			u := users[i]
			created := u.CreatedAt
			if created.IsZero() {
				created = now
			}
			return append(args, u.ID, u.Name, feed.NameKey(u.Name), nullString(u.Handle), u.FollowerCount, u.FollowingCount, millis(created))
		})
	if s.d.duplicate(err) {
		err = feed.Errorf(feed.ECONFLICT, "one of users %d..%d already exists", users[0].ID, users[len(users)-1].ID)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load %d users: %w", len(users), err)
	}
	return nil
}

// BulkLoadHandles stores the claims of the handles of users (those that
// have one) in the handles table: sharded, each on its handle's shard
// (package shards), as a user created through the API claims it.
func (s *Store) BulkLoadHandles(ctx context.Context, users []feed.User) error {
	now := millis(time.Now())
	var with []feed.User
	for _, u := range users {
		if u.Handle != "" {
			with = append(with, u)
		}
	}
	err := s.bulkInsert(ctx, "handles", []string{"handle", "user_id", "claimed_at"}, len(with), func(i int, args []any) []any {
		return append(args, with[i].Handle, with[i].ID, now)
	})
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load %d handles: %w", len(with), err)
	}
	return nil
}

// BulkLoadFollows stores follow edges, each {follower, followee}, without
// touching any count (see BulkLoadUsers). Edges sorted by follower then
// followee insert fastest: that is the primary key's order.
func (s *Store) BulkLoadFollows(ctx context.Context, edges [][2]int64) error {
	for _, e := range edges {
		if e[0] <= 0 || e[1] <= 0 || e[0] == e[1] {
			return fmt.Errorf("sqlstore: bulk load follows: %w", feed.Errorf(feed.EINVALID,
				"edge %d -> %d: ids are positive and nobody follows themselves", e[0], e[1]))
		}
	}
	now := millis(time.Now())
	err := s.bulkInsert(ctx, "follows", []string{"follower_id", "followee_id", "created_at"},
		len(edges), func(i int, args []any) []any {
			return append(args, edges[i][0], edges[i][1], now)
		})
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load %d follows: %w", len(edges), err)
	}
	return nil
}

// BulkLoadPosts stores posts (ID, AuthorID, Content and CreatedAt chosen
// by the caller) without outbox events: they are history, already
// delivered as far as the fan-out is concerned, and readers find them
// when their inbox is rebuilt from SQL (see BulkLoadUsers).
func (s *Store) BulkLoadPosts(ctx context.Context, posts []feed.Post) error {
	for _, p := range posts {
		if !feed.ValidPostID(p.ID) || p.AuthorID <= 0 {
			return fmt.Errorf("sqlstore: bulk load posts: %w", feed.Errorf(feed.EINVALID,
				"post id %d must be a post id (feed.ValidPostID) and author id %d positive", p.ID, p.AuthorID))
		}
	}
	now := time.Now()
	// deleted_at is left to its default, NULL.
	err := s.bulkInsert(ctx, "posts", []string{"id", "author_id", "content", "created_at"},
		len(posts), func(i int, args []any) []any {
			p := posts[i]
			created := p.CreatedAt
			if created.IsZero() {
				created = now
			}
			return append(args, p.ID, p.AuthorID, p.Content, millis(created))
		})
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load %d posts: %w", len(posts), err)
	}
	return nil
}

// BulkLoadDone readies the tables after a bulk load for the queries that
// follow it. On PostgreSQL it runs VACUUM (ANALYZE) on users, follows and
// posts: without statistics the planner guesses the tables' sizes and
// the spread of their keys, and until a vacuum sets the visibility map an
// index-only scan (the feed's on posts_author, the follower lists' on
// follows) reads the table's pages as well. Autovacuum would do the same,
// but only some time after the load, into the bench's measurement.
// MySQL's InnoDB recomputes its statistics on its own as tables grow,
// and SQLite's plans are pinned (dialect.feedJoin): both do nothing.
func (s *Store) BulkLoadDone(ctx context.Context) error {
	if s.d.afterBulkLoad == "" {
		return nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlstore: after a bulk load: %w", err)
	}
	defer conn.Close()
	// The write pool's statement timeout is for requests; a vacuum of a
	// large graph takes minutes. RESET returns the session to the
	// timeout it was opened with before the pool reuses it.
	if _, err := conn.ExecContext(ctx, "SET statement_timeout = 0"); err != nil {
		return fmt.Errorf("sqlstore: after a bulk load: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "RESET statement_timeout")
	if _, err := conn.ExecContext(ctx, s.d.afterBulkLoad); err != nil {
		return fmt.Errorf("sqlstore: vacuum and analyze after a bulk load: %w", err)
	}
	return nil
}

// bulkInsert inserts n rows into table in one transaction; row appends
// the values of row i, one for each of columns. PostgreSQL takes them in
// one COPY (copyRows); MySQL and SQLite in multi-row INSERTs of loadChunk
// rows each.
func (s *Store) bulkInsert(ctx context.Context, table string, columns []string, n int, row func(i int, args []any) []any) error {
	if n == 0 {
		return nil
	}
	if s.d.copyFrom {
		return s.copyRows(ctx, table, columns, n, row)
	}
	insert := "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES "
	tuple := "(" + placeholders(len(columns)) + ")"
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for start := 0; start < n; start += loadChunk {
		end := min(start+loadChunk, n)
		var q strings.Builder
		q.Grow(len(insert) + (end-start)*(len(tuple)+2))
		q.WriteString(insert)
		args := make([]any, 0, (end-start)*len(columns))
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(", ")
			}
			q.WriteString(tuple)
			args = row(i, args)
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// AnyUsers reports whether any user exists, deleted or not: bench graph
// refuses to mix a synthetic graph into a database that holds real data.
func (s *Store) AnyUsers(ctx context.Context) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, "SELECT 1 FROM users LIMIT 1").Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("sqlstore: any users: %w", err)
	}
	return true, nil
}
