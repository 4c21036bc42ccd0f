package graph

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

// SQLLoader writes a graph straight into feedd's tables through the SQL
// store's write pool ((*sqlstore.Store).Pools), on MySQL/MariaDB and
// SQLite alike: the statements are plain multi-row INSERTs with ?
// placeholders, which both take. Unlike the store's CreateUser, Follow and
// CreatePost it trusts its caller: counts are stored as given, edges are
// not checked against users, and posts get no outbox event, so nothing
// fans out. Each call is one transaction of multi-row INSERTs, so that
// several goroutines keep the database busy without paying a commit per
// row; an existing key fails that call and rolls back only it. Nothing is
// retried: InnoDB does not deadlock inserts of new keys into tables
// without unique secondary indexes, which these tables are.
type SQLLoader struct {
	db *sql.DB
}

// NewSQLLoader returns a loader that writes through db, the store's write
// pool (on SQLite its one connection, which queues the writers).
func NewSQLLoader(db *sql.DB) *SQLLoader { return &SQLLoader{db: db} }

var _ Loader = (*SQLLoader)(nil)

// loadChunk bounds the rows of one INSERT statement: large enough to
// amortize a round trip, small enough for SQLite's 32766 bound variables
// and MySQL's default packet size.
const loadChunk = 2000

// maxNameRunes is the users.name column's length.
const maxNameRunes = 255

// LoadUsers stores new users with the follower and following counts they
// carry; the caller keeps those counts equal to the edges it loads with
// LoadFollows.
func (l *SQLLoader) LoadUsers(ctx context.Context, users []feed.User) error {
	now := time.Now()
	for _, u := range users {
		if u.ID <= 0 || utf8.RuneCountInString(u.Name) > maxNameRunes || u.FollowerCount < 0 || u.FollowingCount < 0 {
			return fmt.Errorf("load users: user %d: ids are positive, names at most %d characters, counts not negative", u.ID, maxNameRunes)
		}
	}
	err := l.insert(ctx, "INSERT INTO users (id, name, follower_count, following_count, created_at) VALUES ",
		"(?, ?, ?, ?, ?)", len(users), func(i int, args []any) []any {
			u := users[i]
			created := u.CreatedAt
			if created.IsZero() {
				created = now
			}
			return append(args, u.ID, u.Name, u.FollowerCount, u.FollowingCount, created.UnixMilli())
		})
	if err != nil {
		return fmt.Errorf("load %d users: %w", len(users), err)
	}
	return nil
}

// LoadFollows stores follow edges, each {follower, followee}, without
// touching any count. Edges sorted by follower then followee insert
// fastest: that is the primary key's order.
func (l *SQLLoader) LoadFollows(ctx context.Context, edges [][2]int64) error {
	for _, e := range edges {
		if e[0] <= 0 || e[1] <= 0 || e[0] == e[1] {
			return fmt.Errorf("load follows: edge %d -> %d: ids are positive and nobody follows themselves", e[0], e[1])
		}
	}
	now := time.Now().UnixMilli()
	err := l.insert(ctx, "INSERT INTO follows (follower_id, followee_id, created_at) VALUES ",
		"(?, ?, ?)", len(edges), func(i int, args []any) []any {
			return append(args, edges[i][0], edges[i][1], now)
		})
	if err != nil {
		return fmt.Errorf("load %d follows: %w", len(edges), err)
	}
	return nil
}

// LoadPosts stores posts (ID, AuthorID, Content and CreatedAt chosen by
// the caller) without outbox events: they are history, already delivered
// as far as the fan-out is concerned, and readers find them when their
// inbox is rebuilt from SQL.
func (l *SQLLoader) LoadPosts(ctx context.Context, posts []feed.Post) error {
	for _, p := range posts {
		if !feed.ValidPostID(p.ID) || p.AuthorID <= 0 {
			return fmt.Errorf("load posts: post id %d must be a post id (feed.ValidPostID) and author id %d positive", p.ID, p.AuthorID)
		}
	}
	now := time.Now()
	err := l.insert(ctx, "INSERT INTO posts (id, author_id, content, created_at, deleted_at) VALUES ",
		"(?, ?, ?, ?, NULL)", len(posts), func(i int, args []any) []any {
			p := posts[i]
			created := p.CreatedAt
			if created.IsZero() {
				created = now
			}
			return append(args, p.ID, p.AuthorID, p.Content, created.UnixMilli())
		})
	if err != nil {
		return fmt.Errorf("load %d posts: %w", len(posts), err)
	}
	return nil
}

// insert inserts n rows in one transaction, loadChunk rows per statement;
// row appends the arguments of row i.
func (l *SQLLoader) insert(ctx context.Context, insert, tuple string, n int, row func(i int, args []any) []any) error {
	if n == 0 {
		return nil
	}
	perRow := strings.Count(tuple, "?")
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
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
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// HasUsers reports whether any user exists in db, so that bench graph can
// refuse to mix a synthetic graph into a database that holds real data.
func HasUsers(ctx context.Context, db *sql.DB) (bool, error) {
	var one int
	err := db.QueryRowContext(ctx, "SELECT 1 FROM users LIMIT 1").Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("bench graph: any users: %w", err)
	}
	return true, nil
}
