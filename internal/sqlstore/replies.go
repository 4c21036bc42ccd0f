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

// Replies (docs/replies.md). A reply is a post on its author's shard that
// names its parent; the parent's shard holds the index of the parent's
// live direct replies (table replies) and their count (posts.reply_count),
// moved together in one transaction so that the count is exact. When both
// live on one database the reply, its index row and the count commit in
// the reply's transaction; across shards the reply's post is the truth
// and the index row and count its mirror, synced through the journal
// (SyncReply, syncReplies).

// checkReply checks, in CreatePost's transaction, that a reply may be
// written: its parent lives (locked, when it is on this database, so that
// the parent's count moves after this check; the caller checked it when
// it lives on another shard) and no block stands between the replier and
// the parent's author (blocks are mirrored on both users' shards). It sets
// p.InReplyToAuthorID from the parent it locked.
func (s *Store) checkReply(ctx context.Context, tx *sql.Tx, home Shard, p *feed.Post) error {
	if !p.IsReply() {
		return nil
	}
	if home.Holds(p.InReplyToID) {
		var author int64
		var deleted sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT author_id, deleted_at FROM posts WHERE id = ?"+s.d.forUpdate, p.InReplyToID).Scan(&author, &deleted)
		if errors.Is(err, sql.ErrNoRows) || err == nil && deleted.Valid {
			return feed.Errorf(feed.ENOTFOUND, "post %d does not exist", p.InReplyToID)
		}
		if err != nil {
			return err
		}
		p.InReplyToAuthorID = author
	}
	blocked, err := blockedEitherWay(ctx, tx, p.AuthorID, p.InReplyToAuthorID)
	if err == nil && blocked {
		err = feed.Errorf(feed.EBLOCKED, "a block between you and user %d forbids replying", p.InReplyToAuthorID)
	}
	return err
}

// indexReply adds reply p to its parent's index and count, here when the
// parent lives on this database, else through the journal row it returns.
func (s *Store) indexReply(ctx context.Context, tx *sql.Tx, home Shard, p feed.Post) ([]Sync, error) {
	if !p.IsReply() {
		return nil, nil
	}
	if !home.Holds(p.InReplyToID) {
		syncs := []Sync{{Kind: SyncReply, A: p.ID, B: p.InReplyToID}}
		return syncs, s.journal(ctx, tx, syncs)
	}
	// The reply's id is new (its post was just inserted): so is its row.
	if _, err := tx.ExecContext(ctx, "INSERT INTO replies (parent_id, reply_id, author_id) VALUES (?, ?, ?)",
		p.InReplyToID, p.ID, p.AuthorID); err != nil {
		return nil, err
	}
	_, err := tx.ExecContext(ctx, "UPDATE posts SET reply_count = reply_count + 1 WHERE id = ?", p.InReplyToID)
	return nil, err
}

// unindexReply takes deleted reply id out of parent's index and count, as
// indexReply put it there.
func (s *Store) unindexReply(ctx context.Context, tx *sql.Tx, home Shard, id, parent int64) ([]Sync, error) {
	if !home.Holds(parent) {
		syncs := []Sync{{Kind: SyncReply, A: id, B: parent}}
		return syncs, s.journal(ctx, tx, syncs)
	}
	// The parent's row first, as a reply's creation locks it, then the
	// index row.
	var locked int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM posts WHERE id = ?"+s.d.forUpdate, parent).Scan(&locked)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return nil, s.dropReplies(ctx, tx, map[int64][]int64{parent: {id}})
}

// dropReplies deletes the index rows of replies (parent → reply ids) and
// takes from each parent's count the rows that were there.
func (s *Store) dropReplies(ctx context.Context, tx *sql.Tx, replies map[int64][]int64) error {
	for _, parent := range slices.Sorted(maps.Keys(replies)) {
		ids := replies[parent]
		res, err := tx.ExecContext(ctx, "DELETE FROM replies WHERE parent_id = ? AND reply_id IN ("+placeholders(len(ids))+")",
			append([]any{parent}, chunkArgs(ids)...)...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE posts SET reply_count = reply_count - ? WHERE id = ?", n, parent); err != nil {
			return err
		}
	}
	return nil
}

// syncReplies makes this store, the shard of the parents, agree with the
// replies' posts on truth: an index row and a count for each live reply,
// none for a deleted or purged one. It locks the parents' rows (as a
// local reply's creation does), then reads the truth, so that the last
// sync of a pair sees its last change; running one again changes
// nothing. A parent that is gone (purged) keeps no index.
func (s *Store) syncReplies(ctx context.Context, truth *Store, syncs []Sync) error {
	parents := make([]int64, 0, len(syncs))
	replyIDs := make([]int64, 0, len(syncs))
	for _, y := range syncs {
		parents = append(parents, y.B)
		replyIDs = append(replyIDs, y.A)
	}
	slices.Sort(parents)
	parents = slices.Compact(parents)
	return s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM posts WHERE id IN ("+placeholders(len(parents))+") ORDER BY id"+s.d.forUpdate, chunkArgs(parents)...)
		if err != nil {
			return err
		}
		live, err := scanIDs(rows, len(parents))
		if err != nil {
			return err
		}
		here := map[int64]bool{}
		for _, id := range live {
			here[id] = true
		}
		// The truth as it stands, read after the locks (the read pool:
		// see truthEdges).
		want, err := truth.liveReplies(ctx, replyIDs)
		if err != nil {
			return err
		}
		// The index rows there are, under the parents' locks: only a
		// holder of them writes a parent's rows.
		have, err := s.indexed(ctx, tx, syncs)
		if err != nil {
			return err
		}
		drop := map[int64][]int64{}
		for _, y := range sortedSyncs(syncs) {
			w, ok := want[y.A]
			if !ok || w.InReplyToID != y.B || !here[y.B] {
				drop[y.B] = append(drop[y.B], y.A)
				continue
			}
			if have[[2]int64{y.B, y.A}] {
				continue
			}
			have[[2]int64{y.B, y.A}] = true
			if _, err := tx.ExecContext(ctx, "INSERT INTO replies (parent_id, reply_id, author_id) VALUES (?, ?, ?)", y.B, y.A, w.AuthorID); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE posts SET reply_count = reply_count + 1 WHERE id = ?", y.B); err != nil {
				return err
			}
		}
		return s.dropReplies(ctx, tx, drop)
	})
}

