package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// likePairsPerSelect bounds the (user, post) pairs of one locking read.
const likePairsPerSelect = 250

type likePair struct{ user, post int64 }

// ApplyLikes writes a batch of like events in one transaction, and is
// idempotent: applying a batch again, or any of its events in any order,
// ends in the same rows and counts.
//
// Per (user, post) only the event with the highest version counts, and
// only if it is newer than the stored row: an unlike delivered twice, or
// a like redelivered after a newer unlike, changes nothing. The rows of
// the batch's pairs are read with a lock first (on MySQL FOR UPDATE,
// which also locks the gaps of absent pairs, so concurrent writers in
// other processes serialize on shared pairs; on PostgreSQL, which has no
// gap locks, by inserting a no-action row for each pair that returns
// the pair's row, dialect.claimLikes; on SQLite the transaction is the
// only writer), so each post's delta is the
// number of rows that really flipped. Then one multi-row upsert writes the rows (an unlike is
// kept as a tombstone row, so that the version survives it), and one
// multi-row upsert moves every touched post's stats row by its delta:
// two write statements per batch of up to 500 pairs.
//
// It returns each post's delta (posts that did not move are left out) and
// the number of write statements it ran.
func (s *Store) ApplyLikes(ctx context.Context, evs []feed.LikeEvent) (feed.LikesWritten, error) {
	return s.applyLikes(ctx, Shard{}, evs)
}

// ApplyLikesOn is ApplyLikes on home, the shard of the events' posts (the
// truth of a like lives with its post's count): the rows it writes for
// users of other shards are journaled in the same transaction, for their
// mirrors on the users' shards (SyncLike).
func (s *Store) ApplyLikesOn(ctx context.Context, home Shard, evs []feed.LikeEvent) (feed.LikesWritten, error) {
	return s.applyLikes(ctx, home, evs)
}

