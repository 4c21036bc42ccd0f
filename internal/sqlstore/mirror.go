package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// The two halves of a write that spans shards (internal/shards): the
// truth commits on one shard with a row in shard_syncs, the journal, and
// a sync then makes the mirror on the other shard agree with it. This
// file is the journal and the sync; halves.go the truth halves.

// Shard is a store's place among the logical shards of a sharded
// deployment: the ids whose low bits are K are its own. The zero Shard is
// an unsharded store, which holds every id.
type Shard struct{ K, N int }

// Holds reports whether id (a user's, or a post's: it carries its
// author's shard) lives on this shard.
func (h Shard) Holds(id int64) bool { return h.N <= 1 || int(id&int64(h.N-1)) == h.K }

// SyncKind names what a journal row keeps in step.
type SyncKind int16

const (
	// SyncFollow: A follows B. Truth on A's shard (the follows row,
	// A's following_count); mirror on B's (the same row, B's
	// follower_count).
	SyncFollow SyncKind = 1
	// SyncBlock: A blocks B. Truth on A's shard, mirror (the same
	// blocks row) on B's, where B's follows and reads see it.
	SyncBlock SyncKind = 2
	// SyncLike: user A's like (or unlike) of post B. Truth on the post's
	// shard (the likes row and the post's count); mirror (the same likes
	// row) on the user's, for the user's lists.
	SyncLike SyncKind = 3
	// SyncFollowsOf: every edge from user A to users of other shards;
	// B tells apart the rows of two writers (a batch's random token). An
	// import journals its batch this way, one row per follower instead of
	// one per edge: a row costs its insert and delete, a third of a
	// sharded import's work when each edge had one. The writer syncs its
	// own edges and deletes its row; a repairer that claims a row syncs
	// all of A's edges out of the shard (ExpandSyncs).
	SyncFollowsOf SyncKind = 4
	// SyncLikesOf: every like by user A, who lives on another shard, of
	// this shard's posts; B as in SyncFollowsOf. An import's likers.
	SyncLikesOf SyncKind = 5
	// SyncReply: post A replies to post B of another shard. Truth on
	// A's shard (the reply's post, live or not); mirror on B's (the
	// replies index row and B's reply_count, replies.go). B is a post id,
	// which names its author's shard as a user id does.
	SyncReply SyncKind = 6
	// SyncRepost: post A reposts post B of another shard. Truth on A's
	// shard (the repost's post, live or not); mirror on B's (the reposted
	// index row and B's repost_count, reposts.go).
	SyncRepost SyncKind = 7
)

// Whole reports whether y stands for all of a user's pairs of its kind
// (SyncFollowsOf, SyncLikesOf) rather than for one pair.
func (y Sync) Whole() bool { return y.Kind == SyncFollowsOf || y.Kind == SyncLikesOf }

// WholeToken returns a B for the whole rows of one write: random, so that
// two writers of the same user journal two rows, and each deletes its
// own only after syncing its own pairs.
func WholeToken() int64 { return rand.Int64N(math.MaxInt64-1) + 1 }

// Sync is one journal row: the pair whose mirror may lag its truth.
type Sync struct {
	Kind SyncKind
	A, B int64
	// Due is the row's due_at as last read (PendingSyncs, ClaimSyncs):
	// DoneSyncs deletes the row only if no write moved it since.
	Due int64
}

// MirrorUser is the user whose shard holds the mirror of a pair's sync
// (not Whole: ExpandSyncs turns those into pairs).
func (y Sync) MirrorUser() int64 {
	if y.Kind == SyncLike || y.Kind == SyncLikesOf {
		return y.A
	}
	return y.B
}

// SyncMirror makes this store, the shard of the syncs' mirror users,
// agree with truth, the shard whose journal holds them. Per kind, one
// transaction: it locks the mirror users' rows (in id order, as every
// write of their edges does), then reads the truth as it stands, then
// inserts or deletes each mirror row, moving the mirror user's count only
// by the rows that changed. Since each truth change journals a sync that
// starts after its commit and reads the truth under these locks, the last
// sync to run sees the last change, whatever order they run in; running
// one again changes nothing.
//
// A mirror is kept only while both of its users live (the truth's user is
// read on the truth shard, the mirror's here): a deleted user's rows are
// the purge's, and a sync must not put one back behind it. Truth rows
// whose mirror user is gone come back as orphans, for the truth shard to
// drop (DropOrphans): a write that raced the user's deletion.
func (s *Store) SyncMirror(ctx context.Context, truth *Store, syncs []Sync) (orphans []Sync, err error) {
	for _, kind := range []SyncKind{SyncFollow, SyncBlock, SyncLike, SyncReply, SyncRepost} {
		var of []Sync
		for _, y := range syncs {
			if y.Kind == kind {
				of = append(of, y)
			}
		}
		if len(of) == 0 {
			continue
		}
		var o []Sync
		switch kind {
		case SyncLike:
			o, err = s.syncLikes(ctx, truth, of)
		case SyncReply:
			err = s.syncIndex(ctx, truth, replyIndex, of)
		case SyncRepost:
			err = s.syncIndex(ctx, truth, repostIndex, of)
		default:
			o, err = s.syncEdges(ctx, truth, kind, of)
		}
		if err != nil {
			return nil, fmt.Errorf("sqlstore: sync %d mirrors of kind %d: %w", len(of), kind, err)
		}
		orphans = append(orphans, o...)
	}
	return orphans, nil
}

