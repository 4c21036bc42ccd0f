package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"

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
// journal (SyncRepost, syncReposts), as replies are (replies.go).

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

// indexRepost adds repost p to its original's index and count, here when
// the original lives on this database, else through a journal row it
// appends to syncs.
func (s *Store) indexRepost(ctx context.Context, tx *sql.Tx, home Shard, p feed.Post, syncs []Sync) ([]Sync, error) {
	if !p.IsRepost() {
		return syncs, nil
	}
	if !home.Holds(p.RepostOfID) {
		y := []Sync{{Kind: SyncRepost, A: p.ID, B: p.RepostOfID}}
		return append(syncs, y...), s.journal(ctx, tx, y)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO reposted (post_id, repost_id, user_id) VALUES (?, ?, ?)",
		p.RepostOfID, p.ID, p.AuthorID); err != nil {
		return nil, err
	}
	_, err := tx.ExecContext(ctx, "UPDATE posts SET repost_count = repost_count + 1 WHERE id = ?", p.RepostOfID)
	return syncs, err
}

// unindexRepost takes deleted repost id of user's out of the user's
// reposts and its original's index and count, as indexRepost put it there.
func (s *Store) unindexRepost(ctx context.Context, tx *sql.Tx, home Shard, id, user, original int64) ([]Sync, error) {
	if _, err := tx.ExecContext(ctx, "DELETE FROM reposts WHERE user_id = ? AND post_id = ? AND repost_id = ?", user, original, id); err != nil {
		return nil, err
	}
	if !home.Holds(original) {
		syncs := []Sync{{Kind: SyncRepost, A: id, B: original}}
		return syncs, s.journal(ctx, tx, syncs)
	}
	var locked int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM posts WHERE id = ?"+s.d.forUpdate, original).Scan(&locked)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return nil, s.dropReposts(ctx, tx, map[int64][]int64{original: {id}})
}

// dropReposts deletes the index rows of reposts (original → repost ids)
// and takes from each original's count the rows that were there.
func (s *Store) dropReposts(ctx context.Context, tx *sql.Tx, reposts map[int64][]int64) error {
	for _, original := range slices.Sorted(maps.Keys(reposts)) {
		ids := reposts[original]
		res, err := tx.ExecContext(ctx, "DELETE FROM reposted WHERE post_id = ? AND repost_id IN ("+placeholders(len(ids))+")",
			append([]any{original}, chunkArgs(ids)...)...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE posts SET repost_count = repost_count - ? WHERE id = ?", n, original); err != nil {
			return err
		}
	}
	return nil
}

// syncReposts makes this store, the shard of the originals, agree with
// the reposts' posts on truth, as syncReplies does for replies: an index
// row and a count for each live repost, none for a deleted or purged one.
func (s *Store) syncReposts(ctx context.Context, truth *Store, syncs []Sync) error {
	originals := make([]int64, 0, len(syncs))
	ids := make([]int64, 0, len(syncs))
	for _, y := range syncs {
		originals = append(originals, y.B)
		ids = append(ids, y.A)
	}
	slices.Sort(originals)
	originals = slices.Compact(originals)
	return s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM posts WHERE id IN ("+placeholders(len(originals))+") ORDER BY id"+s.d.forUpdate, chunkArgs(originals)...)
		if err != nil {
			return err
		}
		live, err := scanIDs(rows, len(originals))
		if err != nil {
			return err
		}
		here := map[int64]bool{}
		for _, id := range live {
			here[id] = true
		}
		want, err := truth.liveReposts(ctx, ids)
		if err != nil {
			return err
		}
		drop := map[int64][]int64{}
		for _, y := range sortedSyncs(syncs) {
			w, ok := want[y.A]
			if !ok || w.RepostOfID != y.B || !here[y.B] {
				drop[y.B] = append(drop[y.B], y.A)
				continue
			}
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM reposted WHERE post_id = ? AND repost_id = ?", y.B, y.A).Scan(&one)
			if err == nil {
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO reposted (post_id, repost_id, user_id) VALUES (?, ?, ?)", y.B, y.A, w.AuthorID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE posts SET repost_count = repost_count + 1 WHERE id = ?", y.B); err != nil {
				return err
			}
		}
		return s.dropReposts(ctx, tx, drop)
	})
}

// liveReposts returns which of ids are live reposts of live users, with
// their originals, from the primary (as liveReplies).
func (s *Store) liveReposts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	out := map[int64]feed.Post{}
	for _, chunk := range chunks(ids) {
		rows, err := s.rdb.QueryContext(ctx, "SELECT p.id, p.author_id, p.repost_of_id FROM posts p JOIN users u ON u.id = p.author_id AND u.deleted_at IS NULL"+
			" WHERE p.id IN ("+placeholders(len(chunk))+") AND p.deleted_at IS NULL AND p.repost_of_id IS NOT NULL", chunk...)
		if err != nil {
			return nil, fmt.Errorf("read the truth of %d reposts: %w", len(chunk), err)
		}
		for rows.Next() {
			var p feed.Post
			if err := rows.Scan(&p.ID, &p.AuthorID, &p.RepostOfID); err != nil {
				rows.Close()
				return nil, err
			}
			out[p.ID] = p
		}
		if err := closeRows(rows); err != nil {
			return nil, err
		}
	}
	return out, nil
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
// indexes and counts (the originals of this shard): the reposts' posts go
// with purgePosts on the user's shard.
func (s *Store) purgeReposted(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT post_id, repost_id FROM reposted WHERE user_id = ? ORDER BY post_id, repost_id LIMIT ?"+s.d.forUpdate,
		user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	drop := map[int64][]int64{}
	found := false
	for rows.Next() {
		var original, repost int64
		if err := rows.Scan(&original, &repost); err != nil {
			rows.Close()
			return false, err
		}
		drop[original] = append(drop[original], repost)
		found = true
	}
	if err := closeRows(rows); err != nil || !found {
		return false, err
	}
	return true, s.dropReposts(ctx, tx, drop)
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
