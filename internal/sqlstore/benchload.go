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

// The loaders below write a synthetic data set straight into the tables,
// for load tests (feedd bench graph). Unlike CreateUser, Follow and
// CreatePost they trust the caller: counts are stored as given, edges
// are not checked against users, and posts get no outbox event, so
// nothing fans out. Each call is one transaction of multi-row INSERTs, so
// that a loader with several goroutines keeps the database busy without
// paying a commit per row; an existing key is ECONFLICT and rolls back
// only that call.

// loadChunk bounds the rows of one INSERT statement: large enough to
// amortize a round trip, small enough for SQLite's 32766 bound variables
// and MySQL's default packet size.
const loadChunk = 2000

// BulkLoadUsers stores new users with the follower and following counts
// they carry; the caller keeps those counts equal to the edges it loads
// with BulkLoadFollows.
func (s *Store) BulkLoadUsers(ctx context.Context, users []feed.User) error {
	now := time.Now()
	for _, u := range users {
		if u.ID <= 0 || utf8.RuneCountInString(u.Name) > maxNameRunes || u.FollowerCount < 0 || u.FollowingCount < 0 {
			return fmt.Errorf("sqlstore: bulk load users: %w",
				feed.Errorf(feed.EINVALID, "user %d: ids are positive, names at most %d characters, counts not negative", u.ID, maxNameRunes))
		}
	}
	err := s.loadRows(ctx, "INSERT INTO users (id, name, follower_count, following_count, created_at) VALUES ",
		"(?, ?, ?, ?, ?)", len(users), func(i int, args []any) []any {
			u := users[i]
			created := u.CreatedAt
			if created.IsZero() {
				created = now
			}
			return append(args, u.ID, u.Name, u.FollowerCount, u.FollowingCount, millis(created))
		})
	if s.d.duplicate(err) {
		err = feed.Errorf(feed.ECONFLICT, "one of users %d..%d already exists", users[0].ID, users[len(users)-1].ID)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load %d users: %w", len(users), err)
	}
	return nil
}

// BulkLoadFollows stores follow edges, each {follower, followee}, without
// touching any count. Edges sorted by follower then followee insert
// fastest: that is the primary key's order.
func (s *Store) BulkLoadFollows(ctx context.Context, edges [][2]int64) error {
	for _, e := range edges {
		if e[0] <= 0 || e[1] <= 0 || e[0] == e[1] {
			return fmt.Errorf("sqlstore: bulk load follows: %w",
				feed.Errorf(feed.EINVALID, "edge %d -> %d: ids are positive and nobody follows themselves", e[0], e[1]))
		}
	}
	now := millis(time.Now())
	err := s.loadRows(ctx, "INSERT INTO follows (follower_id, followee_id, created_at) VALUES ",
		"(?, ?, ?)", len(edges), func(i int, args []any) []any {
			return append(args, edges[i][0], edges[i][1], now)
		})
	if s.d.duplicate(err) {
		err = feed.Errorf(feed.ECONFLICT, "one of %d follow edges already exists", len(edges))
	}
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load %d follows: %w", len(edges), err)
	}
	return nil
}

// BulkCreatePosts stores posts (ID, AuthorID, Content and CreatedAt chosen
// by the caller) without outbox events: they are history, already
// delivered as far as the fan-out is concerned, and readers find them
// when their inbox is rebuilt from SQL.
func (s *Store) BulkCreatePosts(ctx context.Context, posts []feed.Post) error {
	for _, p := range posts {
		if p.ID <= 0 || p.AuthorID <= 0 {
			return fmt.Errorf("sqlstore: bulk create posts: %w",
				feed.Errorf(feed.EINVALID, "post id %d and author id %d must be positive", p.ID, p.AuthorID))
		}
	}
	now := time.Now()
	err := s.loadRows(ctx, "INSERT INTO posts (id, author_id, content, created_at, deleted_at) VALUES ",
		"(?, ?, ?, ?, NULL)", len(posts), func(i int, args []any) []any {
			p := posts[i]
			created := p.CreatedAt
			if created.IsZero() {
				created = now
			}
			return append(args, p.ID, p.AuthorID, p.Content, millis(created))
		})
	if s.d.duplicate(err) {
		err = feed.Errorf(feed.ECONFLICT, "one of posts %d..%d already exists", posts[0].ID, posts[len(posts)-1].ID)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: bulk create %d posts: %w", len(posts), err)
	}
	return nil
}

// HasUsers reports whether any user exists, so that a loader can refuse to
// mix a synthetic graph into a database that holds real data.
func (s *Store) HasUsers(ctx context.Context) (bool, error) {
	var one int
	err := s.rdb.QueryRowContext(ctx, "SELECT 1 FROM users LIMIT 1").Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("sqlstore: any users: %w", err)
	}
	return true, nil
}

// loadRows inserts n rows in one transaction, loadChunk rows per
// statement; row appends the arguments of row i.
func (s *Store) loadRows(ctx context.Context, insert, tuple string, n int, row func(i int, args []any) []any) error {
	if n == 0 {
		return nil
	}
	perRow := strings.Count(tuple, "?")
	return s.write(ctx, func(tx *sql.Tx) error {
		for start := 0; start < n; start += loadChunk {
			end := min(start+loadChunk, n)
			var q strings.Builder
			q.Grow(len(insert) + (end-start)*(len(tuple)+2))
			q.WriteString(insert)
			args := make([]any, 0, (end-start)*perRow)
			for i := start; i < end; i++ {
				if i > start {
					q.WriteString(", ")
				}
				q.WriteString(tuple)
				args = row(i, args)
			}
			if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
				return err
			}
		}
		return nil
	})
}