// ExpandSyncs returns the pair syncs that whole journal rows (Sync.Whole)
// of this shard, home, stand for: every row of their users here whose
// mirror lives on another shard (a follower's edges, a liker's likes of
// this shard's posts), as it stands now. The pairs have no Due: their
// rows are the whole rows, which the caller deletes once they are synced.
func (s *Store) ExpandSyncs(ctx context.Context, home Shard, whole []Sync) ([]Sync, error) {
	var out []Sync
	for _, k := range []struct {
		kind, pair SyncKind
		query      string
	}{
		{SyncFollowsOf, SyncFollow, "SELECT follower_id, followee_id FROM follows WHERE follower_id IN ("},
		{SyncLikesOf, SyncLike, "SELECT user_id, post_id FROM likes WHERE user_id IN ("},
	} {
		var users []int64
		for _, y := range whole {
			if y.Kind == k.kind {
				users = append(users, y.A)
			}
		}
		slices.Sort(users)
		for _, chunk := range idChunks(slices.Compact(users)) {
			rows, err := s.db.QueryContext(ctx, k.query+placeholders(len(chunk))+")", chunk...)
			if err != nil {
				return nil, fmt.Errorf("sqlstore: expand %d journal rows: %w", len(chunk), err)
			}
			for rows.Next() {
				y := Sync{Kind: k.pair}
				if err := rows.Scan(&y.A, &y.B); err != nil {
					rows.Close()
					return nil, fmt.Errorf("sqlstore: expand journal rows: %w", err)
				}
				if !home.Holds(y.MirrorUser()) {
					out = append(out, y)
				}
			}
			if err := closeRows(rows); err != nil {
				return nil, fmt.Errorf("sqlstore: expand journal rows: %w", err)
			}
		}
	}
	return out, nil
}

// edgeTable is where a kind of edge lives: its table, its columns, and
// the users' column that counts the edge on the mirror side ("" for none).
type edgeTable struct{ table, a, b, count string }

func edgeTableOf(kind SyncKind) edgeTable {
	if kind == SyncFollow {
		return edgeTable{"follows", "follower_id", "followee_id", "follower_count"}
	}
	return edgeTable{"blocks", "blocker_id", "blocked_id", ""}
}

func syncEdgesOf(syncs []Sync) []feed.Edge {
	edges := make([]feed.Edge, 0, len(syncs))
	for _, y := range sortedSyncs(syncs) {
		edges = append(edges, feed.Edge{Follower: y.A, Followee: y.B})
	}
	return edges
}

func mirrorUsers(syncs []Sync) []int64 {
	users := make([]int64, len(syncs))
	for i, y := range syncs {
		users[i] = y.MirrorUser()
	}
	slices.Sort(users)
	return slices.Compact(users)
}

