package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// NewestPostsFloor returns the id of the k-th newest post by anyone,
// deleted or not, or 0 when there are fewer: the posts above it are the
// k-1 newest. A smart refresh's window starts no lower (timeline), so that
// the walk of the window's posts FeedPostIDs makes on MariaDB costs at
// most k probes however many posts a second the deployment takes. It
// walks k entries of the primary key, newest first.
func (s *Store) NewestPostsFloor(ctx context.Context, k int) (int64, error) {
	if k <= 0 {
		return 0, nil
	}
	var id int64
	err := s.fromReplica(ctx, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, "SELECT id FROM posts ORDER BY id DESC LIMIT 1 OFFSET ?", k-1).Scan(&id)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlstore: the %d-th newest post: %w", k, err)
	}
	return id, nil
}

// FeedPostIDs builds reader's home feed from SQL: up to n ids of the
// non-deleted posts of the authors reader follows and of reader itself,
// with after < id < before (0: no bound, either side), newest first. It
// rebuilds an inbox, pages past a trimmed one, and refreshes a first page
// (a recent after).
//
// One query over the indexes; the plans, checked with EXPLAIN (MariaDB
// 10.11 with 500k posts by 5,000 authors, a reader following 200):
//
//   - MariaDB, wide window: f ref PRIMARY (follower_id = reader), "Using
//     index"; p ref posts_author (author_id = f.followee_id), "Using where;
//     Using index" (the id bounds and deleted_at are checked in the index,
//     no row is read); then "Using temporary; Using filesort" to merge the
//     authors by id. The cost is the followees' posts: all of them, since
//     MariaDB's ref access reads every index entry of the author and
//     filters the ids, it does not seek to the window.
//   - MariaDB, recent window (after within recentWindow of now, no
//     before: a smart refresh, a rebuild's catch-up): pinned to p range
//     PRIMARY newest first, f eq_ref PRIMARY (reader, p.author_id), no
//     sort, stopping at n hits. The cost is the posts of the window, by
//     anyone. Left to itself the optimizer costs the window's probes above
//     the followees' posts and walks the followees: on the 1M bench graph,
//     a reader of 5,000 accounts with 10,400 posts by others in the last
//     ten minutes, 35 ms that way against 2.9 ms this way, and under load
//     a second, every refresh.
//   - SQLite: SEARCH f USING PRIMARY KEY (follower_id=?), SEARCH p USING
//     COVERING INDEX posts_author (author_id=? AND id>? AND id<?), USE TEMP
//     B-TREE FOR ORDER BY: a seek per followee, for any window. The order
//     is pinned (dialect.feedJoin): without ANALYZE statistics SQLite
//     prefers walking every post newest first and probing follows, which
//     for a reader of a few quiet authors reads the whole table.
//   - PostgreSQL 15 (the 100k bench graph, 303k posts): a rebuild (wide
//     window, n above lateralMin) is pinned to follows f, then a LATERAL
//     Index Only Scan Backward on posts_author per followee, LIMIT n each,
//     and a top-n sort: 15,000 buffers for a reader of 5,000. Left to
//     itself the planner walks posts_pkey newest first and probes follows
//     (42,000 probes for 1,000 hits, in parallel workers), 3-8 times
//     slower. A page (small n) and a recent window are left to the
//     planner, which walks the newest posts for a reader of many
//     accounts and seeks each followee for a reader of few, as MariaDB
//     does. Both need custom plans (plan_cache_mode, postgres.go).
//
// The reader's own posts are a second range of the same statement, on
// posts_author (author_id = reader, the id window), at most n entries,
// merged with the followees' n by one sort of at most 2n ids.
func (s *Store) FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error) {
	return s.feedIDs(ctx, reader, after, before, n, nil)
}

// PushedFeedPostIDs is FeedPostIDs over the followees (and the reader)
// whose posts are pushed: it leaves out exactly the authors PullFollowees
// returns for the same band (follower_count >= high, or in [low, high) with pull_mode
// set). A hybrid inbox holds only these; the pulled authors' posts are
// merged from their outboxes at read time. The band is checked in the
// query, so a rebuild right after an author switched modes sees the
// switch. The plans are FeedPostIDs' with users joined by primary key.
func (s *Store) PushedFeedPostIDs(ctx context.Context, reader, high, low, after, before int64, n int) ([]int64, error) {
	return s.feedIDs(ctx, reader, after, before, n, &band{high, low})
}