func (s *Store) applyLikes(ctx context.Context, home Shard, evs []feed.LikeEvent) (out feed.LikesWritten, err error) {
	latest := make(map[likePair]feed.LikeEvent, len(evs))
	for _, ev := range evs {
		k := likePair{ev.User, ev.Post}
		if cur, ok := latest[k]; !ok || ev.Version > cur.Version {
			latest[k] = ev
		}
	}
	pairs := make([]likePair, 0, len(latest))
	for k := range latest {
		pairs = append(pairs, k)
	}
	// One lock order for every writer, so that two batches sharing pairs
	// queue instead of deadlocking (gap locks still can; write retries).
	slices.SortFunc(pairs, func(a, b likePair) int {
		return cmp.Or(cmp.Compare(a.user, b.user), cmp.Compare(a.post, b.post))
	})
	apply := func(tx *sql.Tx) error {
		out = feed.LikesWritten{Deltas: map[int64]int64{}}
		type row struct {
			liked   bool
			version int64
		}
		stored := make(map[likePair]row, len(pairs))
		// read scans the locked rows of a claim or a locking read.
		read := func(what string, n int, query string, args []any) error {
			rows, err := tx.QueryContext(ctx, query, args...)
			if err != nil {
				return fmt.Errorf("%s %d pairs: %w", what, n, err)
			}
			defer rows.Close()
			for rows.Next() {
				var p likePair
				var r row
				if err := rows.Scan(&p.user, &p.post, &r.liked, &r.version); err != nil {
					return fmt.Errorf("%s %d pairs: %w", what, n, err)
				}
				stored[p] = r
			}
			return rows.Err()
		}
		if s.d.claimLikes != "" {
			for start := 0; start < len(pairs); start += chunkSize {
				chunk := pairs[start:min(start+chunkSize, len(pairs))]
				args := make([]any, 0, 2*len(chunk))
				for _, p := range chunk {
					args = append(args, p.user, p.post)
				}
				if err := read("claim", len(chunk), "INSERT INTO likes (user_id, post_id, liked, version) VALUES "+
					strings.TrimSuffix(strings.Repeat("(?, ?, 0, 0), ", len(chunk)), ", ")+s.d.claimLikes, args); err != nil {
					return err
				}
			}
		} else {
			for start := 0; start < len(pairs); start += likePairsPerSelect {
				chunk := pairs[start:min(start+likePairsPerSelect, len(pairs))]
				args := make([]any, 0, 2*len(chunk))
				conds := make([]string, len(chunk))
				for i, p := range chunk {
					conds[i] = "(user_id = ? AND post_id = ?)"
					args = append(args, p.user, p.post)
				}
				if err := read("lock", len(chunk), "SELECT user_id, post_id, liked, version FROM likes"+s.d.likesByKey+" WHERE "+
					strings.Join(conds, " OR ")+" ORDER BY user_id, post_id"+s.d.forUpdate, args); err != nil {
					return err
				}
			}
		}
		var vals []any
		var syncs []Sync
		var flips []feed.LikeEvent
		for _, p := range pairs {
			ev := latest[p]
			r, ok := stored[p]
			if ok && r.version >= ev.Version {
				continue // stale or repeated
			}
			switch {
			case ev.Liked && !r.liked:
				out.Deltas[p.post]++
				flips = append(flips, ev)
			case !ev.Liked && r.liked:
				out.Deltas[p.post]--
				flips = append(flips, ev)
			}
			// liked is a small integer column: PostgreSQL, unlike MySQL
			// and SQLite, takes no bool for it.
			liked := 0
			if ev.Liked {
				liked = 1
			}
			vals = append(vals, p.user, p.post, liked, ev.Version)
			if !home.Holds(p.user) {
				syncs = append(syncs, Sync{Kind: SyncLike, A: p.user, B: p.post})
			}
		}
		if err := s.journal(ctx, tx, syncs); err != nil {
			return err
		}
		for start := 0; start < len(vals); start += 4 * chunkSize {
			chunk := vals[start:min(start+4*chunkSize, len(vals))]
			n := len(chunk) / 4
			if _, err := tx.ExecContext(ctx, "INSERT INTO likes (user_id, post_id, liked, version) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", n), ", ")+s.d.upsertLikes, chunk...); err != nil {
				return fmt.Errorf("write %d likes rows: %w", n, err)
			}
			out.Rows += n
			out.Writes++
		}
		var stats []any
		now := millis(time.Now())
		posts := make([]int64, 0, len(out.Deltas))
		for post, d := range out.Deltas {
			if d != 0 {
				posts = append(posts, post)
			}
		}
		slices.Sort(posts)
		for _, post := range posts {
			stats = append(stats, post, out.Deltas[post], now)
		}
		for start := 0; start < len(stats); start += 3 * chunkSize {
			chunk := stats[start:min(start+3*chunkSize, len(stats))]
			n := len(chunk) / 3
			if _, err := tx.ExecContext(ctx, "INSERT INTO post_stats (post_id, like_count, like_seq, updated_at) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, 1, ?), ", n), ", ")+s.d.upsertStats, chunk...); err != nil {
				return fmt.Errorf("move %d like counts: %w", n, err)
			}
			out.Writes++
		}
		if err := s.noticeLikes(ctx, tx, flips); err != nil {
			return err
		}
		// The tallies the cache settles with: read under this
		// transaction's locks on the moved posts' stats rows, so each is
		// exactly what this write left.
		touched := make([]int64, 0, len(pairs))
		for _, p := range pairs {
			touched = append(touched, p.post)
		}
		slices.Sort(touched)
		var err error
		out.Tallies, err = likeTallies(ctx, tx, slices.Compact(touched))
		return err
	}
	// Writers in several processes that share pairs (a redelivery) lock
	// the same gaps and can deadlock on the inserts; the victim runs
	// again. write already retries a few times; a batch, which holds
	// hundreds of acknowledgements, is worth a few rounds more.
	for round := 0; round < 4; round++ {
		if err = s.write(ctx, apply); err == nil || !s.d.retryable(err) {
			break
		}
	}
	if err != nil {
		return feed.LikesWritten{}, fmt.Errorf("sqlstore: apply %d like events: %w", len(evs), err)
	}
	for post, d := range out.Deltas {
		if d == 0 {
			delete(out.Deltas, post)
		}
	}
	return out, nil
}

