package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// Reposts (docs/reposts.md). A repost is a post of the reposter's, on the
// reposter's shard, that names its original (posts.repost_of_id). The
// reposter's shard also holds reposts (user_id, post_id, repost_id): one
// live repost per user and original, which makes a repost idempotent and
// answers reposted_by_me. The original's shard holds the index of its
// live reposts (reposted) and their count (posts.repost_count), moved
// together in one transaction so that the count is exact: in the repost's
// own transaction when both live on one database, else through the
// journal (SyncRepost): a counted index (counted.go), as replies are.

// errReposted is what CreatePost answers for a repost of a post its
// author has reposted already (ECONFLICT): the caller reads the repost
// that stands (RepostOf).
var errReposted = feed.Errorf(feed.ECONFLICT, "already reposted")

// IsReposted reports whether err says the repost exists already.
func IsReposted(err error) bool { return errors.Is(err, errReposted) }

// checkRepost checks, in CreatePost's transaction, that repost p may be
// written: its original lives (locked when it is on this database; the
// caller checked it when it lives on another shard), no block stands
// between the two users, and the reposter has no live repost of it yet,
// whose row it then takes. It sets p.RepostOfAuthorID from the original
// it locked.
func (s *Store) checkRepost(ctx context.Context, tx *sql.Tx, home Shard, p *feed.Post) error {
	if !p.IsRepost() {
		return nil
	}
	if home.Holds(p.RepostOfID) {
		var author int64
		var deleted, original sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT author_id, deleted_at, repost_of_id FROM posts WHERE id = ?"+s.d.forUpdate, p.RepostOfID).Scan(&author, &deleted, &original)
		if errors.Is(err, sql.ErrNoRows) || err == nil && (deleted.Valid || original.Int64 != 0) {
			return feed.Errorf(feed.ENOTFOUND, "post %d does not exist", p.RepostOfID)
		}
		if err != nil {
			return err
		}
		p.RepostOfAuthorID = author
	}
	blocked, err := blockedEitherWay(ctx, tx, p.AuthorID, p.RepostOfAuthorID)
	if err == nil && blocked {
		err = feed.Errorf(feed.EBLOCKED, "a block between you and user %d forbids reposting", p.RepostOfAuthorID)
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO reposts (user_id, post_id, repost_id) VALUES (?, ?, ?)", p.AuthorID, p.RepostOfID, p.ID)
	if s.d.duplicate(err) {
		return errReposted
	}
	return err
}

// indexRepost adds repost p to its original's index and count (add),
// its journal row, if any, after syncs.
func (s *Store) indexRepost(ctx context.Context, tx *sql.Tx, home Shard, p feed.Post, syncs []Sync) ([]Sync, error) {
	if !p.IsRepost() {
		return syncs, nil
	}
	more, err := s.add(ctx, tx, home, repostIndex, p.ID, p.RepostOfID, p.AuthorID, p.RepostOfAuthorID)
	return append(syncs, more...), err
}

// unindexRepost takes deleted repost id of user's out of the user's
// reposts and its original's index and count, as indexRepost put it there.
func (s *Store) unindexRepost(ctx context.Context, tx *sql.Tx, home Shard, id, user, original int64) ([]Sync, error) {
	if _, err := tx.ExecContext(ctx, "DELETE FROM reposts WHERE user_id = ? AND post_id = ? AND repost_id = ?", user, original, id); err != nil {
		return nil, err
	}
	return s.remove(ctx, tx, home, repostIndex, id, original)
}

// RepostOf returns the id of user's live repost of post (0: none), read
// on the primary: the reposter's own write.
func (s *Store) RepostOf(ctx context.Context, user, post int64) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, "SELECT repost_id FROM reposts WHERE user_id = ? AND post_id = ?", user, post).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: repost of %d by %d: %w", post, user, err)
	}
	return id, nil
}

// RepostedAmong returns which of ids user has reposted: primary keys,
// one query per chunk, on the reader's shard.
func (s *Store) RepostedAmong(ctx context.Context, user int64, ids []int64) ([]int64, error) {
	var out []int64
	for _, chunk := range chunks(ids) {
		got, err := s.queryIDsOn(ctx, s.rdb, len(chunk), "SELECT post_id FROM reposts WHERE user_id = ? AND post_id IN ("+placeholders(len(chunk))+")",
			append([]any{user}, chunk...)...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: reposts of %d among %d posts: %w", user, len(ids), err)
		}
		out = append(out, got...)
	}
	return out, nil
}

// purgeReposted takes a batch of user's reposts out of their originals'
// indexes and counts (the originals of this shard).
func (s *Store) purgeReposted(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	return s.purgeIndexed(ctx, tx, repostIndex, user)
}

// purgeOwnReposts deletes a batch of user's rows of reposts and
// hidden_reposts, on the user's shard.
func (s *Store) purgeOwnReposts(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	res, err := tx.ExecContext(ctx, "DELETE FROM hidden_reposts WHERE user_id = ?", user)
	if err != nil {
		return false, err
	}
	hidden, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT post_id FROM reposts WHERE user_id = ? ORDER BY post_id LIMIT ?", user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	posts, err := scanIDs(rows, PurgeBatchRows)
	if err != nil || len(posts) == 0 {
		return hidden > 0, err
	}
	_, err = tx.ExecContext(ctx, "DELETE FROM reposts WHERE user_id = ? AND post_id IN ("+placeholders(len(posts))+")", append([]any{user}, chunkArgs(posts)...)...)
	return true, err
}

// ShowReposts records whether user shows target's reposts in its home
// feed (hidden_reposts, on user's shard): a row hides them. Running it
// twice is harmless.
func (s *Store) ShowReposts(ctx context.Context, user, target int64, show bool) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM hidden_reposts WHERE user_id = ? AND target_id = ?", user, target); err != nil || show {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO hidden_reposts (user_id, target_id) VALUES (?, ?)", user, target)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: reposts of %d for %d: %w", target, user, err)
	}
	return nil
}
