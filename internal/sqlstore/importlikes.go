package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// ImportLikes makes each user like each post unless the pair has a row
// already (a like, or an unlike the user made since, which an import must
// not undo), with exact like counts, also while live likes of the same
// pairs are made (insertLikes, or ApplyLikes for a batch that meets rows
// of some of its pairs). An imported like is versioned at its post's
// creation, so it sorts below every live action of its user, and a
// re-run finds its own rows stored and changes nothing.
func (s *Store) ImportLikes(ctx context.Context, likes [][2]int64) (feed.LikeImport, error) {
	res, _, err := s.ImportLikesOn(ctx, Shard{}, likes, nil)
	return res, err
}

// ImportLikesOn is ImportLikes on home, the shard of every like's post:
// foreign tells which users of other shards exist (the caller asked their
// shards), and their likes are journaled for their mirrors on the users'
// shards, one whole row per user (SyncLikesOf) when the batch goes in
// whole, which it returns with their Due for the caller to sync the likes
// and then delete the rows (a batch that met rows of some of its pairs
// journals each pair, ApplyLikes' way, and returns none).
func (s *Store) ImportLikesOn(ctx context.Context, home Shard, likes [][2]int64, foreign map[int64]bool) (feed.LikeImport, []Sync, error) {
	res := feed.LikeImport{Outcomes: make([]feed.ImportOutcome, len(likes))}
	var users, posts []int64
	for _, l := range likes {
		users, posts = append(users, l[0]), append(posts, l[1])
	}
	slices.Sort(users)
	slices.Sort(posts)
	users, posts = slices.Compact(users), slices.Compact(posts)
	live := make(map[int64]bool, len(users))
	for id, ok := range foreign {
		if ok && !home.Holds(id) {
			live[id] = true
		}
	}
	users = slices.DeleteFunc(users, func(id int64) bool { return !home.Holds(id) })
	for _, chunk := range idChunks(users) {
		found, err := s.queryIDs(ctx, len(chunk), "SELECT id FROM users WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL", chunk...)
		if err != nil {
			return res, nil, fmt.Errorf("sqlstore: import likes: read users: %w", err)
		}
		for _, id := range found {
			live[id] = true
		}
	}
	created := make(map[int64]int64, len(posts))
	for _, chunk := range idChunks(posts) {
		rows, err := s.db.QueryContext(ctx, "SELECT id, created_at FROM posts WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL", chunk...)
		if err != nil {
			return res, nil, fmt.Errorf("sqlstore: import likes: read posts: %w", err)
		}
		for rows.Next() {
			var id, at int64
			if err := rows.Scan(&id, &at); err != nil {
				rows.Close()
				return res, nil, err
			}
			created[id] = at
		}
		if err := closeRows(rows); err != nil {
			return res, nil, fmt.Errorf("sqlstore: import likes: read posts: %w", err)
		}
	}
	var evs []feed.LikeEvent
	seen := map[int64]bool{}
	for i, l := range likes {
		at, ok := created[l[1]]
		switch {
		case !live[l[0]]:
			res.Outcomes[i] = feed.UnknownUser
			continue
		case !ok:
			res.Outcomes[i] = feed.UnknownPost
			continue
		}
		res.Outcomes[i] = feed.Imported
		// Microseconds like every like version; the post id's sequence
		// keeps one user's likes of posts of the same millisecond apart.
		evs = append(evs, feed.LikeEvent{User: l[0], Post: l[1], Liked: true, Version: at*1000 + (l[1]&4095)%1000})
		if !seen[l[0]] {
			seen[l[0]] = true
			res.Users = append(res.Users, l[0])
		}
	}
	slices.Sort(res.Users)
	if len(evs) == 0 {
		return res, nil, nil
	}
	w, syncs, err := s.insertLikes(ctx, home, evs)
	if errors.Is(err, errMixedLikes) {
		// Some of the pairs have rows and some not (a run cut short, or
		// likes made meanwhile): the batch writer's locking read tells
		// which, under locks that keep live writers of the pairs off.
		w, err = s.applyLikes(ctx, home, evs)
	}
	if err != nil {
		return res, nil, fmt.Errorf("sqlstore: import likes: %w", err)
	}
	for _, d := range w.Deltas {
		res.Liked += int(d)
	}
	res.Deltas, res.Tallies = w.Deltas, w.Tallies
	return res, syncs, nil
}

// errMixedLikes says a batch of imported likes met rows of some of its
// pairs but not all: insertLikes undid it, for ApplyLikes to sort out.
var errMixedLikes = errors.New("some of the pairs have rows")