func (s *Store) syncEdges(ctx context.Context, truth *Store, kind SyncKind, syncs []Sync) ([]Sync, error) {
	t := edgeTableOf(kind)
	edges := syncEdgesOf(syncs)
	users := mirrorUsers(syncs)
	var orphans []Sync
	err := s.write(ctx, func(tx *sql.Tx) error {
		orphans = nil
		live, err := s.liveUsers(ctx, tx, users, s.d.forUpdate)
		if err != nil {
			return err
		}
		// The truth as it stands now, read after the locks.
		want, err := truth.truthEdges(ctx, t, edges)
		if err != nil {
			return err
		}
		// The rows the mirror should have and those it should not.
		var put []any
		var drop []feed.Edge
		kept := map[feed.Edge]bool{}
		for _, e := range edges {
			at, ok := want[e]
			if ok && !live[e.Followee] {
				orphans = append(orphans, Sync{Kind: kind, A: e.Follower, B: e.Followee})
				ok = false
			}
			if ok {
				kept[e] = true
				put = append(put, e.Follower, e.Followee, at)
			} else {
				drop = append(drop, e)
			}
		}
		// A block standing on this side takes the blocked user's edge to
		// the blocker with it (its truth is here), in this transaction:
		// a follow that comes after meets the block, one that came
		// before is gone, also when the blocker's process died before it
		// could see to it (shards.Store.Block).
		if kind == SyncBlock {
			var follows []Sync
			for _, e := range edges {
				if _, ok := want[e]; !ok || !live[e.Followee] {
					continue
				}
				removed, err := s.removeEdge(ctx, tx, e.Followee, e.Follower)
				if err != nil {
					return err
				}
				if removed {
					follows = append(follows, Sync{Kind: SyncFollow, A: e.Followee, B: e.Follower})
				}
			}
			if err := s.journal(ctx, tx, follows); err != nil {
				return err
			}
		}
		// A counted edge moves its mirror user's count by what the writes
		// really changed: the batch's rows are read, locked, before them. Only syncs write mirror rows, under the users' locks
		// taken above, but a purge may delete some without them (it waits
		// for the rows locked here).
		var before map[feed.Edge]bool
		if t.count != "" {
			if before, err = s.pairsIn(ctx, tx, t.table, t.a, t.b, edges, s.d.forUpdate); err != nil {
				return err
			}
		}
		// The writes in multi-row statements across the batch's users: one
		// per user (a batch of an import names thousands) cost a round trip
		// each.
		for chunk := range slices.Chunk(put, 3*chunkSize) {
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+t.table+" ("+t.a+", "+t.b+", created_at) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(chunk)/3), ", ")+s.d.keepExisting, chunk...); err != nil {
				return err
			}
		}
		for _, chunk := range pairChunks(drop) {
			where, args := pairClause(t.a, t.b, chunk)
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+t.table+" WHERE "+where, args...); err != nil {
				return err
			}
		}
		if t.count == "" {
			return nil
		}
		// What the writes left follows from what was there: the rows read
		// are locked, and a missing one only a sync (holding the users'
		// locks) could insert.
		// The followee's notification moves with the mirror's row, in this
		// transaction: a sync run twice changes it once.
		delta := map[int64]int64{}
		var told, untold []feed.Notice
		for _, e := range edges {
			switch {
			case kept[e] && !before[e]:
				delta[e.Followee]++
				told = append(told, followNotice(e.Follower, e.Followee, fromMillis(want[e])))
			case !kept[e] && before[e]:
				delta[e.Followee]--
				untold = append(untold, followNotice(e.Follower, e.Followee, time.Time{}))
			}
		}
		if err := s.addNotices(ctx, tx, told); err != nil {
			return err
		}
		if err := s.removeNotices(ctx, tx, untold); err != nil {
			return err
		}
		return addToCount(ctx, tx, t.count, delta)
	})
	return orphans, err
}

