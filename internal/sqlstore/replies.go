package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// Replies (docs/replies.md). A reply is a post on its author's shard that
// names its parent; the parent's shard holds the index of the parent's
// live direct replies (table replies) and their count (posts.reply_count),
// moved together in one transaction so that the count is exact. When both
// live on one database the reply, its index row and the count commit in
// the reply's transaction; across shards the reply's post is the truth
// and the index row and count its mirror, synced through the journal
// (SyncReply): a counted index (counted.go), as reposts are.

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

// indexReply adds reply p to its parent's index and count (add).
func (s *Store) indexReply(ctx context.Context, tx *sql.Tx, home Shard, p feed.Post) ([]Sync, error) {
	if !p.IsReply() {
		return nil, nil
	}
	return s.add(ctx, tx, home, replyIndex, p.ID, p.InReplyToID, p.AuthorID, p.InReplyToAuthorID)
}

// unnotifyIndexed takes back the notifications that target's children
// in index ix gave its author, those of them still indexed (a row's
// notification came with it).
func (s *Store) unnotifyIndexed(ctx context.Context, tx *sql.Tx, ix countedIndex, target int64, children []int64) error {
	rows, err := tx.QueryContext(ctx, "SELECT i."+ix.child+", i."+ix.author+", p.author_id FROM "+ix.table+" i JOIN posts p ON p.id = i."+ix.target+
		" WHERE i."+ix.target+" = ? AND i."+ix.child+" IN ("+placeholders(len(children))+")",
		append([]any{target}, chunkArgs(children)...)...)
	if err != nil {
		return err
	}
	var ns []feed.Notice
	for rows.Next() {
		var child, author, targetAuthor int64
		if err := rows.Scan(&child, &author, &targetAuthor); err != nil {
			rows.Close()
			return err
		}
		ns = append(ns, noticeOf(ix, target, child, author, targetAuthor))
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	return s.removeNotices(ctx, tx, ns)
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
// indexes and counts (the parents of this shard).
func (s *Store) purgeReplies(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	return s.purgeIndexed(ctx, tx, replyIndex, user)
}