// indexed returns which (parent, reply) pairs of syncs have index rows.
func (s *Store) indexed(ctx context.Context, tx *sql.Tx, syncs []Sync) (map[[2]int64]bool, error) {
	out := map[[2]int64]bool{}
	for _, y := range syncs {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM replies WHERE parent_id = ? AND reply_id = ?", y.B, y.A).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[[2]int64{y.B, y.A}] = true
	}
	return out, nil
}

// liveReplies returns which of ids are live posts of live users, with
// their parents, from the primary (through the read pool's connections,
// as truthEdges).
func (s *Store) liveReplies(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	out := map[int64]feed.Post{}
	for _, chunk := range chunks(ids) {
		rows, err := s.rdb.QueryContext(ctx, "SELECT p.id, p.author_id, p.in_reply_to_id FROM posts p JOIN users u ON u.id = p.author_id AND u.deleted_at IS NULL"+
			" WHERE p.id IN ("+placeholders(len(chunk))+") AND p.deleted_at IS NULL AND p.in_reply_to_id IS NOT NULL", chunk...)
		if err != nil {
			return nil, fmt.Errorf("read the truth of %d replies: %w", len(chunk), err)
		}
		for rows.Next() {
			var p feed.Post
			if err := rows.Scan(&p.ID, &p.AuthorID, &p.InReplyToID); err != nil {
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

// PostCounts returns the reply and repost counts of the posts among ids
// that have any (a post without either is left out), one query per
// chunk.
func (s *Store) PostCounts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	return s.postCounts(ctx, s.rdb, ids)
}

// PostCountsPrimary is PostCounts read on the primary: the counts as a
// write that just committed left them, for the process that made it.
func (s *Store) PostCountsPrimary(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	return s.postCounts(ctx, s.db, ids)
}

func (s *Store) postCounts(ctx context.Context, db *sql.DB, ids []int64) (map[int64]feed.Counts, error) {
	out := make(map[int64]feed.Counts, len(ids))
	for _, chunk := range chunks(ids) {
		rows, err := db.QueryContext(ctx, "SELECT id, reply_count, repost_count FROM posts WHERE id IN ("+placeholders(len(chunk))+
			") AND (reply_count <> 0 OR repost_count <> 0)", chunk...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: counts of %d posts: %w", len(ids), err)
		}
		for rows.Next() {
			var id int64
			var c feed.Counts
			if err := rows.Scan(&id, &c.Replies, &c.Reposts); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: counts: %w", err)
			}
			out[id] = c
		}
		if err := closeRows(rows); err != nil {
			return nil, fmt.Errorf("sqlstore: counts: %w", err)
		}
	}
	return out, nil
}

// ReplyIDs returns up to n ids of parent's live direct replies above
// after (0: from the oldest), oldest first. It reads the primary: a
// replier reads the page of the reply just posted.
func (s *Store) ReplyIDs(ctx context.Context, parent, after int64, n int) ([]int64, error) {
	if n <= 0 {
		return []int64{}, nil
	}
	ids, err := s.queryIDsOn(ctx, s.db, n, "SELECT reply_id FROM replies WHERE parent_id = ? AND reply_id > ? ORDER BY reply_id LIMIT ?",
		parent, lowerBound(after), n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: replies of %d after %d: %w", parent, after, err)
	}
	return ids, nil
}

// ChildReplies returns the direct replies of parents, each parent's
// oldest first, at most n in all (parents by id): one level of a thread.
func (s *Store) ChildReplies(ctx context.Context, parents []int64, n int) (map[int64][]int64, error) {
	out := map[int64][]int64{}
	for _, chunk := range chunks(parents) {
		if n <= 0 {
			break
		}
		rows, err := s.db.QueryContext(ctx, "SELECT parent_id, reply_id FROM replies WHERE parent_id IN ("+placeholders(len(chunk))+
			") ORDER BY parent_id, reply_id LIMIT ?", append(chunk, n)...)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: replies of %d posts: %w", len(parents), err)
		}
		for rows.Next() {
			var parent, reply int64
			if err := rows.Scan(&parent, &reply); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlstore: replies of %d posts: %w", len(parents), err)
			}
			out[parent] = append(out[parent], reply)
			n--
		}
		if err := closeRows(rows); err != nil {
			return nil, fmt.Errorf("sqlstore: replies of %d posts: %w", len(parents), err)
		}
	}
	return out, nil
}

// purgeReplies takes a batch of user's replies out of their parents'
// indexes and counts (the parents of this shard): the replies' posts go
// with purgePosts on the user's shard.
func (s *Store) purgeReplies(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT parent_id, reply_id FROM replies WHERE author_id = ? ORDER BY parent_id, reply_id LIMIT ?"+s.d.forUpdate,
		user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	drop := map[int64][]int64{}
	found := false
	for rows.Next() {
		var parent, reply int64
		if err := rows.Scan(&parent, &reply); err != nil {
			rows.Close()
			return false, err
		}
		drop[parent] = append(drop[parent], reply)
		found = true
	}
	if err := closeRows(rows); err != nil || !found {
		return false, err
	}
	return true, s.dropReplies(ctx, tx, drop)
}