// truthEdges returns which of edges are rows of t here whose first user
// lives, with their creation times. It reads the primary, outside any
// transaction: the latest committed truth. It runs inside the mirror
// shard's transaction, so it takes a connection of the read pool: a
// transaction never waits for a connection of another shard's write pool,
// which another shard's transaction could hold while it waits for ours
// (with no read pool of its own, rdb is the write pool, and a timeout on
// ctx is what bounds that wait).
func (s *Store) truthEdges(ctx context.Context, t edgeTable, edges []feed.Edge) (map[feed.Edge]int64, error) {
	out := map[feed.Edge]int64{}
	for _, chunk := range s.d.pairChunks(edges) {
		where, args := s.d.pairWhere(t.a, t.b, chunk)
		rows, err := s.rdb.QueryContext(ctx, "SELECT e."+t.a+", e."+t.b+", e.created_at FROM "+t.table+
			" e JOIN users u ON u.id = e."+t.a+" AND u.deleted_at IS NULL WHERE "+where, args...)
		if err != nil {
			return nil, fmt.Errorf("read the truth of %d edges: %w", len(chunk), err)
		}
		for rows.Next() {
			var e feed.Edge
			var at int64
			if err := rows.Scan(&e.Follower, &e.Followee, &at); err != nil {
				rows.Close()
				return nil, err
			}
			out[e] = at
		}
		if err := closeRows(rows); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// likeRow is a likes row's state.
type likeRow struct {
	liked   int
	version int64
}

func (s *Store) syncLikes(ctx context.Context, truth *Store, syncs []Sync) ([]Sync, error) {
	pairs := syncEdgesOf(syncs) // Follower: the user, Followee: the post
	users := mirrorUsers(syncs)
	var orphans []Sync
	err := s.write(ctx, func(tx *sql.Tx) error {
		orphans = nil
		live, err := s.liveUsers(ctx, tx, users, s.d.forUpdate)
		if err != nil {
			return err
		}
		want, err := likeRows(ctx, truth.rdb, truth.d, pairs) // the read pool: see truthEdges
		if err != nil {
			return err
		}
		have, err := likeRows(ctx, tx, s.d, pairs, s.d.forUpdate)
		if err != nil {
			return err
		}
		var drop []feed.Edge
		var put []any
		for _, p := range pairs {
			w, ok := want[p]
			if ok && !live[p.Follower] {
				orphans = append(orphans, Sync{Kind: SyncLike, A: p.Follower, B: p.Followee})
				ok = false
			}
			h, had := have[p]
			switch {
			case ok && had && h == w:
				continue
			case ok:
				if had {
					drop = append(drop, p)
				}
				put = append(put, p.Follower, p.Followee, w.liked, w.version)
			case had:
				drop = append(drop, p)
			}
		}
		for _, chunk := range pairChunks(drop) {
			where, args := pairClause("user_id", "post_id", chunk)
			if _, err := tx.ExecContext(ctx, "DELETE FROM likes WHERE "+where, args...); err != nil {
				return err
			}
		}
		for chunk := range slices.Chunk(put, 4*importRows) {
			if _, err := tx.ExecContext(ctx, "INSERT INTO likes (user_id, post_id, liked, version) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", len(chunk)/4), ", "), chunk...); err != nil {
				return err
			}
		}
		return nil
	})
	return orphans, err
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// likeRows reads the likes rows of pairs (user, post) with the queries
// of d; lock is what ends the statement.
func likeRows(ctx context.Context, q queryer, d dialect, pairs []feed.Edge, lock ...string) (map[feed.Edge]likeRow, error) {
	out := map[feed.Edge]likeRow{}
	for _, chunk := range d.pairChunks(pairs) {
		where, args := d.pairWhere("user_id", "post_id", chunk)
		rows, err := q.QueryContext(ctx, "SELECT user_id, post_id, liked, version FROM likes"+d.likesByKey+" WHERE "+where+
			" ORDER BY user_id, post_id"+strings.Join(lock, ""), args...)
		if err != nil {
			return nil, fmt.Errorf("read %d likes: %w", len(chunk), err)
		}
		for rows.Next() {
			var p feed.Edge
			var r likeRow
			if err := rows.Scan(&p.Follower, &p.Followee, &r.liked, &r.version); err != nil {
				rows.Close()
				return nil, err
			}
			out[p] = r
		}
		if err := closeRows(rows); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DropOrphans removes truth rows whose mirror user is gone (SyncMirror's
// orphans), each with its count, as the purge would have: a write that
// raced its other user's deletion, and committed after the purge passed
// this shard.
func (s *Store) DropOrphans(ctx context.Context, orphans []Sync) error {
	for _, y := range sortedSyncs(orphans) {
		err := s.write(ctx, func(tx *sql.Tx) error {
			switch y.Kind {
			case SyncFollow:
				if _, err := s.lockUser(ctx, tx, y.A); err != nil {
					return err
				}
				_, err := s.removeEdge(ctx, tx, y.A, y.B)
				return err
			case SyncBlock:
				_, err := tx.ExecContext(ctx, "DELETE FROM blocks WHERE blocker_id = ? AND blocked_id = ?", y.A, y.B)
				return err
			}
			var liked int
			err := tx.QueryRowContext(ctx, "SELECT liked FROM likes WHERE user_id = ? AND post_id = ?"+s.d.forUpdate, y.A, y.B).Scan(&liked)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM likes WHERE user_id = ? AND post_id = ?", y.A, y.B); err != nil {
				return err
			}
			if liked == 0 {
				return nil
			}
			_, err = tx.ExecContext(ctx, "UPDATE post_stats SET like_count = like_count - 1, like_seq = like_seq + 1, updated_at = ? WHERE post_id = ?",
				millis(time.Now()), y.B)
			return err
		})
		if err != nil {
			return fmt.Errorf("sqlstore: drop orphan %d -> %d (kind %d): %w", y.A, y.B, y.Kind, err)
		}
	}
	return nil
}

// lockUser locks user's row for the transaction and reports whether the
// user lives.
func (s *Store) lockUser(ctx context.Context, tx *sql.Tx, user int64) (bool, error) {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM users WHERE id = ? AND deleted_at IS NULL"+s.d.forUpdate, user).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
