package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/feedd/feedd/internal/feed"
)

// maxNameRunes is the width of users.name.
const maxNameRunes = 255

// CreateUser stores a new user under the id the caller chose (> 0), with
// u.Handle when not "" (lower case, feed.CheckHandle). The counts start
// at zero whatever u says: only Follow and Unfollow move them. CreatedAt
// is now when zero. An existing id is ECONFLICT, a handle another user
// holds EHANDLETAKEN.
func (s *Store) CreateUser(ctx context.Context, u feed.User) (feed.User, error) {
	if u.ID <= 0 {
		return feed.User{}, fmt.Errorf("sqlstore: create user: %w", feed.Errorf(feed.EINVALID, "user id %d is not positive", u.ID))
	}
	if utf8.RuneCountInString(u.Name) > maxNameRunes {
		return feed.User{}, fmt.Errorf("sqlstore: create user %d: %w", u.ID,
			feed.Errorf(feed.EINVALID, "a user name has at most %d characters", maxNameRunes))
	}
	if u.CreatedAt.IsZero() {
		u.CreatedAt = time.Now()
	}
	u.CreatedAt = fromMillis(millis(u.CreatedAt))
	u.FollowerCount, u.FollowingCount = 0, 0
	// A user deleted before under this id left its token generation in
	// user_purges: the new user starts there, so that no token of the old
	// one works for them.
	_, err := s.db.ExecContext(ctx,
		`INSERT INTO users (id, name, name_key, handle, follower_count, following_count, created_at, token_generation)
		 SELECT ?, ?, ?, ?, 0, 0, ?, COALESCE((SELECT token_generation FROM user_purges WHERE user_id = ?), 0)`,
		u.ID, u.Name, feed.NameKey(u.Name), nullString(u.Handle), millis(u.CreatedAt), u.ID)
	if s.d.duplicate(err) {
		err = s.whyTaken(ctx, u.ID, u.Handle)
	}
	if err != nil {
		return feed.User{}, fmt.Errorf("sqlstore: create user %d: %w", u.ID, err)
	}
	return u, nil
}

const userColumns = "id, name, handle, follower_count, following_count, created_at, pull_mode"

type scanner interface{ Scan(dest ...any) error }

func scanUser(r scanner) (feed.User, error) {
	var u feed.User
	var created, pull int64
	var handle sql.NullString
	if err := r.Scan(&u.ID, &u.Name, &handle, &u.FollowerCount, &u.FollowingCount, &created, &pull); err != nil {
		return feed.User{}, err
	}
	u.Handle = handle.String
	u.CreatedAt = fromMillis(created)
	u.PullMode = pull != 0
	return u, nil
}

// User returns one user, or ENOTFOUND.
func (s *Store) User(ctx context.Context, id int64) (feed.User, error) {
	u, err := s.userBy(ctx, "id = ?", id, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", id))
	if err != nil {
		return feed.User{}, fmt.Errorf("sqlstore: user %d: %w", id, err)
	}
	return u, nil
}

// userBy reads the live user that cond (with arg) finds, or notFound.
func (s *Store) userBy(ctx context.Context, cond string, arg any, notFound error) (feed.User, error) {
	u, err := scanUser(s.rdb.QueryRowContext(ctx, "SELECT "+userColumns+" FROM users WHERE "+cond+" AND deleted_at IS NULL", arg))
	if errors.Is(err, sql.ErrNoRows) {
		err = notFound
	}
	return u, err
}

// Users returns the users among ids that exist, by id, with one query per
// chunk of ids.
func (s *Store) Users(ctx context.Context, ids []int64) (map[int64]feed.User, error) {
	users := make(map[int64]feed.User, len(ids))
	for _, chunk := range chunks(ids) {
		err := s.fromReplica(ctx, func(db *sql.DB) error {
			return eachUser(ctx, db, "SELECT "+userColumns+" FROM users WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL",
				chunk, func(u feed.User) { users[u.ID] = u })
		})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: users (%d ids): %w", len(ids), err)
		}
	}
	return users, nil
}

// eachUser calls fn with every user query (of userColumns) reads.
func eachUser(ctx context.Context, db *sql.DB, query string, args []any, fn func(feed.User)) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return err
		}
		fn(u)
	}
	return rows.Err()
}

// TokenGeneration returns the generation a token of user must carry to be
// accepted, or ENOTFOUND. It reads the primary, never a replica: a token
// minted just after a revocation must carry the new generation, and a
// check just after one must see it.
func (s *Store) TokenGeneration(ctx context.Context, user int64) (int64, error) {
	var gen int64
	err := s.rdb.QueryRowContext(ctx, "SELECT token_generation FROM users WHERE id = ? AND deleted_at IS NULL", user).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		err = feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: token generation of %d: %w", user, err)
	}
	return gen, nil
}

// RevokeTokens moves user to the next token generation, which refuses
// every token minted before; ENOTFOUND for an unknown user.
func (s *Store) RevokeTokens(ctx context.Context, user int64) error {
	res, err := s.db.ExecContext(ctx, "UPDATE users SET token_generation = token_generation + 1 WHERE id = ? AND deleted_at IS NULL", user)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
		}
	}
	if err != nil {
		return fmt.Errorf("sqlstore: revoke tokens of %d: %w", user, err)
	}
	return nil
}

// whyTaken says why id cannot be created with handle: EDELETING while the
// user of the id is being purged, ECONFLICT when it exists, EHANDLETAKEN
// when another user holds the handle.
func (s *Store) whyTaken(ctx context.Context, id int64, handle string) error {
	var deleted sql.NullInt64
	err := s.db.QueryRowContext(ctx, "SELECT deleted_at FROM users WHERE id = ?", id).Scan(&deleted)
	switch {
	case err == nil && deleted.Valid:
		return feed.Errorf(feed.EDELETING, "user %d is being deleted; the id is free again once the purge is done", id)
	case err == nil:
		return feed.Errorf(feed.ECONFLICT, "user %d already exists", id)
	case errors.Is(err, sql.ErrNoRows) && handle != "":
		return feed.HandleTaken(handle)
	case errors.Is(err, sql.ErrNoRows):
		return feed.Errorf(feed.ECONFLICT, "user %d already exists", id)
	}
	return err
}

// nullString is s for a nullable column: NULL for "".
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
