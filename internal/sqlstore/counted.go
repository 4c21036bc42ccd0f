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

// A counted index is a post's index of the posts that point at it, on
// the post's shard, with their count on the post's row: the replies of a
// parent (replies, reply_count; replies.go) and the reposts of an
// original (reposted, repost_count; reposts.go). The index row and the
// count move together in one transaction, so that the count is exact:
// in the pointing post's own transaction when both live on one database,
// else through the journal (the index's SyncKind), whose sync reads the
// pointing post as it stands on its shard (the truth) and makes the index
// agree (syncIndex).
type countedIndex struct {
	table     string   // the index table
	target    string   // its column of the post pointed at
	child     string   // its column of the pointing post
	author    string   // its column of the pointing post's author
	count     string   // the posts column of the count
	ref       string   // the posts column that names the post pointed at
	refAuthor string   // the posts column of that post's author
	kind      SyncKind // the journal's kind across shards
	// notice, if set, is the notification a row brings its target's
	// author (notifyIndexed), added and taken back in the transactions
	// that add and drop the row: once, whatever the journal's replays.
	notice feed.NoticeKind
}

var (
	replyIndex = countedIndex{table: "replies", target: "parent_id", child: "reply_id", author: "author_id", count: "reply_count",
		ref: "in_reply_to_id", refAuthor: "in_reply_to_author_id", kind: SyncReply, notice: feed.NoticeReply}
	repostIndex = countedIndex{table: "reposted", target: "post_id", child: "repost_id", author: "user_id", count: "repost_count",
		ref: "repost_of_id", refAuthor: "repost_of_author_id", kind: SyncRepost, notice: feed.NoticeRepost}
)

// noticeOf is the notification of index ix's row (target, child, author)
// for the target's author: a reply's is about the reply (replies are never
// grouped), a repost's about the original (the reposts of one post group).
func noticeOf(ix countedIndex, target, child, author, targetAuthor int64) feed.Notice {
	n := feed.Notice{Recipient: targetAuthor, Actor: author, Kind: ix.notice, Post: target, At: feed.IDTime(child)}
	if ix.notice == feed.NoticeReply {
		n.Post = child
	}
	return n
}

// add indexes child (of author) under target (of targetAuthor) and
// counts it, here when target lives on this database, else through the
// journal row it returns. The child's id is new (its post was just
// inserted): so is its row.
func (s *Store) add(ctx context.Context, tx *sql.Tx, home Shard, ix countedIndex, child, target, author, targetAuthor int64) ([]Sync, error) {
	if !home.Holds(target) {
		syncs := []Sync{{Kind: ix.kind, A: child, B: target}}
		return syncs, s.journal(ctx, tx, syncs)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+ix.table+" ("+ix.target+", "+ix.child+", "+ix.author+") VALUES (?, ?, ?)",
		target, child, author); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE posts SET "+ix.count+" = "+ix.count+" + 1 WHERE id = ?", target); err != nil || ix.notice == "" {
		return nil, err
	}
	return nil, s.addNotices(ctx, tx, []feed.Notice{noticeOf(ix, target, child, author, targetAuthor)})
}

// remove takes deleted child out of target's index and count, as add put
// it there.
func (s *Store) remove(ctx context.Context, tx *sql.Tx, home Shard, ix countedIndex, child, target int64) ([]Sync, error) {
	if !home.Holds(target) {
		syncs := []Sync{{Kind: ix.kind, A: child, B: target}}
		return syncs, s.journal(ctx, tx, syncs)
	}
	// The target's row first, as a child's creation locks it, then the
	// index row.
	var locked int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM posts WHERE id = ?"+s.d.forUpdate, target).Scan(&locked)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return nil, s.drop(ctx, tx, ix, map[int64][]int64{target: {child}})
}

// drop deletes the index rows of children (target → child ids) and takes
// from each target's count the rows that were there.
func (s *Store) drop(ctx context.Context, tx *sql.Tx, ix countedIndex, children map[int64][]int64) error {
	for _, target := range slices.Sorted(maps.Keys(children)) {
		ids := children[target]
		if ix.notice != "" {
			if err := s.unnotifyIndexed(ctx, tx, ix, target, ids); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM "+ix.table+" WHERE "+ix.target+" = ? AND "+ix.child+" IN ("+placeholders(len(ids))+")",
			append([]any{target}, chunkArgs(ids)...)...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE posts SET "+ix.count+" = "+ix.count+" - ? WHERE id = ?", n, target); err != nil {
			return err
		}
	}
	return nil
}