// LikeCounts returns the like counts of posts; a post nobody liked is 0.
func (s *Store) LikeCounts(ctx context.Context, posts []int64) (map[int64]int64, error) {
	tallies, err := s.LikeTallies(ctx, posts)
	if err != nil {
		return nil, err
	}
	counts := make(map[int64]int64, len(tallies))
	for id, t := range tallies {
		counts[id] = t.Count
	}
	return counts, nil
}

// LikeTallies returns the like counts of posts with their sequences, for
// the cache's counters; a post nobody liked is {0, 0}.
func (s *Store) LikeTallies(ctx context.Context, posts []int64) (map[int64]feed.LikeTally, error) {
	tallies, err := likeTallies(ctx, s.rdb, posts)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: like counts of %d posts: %w", len(posts), err)
	}
	return tallies, nil
}

func likeTallies(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, posts []int64) (map[int64]feed.LikeTally, error) {
	tallies := make(map[int64]feed.LikeTally, len(posts))
	for _, id := range posts {
		tallies[id] = feed.LikeTally{}
	}
	for _, chunk := range chunks(posts) {
		err := func() error {
			rows, err := q.QueryContext(ctx,
				"SELECT post_id, like_count, like_seq FROM post_stats WHERE post_id IN ("+placeholders(len(chunk))+")", chunk...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				var t feed.LikeTally
				if err := rows.Scan(&id, &t.Count, &t.Seq); err != nil {
					return err
				}
				tallies[id] = t
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, err
		}
	}
	return tallies, nil
}

// PostLikedBy returns which of users like post, in one query per 500
// users: the readers of the live stream a post is sent to.
func (s *Store) PostLikedBy(ctx context.Context, post int64, users []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	for _, chunk := range chunks(users) {
		err := func() error {
			rows, err := s.rdb.QueryContext(ctx,
				"SELECT user_id FROM likes WHERE post_id = ? AND liked = 1 AND user_id IN ("+placeholders(len(chunk))+")",
				append([]any{post}, chunk...)...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				out[id] = true
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, fmt.Errorf("sqlstore: likes of %d users on %d: %w", len(users), post, err)
		}
	}
	return out, nil
}

// UserLikeEntries returns, in one query, user's newest recentN actions
// (newest first; complete when they are all there are) and user's actions
// on posts (absent: never acted). recentN 0 skips the first part.
func (s *Store) UserLikeEntries(ctx context.Context, user int64, recentN int, posts []int64) (recent []feed.LikeEntry, complete bool, on map[int64]feed.LikeEntry, err error) {
	on = map[int64]feed.LikeEntry{}
	var parts []string
	var args []any
	if recentN > 0 {
		parts = append(parts, "SELECT post_id, liked, version, 0 AS part FROM ("+
			"SELECT post_id, liked, version FROM likes WHERE user_id = ? ORDER BY version DESC LIMIT ?) recent")
		args = append(args, user, recentN)
	}
	if len(posts) > 0 {
		if len(posts) > chunkSize {
			return nil, false, nil, fmt.Errorf("sqlstore: likes of %d on %d posts: at most %d at once", user, len(posts), chunkSize)
		}
		parts = append(parts, "SELECT post_id, liked, version, 1 AS part FROM likes WHERE user_id = ? AND post_id IN ("+
			placeholders(len(posts))+")")
		args = append(args, user)
		for _, p := range posts {
			args = append(args, p)
		}
	}
	if len(parts) == 0 {
		return nil, true, on, nil
	}
	rows, err := s.rdb.QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, false, nil, fmt.Errorf("sqlstore: likes of %d: %w", user, err)
	}
	defer rows.Close()
	for rows.Next() {
		var e feed.LikeEntry
		var part int
		if err := rows.Scan(&e.Post, &e.Liked, &e.Version, &part); err != nil {
			return nil, false, nil, fmt.Errorf("sqlstore: likes of %d: %w", user, err)
		}
		if part == 0 {
			recent = append(recent, e)
		} else {
			on[e.Post] = e
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, nil, fmt.Errorf("sqlstore: likes of %d: %w", user, err)
	}
	// The derived table's order does not survive the union.
	slices.SortFunc(recent, func(a, b feed.LikeEntry) int { return cmp.Compare(b.Version, a.Version) })
	return recent, len(recent) < recentN, on, nil
}

// UserLikes returns up to n of the posts user likes, liked before version
// before (0: from the newest), newest like first, with their versions.
func (s *Store) UserLikes(ctx context.Context, user, before int64, n int) ([]feed.LikeEntry, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT post_id, version FROM likes
		WHERE user_id = ? AND version < ? AND liked = 1 ORDER BY version DESC LIMIT ?`, user, upperBound(before), n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: likes of %d before %d: %w", user, before, err)
	}
	defer rows.Close()
	var out []feed.LikeEntry
	for rows.Next() {
		e := feed.LikeEntry{Liked: true}
		if err := rows.Scan(&e.Post, &e.Version); err != nil {
			return nil, fmt.Errorf("sqlstore: likes of %d: %w", user, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// PostLikers returns up to n users who like post and the versions of
// their likes, newest like first,
// starting strictly after the position (version, user) of the last one
// seen (0, 0: from the newest).
func (s *Store) PostLikers(ctx context.Context, post, version, user int64, n int) (users, versions []int64, err error) {
	if version == 0 {
		version, user = upperBound(0), upperBound(0)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT user_id, version FROM likes
		WHERE post_id = ? AND liked = 1 AND (version < ? OR (version = ? AND user_id < ?))
		ORDER BY version DESC, user_id DESC LIMIT ?`, post, version, version, user, n)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstore: likers of %d: %w", post, err)
	}
	defer rows.Close()
	for rows.Next() {
		var u, v int64
		if err := rows.Scan(&u, &v); err != nil {
			return nil, nil, fmt.Errorf("sqlstore: likers of %d: %w", post, err)
		}
		users, versions = append(users, u), append(versions, v)
	}
	return users, versions, rows.Err()
}