// band is the follower-count band of PushedFeedPostIDs.
type band struct{ high, low int64 }

// recentWindow is how close to now a feed query's after must be for
// MariaDB to walk the window's posts (FeedPostIDs). It covers the smart
// refresh's horizon (10 minutes by default) with room to spare; in it the
// walk costs the posts published in at most an hour.
const recentWindow = time.Hour

// lateralMin is the n above which PostgreSQL reads a wide window's feed
// followee by followee (dialect.lateralFeed): a rebuild. For a page (at
// most 500 ids, a read-ahead round) the planner's own choice is as good
// or better: for a reader of many accounts, a walk of the newest posts
// that stops after n hits.
const lateralMin = 500

func (s *Store) feedIDs(ctx context.Context, reader, after, before int64, n int, b *band) ([]int64, error) {
	if n <= 0 {
		return []int64{}, nil
	}
	recent := before == 0 && after != 0 && after >= feed.MinIDAt(time.Now().Add(-recentWindow))
	lo, hi := lowerBound(after), upperBound(before)
	var bandCond string
	var bandArgs []any
	if b != nil {
		bandCond = " u.follower_count < ? AND (u.follower_count < ? OR u.pull_mode = 0)"
		bandArgs = []any{b.high, b.low}
	}
	const window = " p.id > ? AND p.id < ? AND p.deleted_at IS NULL ORDER BY p.id DESC LIMIT ?"
	args := make([]any, 0, 13)
	var fe string
	switch {
	case s.d.lateralFeed && !recent && n > s.lateralMin:
		// Each followee's n newest in the window, then the n newest of
		// those: the planner cannot turn this into a walk of every post.
		// The band leaves out the pulled authors, a few found through
		// users_follower_count and hashed once, rather than reading every
		// followee's users row.
		fe = "follows f CROSS JOIN LATERAL (SELECT p.id FROM posts p WHERE p.author_id = f.followee_id AND" + window +
			") p WHERE f.follower_id = ?"
		args = append(args, lo, hi, n, reader)
		if b != nil {
			fe += " AND f.followee_id NOT IN (SELECT id FROM users WHERE follower_count >= ? OR (follower_count >= ? AND pull_mode <> 0))"
			args = append(args, b.high, b.low)
		}
		fe += " ORDER BY p.id DESC LIMIT ?"
		args = append(args, n)
	case s.d.recentFirst && recent:
		// The reader's follow is a join condition of the walk.
		fe = "posts p STRAIGHT_JOIN follows f ON f.follower_id = ? AND f.followee_id = p.author_id"
		if b != nil {
			fe += " STRAIGHT_JOIN users u ON u.id = p.author_id WHERE" + bandCond + " AND"
		} else {
			fe += " WHERE"
		}
		fe += window
		args = append(append(append(args, reader), bandArgs...), lo, hi, n)
	default:
		fe = "follows f"
		if b != nil {
			fe += " " + s.d.feedJoin + " users u ON u.id = f.followee_id"
		}
		fe += " " + s.d.feedJoin + " posts p ON p.author_id = f.followee_id WHERE f.follower_id = ? AND"
		if b != nil {
			fe += bandCond + " AND"
		}
		fe += window
		args = append(append(append(args, reader), bandArgs...), lo, hi, n)
	}
	// The reader's own posts are on its feed too: a second range, on
	// posts_author alone, whose n newest are merged with the followees'
	// n newest in the same statement. The band, if any, is checked for
	// the reader as for a followee (a pulled reader's own posts are merged
	// from its author list, as its followers' are).
	own := "posts p WHERE"
	if b != nil {
		own = "posts p " + s.d.feedJoin + " users u ON u.id = p.author_id WHERE" + bandCond + " AND"
	}
	own += " p.author_id = ? AND" + window
	args = append(append(append(args, bandArgs...), reader), lo, hi, n)
	args = append(args, n)
	ids, err := s.replicaIDs(ctx, n, "SELECT id FROM (SELECT p.id FROM "+fe+
		") fe UNION ALL SELECT id FROM (SELECT p.id FROM "+own+
		") ow ORDER BY id DESC LIMIT ?", args...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: feed of %d in (%d, %d): %w", reader, after, before, err)
	}
	return ids, nil
}