// syncIndex makes this store, the shard of the targets, agree with the
// children's posts on truth: an index row and a count for each live
// child, none for a deleted or purged one. It locks the targets' rows (as
// a local child's creation does), then reads the truth, so that the last
// sync of a pair sees its last change; running one again changes
// nothing. A target that is gone (purged) keeps no index.
func (s *Store) syncIndex(ctx context.Context, truth *Store, ix countedIndex, syncs []Sync) error {
	targets := make([]int64, 0, len(syncs))
	children := make([]int64, 0, len(syncs))
	for _, y := range syncs {
		targets = append(targets, y.B)
		children = append(children, y.A)
	}
	slices.Sort(targets)
	targets = slices.Compact(targets)
	return s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM posts WHERE id IN ("+placeholders(len(targets))+") ORDER BY id"+s.d.forUpdate, chunkArgs(targets)...)
		if err != nil {
			return err
		}
		live, err := scanIDs(rows, len(targets))
		if err != nil {
			return err
		}
		here := map[int64]bool{}
		for _, id := range live {
			here[id] = true
		}
		// The truth as it stands, read after the locks (the read pool:
		// see truthEdges).
		want, err := truth.liveChildren(ctx, ix, children)
		if err != nil {
			return err
		}
		drop := map[int64][]int64{}
		for _, y := range sortedSyncs(syncs) {
			w, ok := want[y.A]
			if !ok || w.target != y.B || !here[y.B] {
				drop[y.B] = append(drop[y.B], y.A)
				continue
			}
			// Under the target's lock: only a holder of it writes the
			// target's rows.
			var one int
			err := tx.QueryRowContext(ctx, "SELECT 1 FROM "+ix.table+" WHERE "+ix.target+" = ? AND "+ix.child+" = ?", y.B, y.A).Scan(&one)
			if err == nil {
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if _, err := s.add(ctx, tx, Shard{}, ix, y.A, y.B, w.author, w.targetAuthor); err != nil {
				return err
			}
		}
		return s.drop(ctx, tx, ix, drop)
	})
}

// liveChild is a live pointing post's author, the post it points at and
// that post's author.
type liveChild struct{ author, target, targetAuthor int64 }

// liveChildren returns which of ids are live posts of live users that
// point at a post through ix, from the primary (through the read pool's
// connections, as truthEdges).
func (s *Store) liveChildren(ctx context.Context, ix countedIndex, ids []int64) (map[int64]liveChild, error) {
	out := map[int64]liveChild{}
	for _, chunk := range chunks(ids) {
		rows, err := s.rdb.QueryContext(ctx, "SELECT p.id, p.author_id, p."+ix.ref+", p."+ix.refAuthor+" FROM posts p JOIN users u ON u.id = p.author_id AND u.deleted_at IS NULL"+
			" WHERE p.id IN ("+placeholders(len(chunk))+") AND p.deleted_at IS NULL AND p."+ix.ref+" IS NOT NULL", chunk...)
		if err != nil {
			return nil, fmt.Errorf("read the truth of %d posts of %s: %w", len(chunk), ix.table, err)
		}
		for rows.Next() {
			var id int64
			var c liveChild
			if err := rows.Scan(&id, &c.author, &c.target, &c.targetAuthor); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = c
		}
		if err := closeRows(rows); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// purgeIndexed takes a batch of user's posts out of the indexes and
// counts of ix's targets on this shard: the posts themselves go with
// purgePosts on the user's shard.
func (s *Store) purgeIndexed(ctx context.Context, tx *sql.Tx, ix countedIndex, user int64) (bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+ix.target+", "+ix.child+" FROM "+ix.table+" WHERE "+ix.author+" = ? ORDER BY "+ix.target+", "+ix.child+" LIMIT ?"+s.d.forUpdate,
		user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	drop := map[int64][]int64{}
	found := false
	for rows.Next() {
		var target, child int64
		if err := rows.Scan(&target, &child); err != nil {
			rows.Close()
			return false, err
		}
		drop[target] = append(drop[target], child)
		found = true
	}
	if err := closeRows(rows); err != nil || !found {
		return false, err
	}
	return true, s.drop(ctx, tx, ix, drop)
}