// TopLiked returns up to n live posts created at or after since with the
// most likes, most first (ties: newest first), and their counts. Every
// like reaches post_stats through the batch writer, so no post's count
// can starve here, however it ranks.
func (s *Store) TopLiked(ctx context.Context, since time.Time, n int) ([]int64, map[int64]int64, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT s.post_id, s.like_count FROM post_stats s
		JOIN posts p ON p.id = s.post_id
		WHERE s.post_id >= ? AND s.like_count > 0 AND p.deleted_at IS NULL
		ORDER BY s.like_count DESC, s.post_id DESC LIMIT ?`, feed.MinIDAt(since), n)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstore: top liked since %v: %w", since, err)
	}
	defer rows.Close()
	var ids []int64
	counts := map[int64]int64{}
	for rows.Next() {
		var id, c int64
		if err := rows.Scan(&id, &c); err != nil {
			return nil, nil, fmt.Errorf("sqlstore: top liked: %w", err)
		}
		ids = append(ids, id)
		counts[id] = c
	}
	return ids, counts, rows.Err()
}

// LikedPosts returns up to n of the live posts user likes, with ids above
// after (0: from the first, posts from before 2025 and their negative ids
// included), by ascending id: pass the last id of a page as the next
// page's after. It is the export's listing, walking the likes primary key
// (user_id, post_id) rather than the version index the API's newest-first
// listing uses, so a page is a range read whatever the likes' order.
func (s *Store) LikedPosts(ctx context.Context, user, after int64, n int) ([]feed.Post, error) {
	if n <= 0 {
		return []feed.Post{}, nil
	}
	rows, err := s.rdb.QueryContext(ctx, "SELECT "+postColumnsOf("p")+` FROM likes l JOIN posts p ON p.id = l.post_id
		WHERE l.user_id = ? AND l.post_id > ? AND l.liked = 1 AND p.deleted_at IS NULL
		ORDER BY l.post_id LIMIT ?`, user, lowerBound(after), n)
	posts, err := scanPosts(rows, err, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: posts %d likes after %d: %w", user, after, err)
	}
	return posts, nil
}