// insertLikes is ImportLikes' fast path. Every imported like is a liked
// row that must not replace a row the pair has (an import's version is
// below any live action, so ApplyLikes would keep the stored row too):
// an insert that keeps existing rows, in primary key order, does it
// without ApplyLikes' locking read of the pairs, whose gap locks made two
// import batches deadlock on each other. Its count of affected rows says
// how many pairs it added. All of them (a first run) or none (a re-run)
// tells every post's delta exactly, since the rows an insert adds are
// locked by it until the commit: a live writer of one of those pairs
// waits, then reads the imported row, and one that came first left a
// row the insert kept and did not count. Any other count is
// errMixedLikes, with nothing written. The journal rows it wrote come
// back with their Due.
func (s *Store) insertLikes(ctx context.Context, home Shard, evs []feed.LikeEvent) (feed.LikesWritten, []Sync, error) {
	slices.SortFunc(evs, func(a, b feed.LikeEvent) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Post, b.Post))
	})
	// The same pair twice in a batch has the same version: one row.
	evs = slices.CompactFunc(evs, func(a, b feed.LikeEvent) bool { return a.User == b.User && a.Post == b.Post })
	var w feed.LikesWritten
	var syncs []Sync
	apply := func(tx *sql.Tx) error {
		w, syncs = feed.LikesWritten{}, nil
		deltas := map[int64]int64{}
		var added int64
		insert := func(n int, query string, args ...any) error {
			res, err := tx.ExecContext(ctx, query, args...)
			if err != nil {
				return fmt.Errorf("insert %d likes: %w", n, err)
			}
			rows, err := res.RowsAffected()
			added += rows
			return err
		}
		if s.d.likesFromArrays != "" {
			// Three array parameters instead of three per row: a
			// statement of thousands of parameters costs PostgreSQL more
			// to bind and plan than to run.
			users, posts, versions := make([]int64, len(evs)), make([]int64, len(evs)), make([]int64, len(evs))
			for i, ev := range evs {
				users[i], posts[i], versions[i] = ev.User, ev.Post, ev.Version
			}
			if err := insert(len(evs), s.d.likesFromArrays, users, posts, versions); err != nil {
				return err
			}
		}
		for start := 0; start < len(evs) && s.d.likesFromArrays == ""; start += importRows {
			chunk := evs[start:min(start+importRows, len(evs))]
			args := make([]any, 0, 3*len(chunk))
			for _, ev := range chunk {
				args = append(args, ev.User, ev.Post, ev.Version)
			}
			if err := insert(len(chunk), "INSERT INTO likes (user_id, post_id, liked, version) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, 1, ?), ", len(chunk)), ", ")+s.d.keepLikes, args...); err != nil {
				return err
			}
		}
		switch added {
		case 0:
			return nil
		case int64(len(evs)):
		default:
			return errMixedLikes
		}
		token := WholeToken()
		for _, ev := range evs { // by user: one row each
			if !home.Holds(ev.User) && (len(syncs) == 0 || syncs[len(syncs)-1].A != ev.User) {
				syncs = append(syncs, Sync{Kind: SyncLikesOf, A: ev.User, B: token})
			}
		}
		if err := s.journal(ctx, tx, syncs); err != nil {
			return err
		}
		posts := make([]int64, 0, len(evs))
		for _, ev := range evs {
			if deltas[ev.Post] == 0 {
				posts = append(posts, ev.Post)
			}
			deltas[ev.Post]++
		}
		// Post order, the batch writer's, so that the two queue on a
		// shared post instead of deadlocking.
		slices.Sort(posts)
		now := millis(time.Now())
		for start := 0; start < len(posts); start += importRows {
			chunk := posts[start:min(start+importRows, len(posts))]
			args := make([]any, 0, 3*len(chunk))
			for _, p := range chunk {
				args = append(args, p, deltas[p], now)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO post_stats (post_id, like_count, like_seq, updated_at) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, 1, ?), ", len(chunk)), ", ")+s.d.upsertStats, args...); err != nil {
				return fmt.Errorf("move %d like counts: %w", len(chunk), err)
			}
		}
		tallies, err := likeTallies(ctx, tx, posts)
		w = feed.LikesWritten{Deltas: deltas, Tallies: tallies, Rows: len(evs)}
		return err
	}
	var err error
	for round := 0; round < 4; round++ {
		if err = s.write(ctx, apply); err == nil || !s.d.retryable(err) {
			break
		}
	}
	if err != nil {
		return feed.LikesWritten{}, nil, err
	}
	return w, syncs, nil
}
