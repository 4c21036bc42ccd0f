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

// Outcome is what an import did with one row of a batch.
type Outcome uint8

const (
	// Imported: the row was new and is stored.
	Imported Outcome = iota
	// Unchanged: the store held the row already (a re-run, or the same
	// row twice in a batch); nothing changed.
	Unchanged
	// UnknownUser: a user the row names does not exist, or is being
	// deleted.
	UnknownUser
	// UnknownPost: the post a like names does not exist.
	UnknownPost
	// Blocked: a block between the two users forbids the follow.
	Blocked
	// SelfFollow: a follow of oneself.
	SelfFollow
	// Deleting: a user id whose earlier user is being purged.
	Deleting
)

// importChunk bounds the rows of one multi-row statement of an import:
// under SQLite's 32766 bound variables at 5 per row, and well under
// MySQL's default packet size.
const importChunk = 2000

// importIDs bounds the ids of one IN list of an import: one statement for
// a whole batch's users, under SQLite's bound on variables.
const importIDs = 5000

// idChunks is chunks with importIDs per chunk; ids must be sorted and
// without repeats.
func idChunks(ids []int64) [][]any {
	var out [][]any
	for start := 0; start < len(ids); start += importIDs {
		part := ids[start:min(start+importIDs, len(ids))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		out = append(out, args)
	}
	return out
}

// ImportUsers stores the users that do not exist yet, with the rules of
// CreateUser (counts start at zero; an id whose earlier user was purged
// starts at that user's token generation), and leaves existing ones as
// they are: running it twice changes nothing. outcomes[i] is what became
// of users[i].
func (s *Store) ImportUsers(ctx context.Context, users []feed.User) ([]Outcome, error) {
	out := make([]Outcome, len(users))
	for start := 0; start < len(users); start += importChunk {
		chunk := users[start:min(start+importChunk, len(users))]
		if err := s.importUsers(ctx, chunk, out[start:]); err != nil {
			return nil, fmt.Errorf("sqlstore: import %d users: %w", len(users), err)
		}
	}
	return out, nil
}

func (s *Store) importUsers(ctx context.Context, users []feed.User, out []Outcome) error {
	ids := make([]any, 0, len(users))
	for _, u := range users {
		ids = append(ids, u.ID)
	}
	deleted := map[int64]bool{}
	exists := map[int64]bool{}
	rows, err := s.db.QueryContext(ctx, "SELECT id, deleted_at IS NOT NULL FROM users WHERE id IN ("+placeholders(len(ids))+")", ids...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var del bool
		if err := rows.Scan(&id, &del); err != nil {
			rows.Close()
			return err
		}
		exists[id], deleted[id] = true, del
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	gens := map[int64]int64{}
	rows, err = s.db.QueryContext(ctx, "SELECT user_id, token_generation FROM user_purges WHERE user_id IN ("+placeholders(len(ids))+")", ids...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, gen int64
		if err := rows.Scan(&id, &gen); err != nil {
			rows.Close()
			return err
		}
		gens[id] = gen
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	now := millis(time.Now())
	var args []any
	var fresh []int
	for i, u := range users {
		switch {
		case deleted[u.ID]:
			out[i] = Deleting
			continue
		case exists[u.ID]:
			out[i] = Unchanged
			continue
		}
		exists[u.ID] = true // the same id again in this batch is unchanged
		created := now
		if !u.CreatedAt.IsZero() {
			created = millis(u.CreatedAt)
		}
		args = append(args, u.ID, u.Name, created, gens[u.ID])
		fresh = append(fresh, i)
		out[i] = Imported
	}
	if len(fresh) == 0 {
		return nil
	}
	res, err := s.db.ExecContext(ctx, "INSERT INTO users (id, name, follower_count, following_count, created_at, token_generation) VALUES "+
		strings.TrimSuffix(strings.Repeat("(?, ?, 0, 0, ?, ?), ", len(fresh)), ", ")+s.d.keepExisting, args...)
	if err != nil {
		return err
	}
	// A user created meanwhile (the API, another import) was kept as it
	// was: count those rows unchanged, so that the totals stay exact.
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	for k := len(fresh) - 1; k >= 0 && int64(len(fresh)) > n; k-- {
		out[fresh[k]] = Unchanged
		fresh = fresh[:k]
	}
	return nil
}

func closeRows(rows *sql.Rows) error {
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}

// pair is an edge: follower a, followee b.
type pair struct{ a, b int64 }

// FollowImport is what ImportFollows did with a batch of edges.
type FollowImport struct {
	// Outcomes[i] is what became of edge i.
	Outcomes []Outcome
	// Followers are the users who follow someone new: their feeds
	// changed. Followees are the users who gained followers. Both
	// ascending, without repeats.
	Followers, Followees []int64
}

// ImportFollows adds the edges (follower, followee) that do not exist yet,
// with exact counts: edges that exist are left alone and not counted
// again, so running it twice changes nothing. An edge naming an unknown
// user, a follow of oneself, and an edge a block forbids are left out
// and said so in the outcomes.
//
// One transaction per call. It takes the lock order of Follow: every
// user of the batch is locked first, in id order (a locking read walks
// its IN list sorted, and the chunks go in ascending order), so a
// concurrent Follow or Unfollow of one of these pairs queues behind the
// import or the import behind it. Under those locks the edges missing are
// exactly the ones this transaction adds, and the counts move by them.
func (s *Store) ImportFollows(ctx context.Context, edges [][2]int64) (FollowImport, error) {
	var res FollowImport
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = s.importFollows(ctx, tx, edges)
		return err
	})
	if err != nil {
		return FollowImport{}, fmt.Errorf("sqlstore: import %d follows: %w", len(edges), err)
	}
	return res, nil
}

func (s *Store) importFollows(ctx context.Context, tx *sql.Tx, edges [][2]int64) (FollowImport, error) {
	res := FollowImport{Outcomes: make([]Outcome, len(edges))}
	users := make([]int64, 0, 2*len(edges))
	for _, e := range edges {
		users = append(users, e[0], e[1])
	}
	slices.Sort(users)
	users = slices.Compact(users)
	live := make(map[int64]bool, len(users))
	for _, chunk := range idChunks(users) {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM users WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL"+s.d.forUpdate, chunk...)
		if err != nil {
			return res, fmt.Errorf("lock users: %w", err)
		}
		found, err := scanIDs(rows, len(chunk))
		if err != nil {
			return res, fmt.Errorf("lock users: %w", err)
		}
		for _, id := range found {
			live[id] = true
		}
	}
	// Blocks are few: every block by a user of the batch, filtered here.
	blocked := map[pair]bool{}
	for _, chunk := range idChunks(users) {
		rows, err := tx.QueryContext(ctx, "SELECT blocker_id, blocked_id FROM blocks WHERE blocker_id IN ("+placeholders(len(chunk))+")", chunk...)
		if err != nil {
			return res, fmt.Errorf("read blocks: %w", err)
		}
		for rows.Next() {
			var p pair
			if err := rows.Scan(&p.a, &p.b); err != nil {
				rows.Close()
				return res, err
			}
			blocked[p], blocked[pair{p.b, p.a}] = true, true
		}
		if err := closeRows(rows); err != nil {
			return res, err
		}
	}
	var want []pair
	for i, e := range edges {
		switch {
		case e[0] == e[1]:
			res.Outcomes[i] = SelfFollow
		case !live[e[0]] || !live[e[1]]:
			res.Outcomes[i] = UnknownUser
		case blocked[pair{e[0], e[1]}]:
			res.Outcomes[i] = Blocked
		default:
			res.Outcomes[i] = Unchanged // until found missing below
			want = append(want, pair{e[0], e[1]})
		}
	}
	slices.SortFunc(want, func(x, y pair) int { return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b)) })
	want = slices.Compact(want)
	// Most batches are all new (a first run) or all there (a re-run):
	// one insert that keeps existing edges tells which by its count of
	// affected rows, since the locks held keep everyone else off these
	// edges. A batch of both kinds is undone to a savepoint and reads
	// which edges exist first.
	now := millis(time.Now())
	have := make(map[pair]bool, len(want))
	if _, err := tx.ExecContext(ctx, "SAVEPOINT import_edges"); err != nil {
		return res, err
	}
	n, err := insertEdges(ctx, tx, want, now, s.d.keepExisting)
	if err != nil {
		return res, err
	}
	switch {
	case n == int64(len(want)):
	case n == 0:
		for _, p := range want {
			have[p] = true
		}
	default:
		if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT import_edges"); err != nil {
			return res, err
		}
		if err := s.readEdges(ctx, tx, want, have); err != nil {
			return res, err
		}
		var missing []pair
		for _, p := range want {
			if !have[p] {
				missing = append(missing, p)
			}
		}
		if _, err := insertEdges(ctx, tx, missing, now, ""); err != nil {
			return res, err
		}
	}
	added := make(map[pair]bool, len(want))
	following := map[int64]int64{}
	followers := map[int64]int64{}
	for _, p := range want {
		if have[p] {
			continue
		}
		added[p] = true
		following[p.a]++
		followers[p.b]++
	}
	// Every user whose counts move, in id order (the locks are held
	// already), in one upsert per chunk whose rows all exist.
	var moved []int64
	for id := range following {
		moved = append(moved, id)
	}
	for id := range followers {
		if following[id] == 0 {
			moved = append(moved, id)
		}
	}
	slices.Sort(moved)
	args := make([]any, 0, 5*len(moved))
	for _, id := range moved {
		args = append(args, id, "", followers[id], following[id], now)
	}
	for start := 0; start < len(args); start += 5 * importChunk {
		chunk := args[start:min(start+5*importChunk, len(args))]
		if _, err := tx.ExecContext(ctx, "INSERT INTO users (id, name, follower_count, following_count, created_at) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?), ", len(chunk)/5), ", ")+s.d.addCounts, chunk...); err != nil {
			return res, fmt.Errorf("count %d users: %w", len(chunk)/5, err)
		}
	}
	for i, e := range edges {
		if p := (pair{e[0], e[1]}); added[p] {
			res.Outcomes[i] = Imported
			delete(added, p) // the same edge again in the batch is unchanged
		}
	}
	for _, id := range moved {
		if following[id] > 0 {
			res.Followers = append(res.Followers, id)
		}
		if followers[id] > 0 {
			res.Followees = append(res.Followees, id)
		}
	}
	return res, nil
}

// MarkPulled sets the stored pull state of every author with at least
// high followers, for a hybrid deployment after an import added followers
// without going through the timeline, and reports how many changed. It
// is the state the timeline would have recorded on the follow that
// crossed the threshold, so that the author turns push again only below
// the hysteresis band, with the catch-up fan-out SetPullMode queues.
func (s *Store) MarkPulled(ctx context.Context, high int64) (int64, error) {
	res, err := s.db.ExecContext(ctx, "UPDATE users SET pull_mode = 1 WHERE follower_count >= ? AND pull_mode = 0 AND deleted_at IS NULL", high)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: mark pulled authors: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlstore: mark pulled authors: %w", err)
	}
	return n, nil
}

// LikeImport is what ImportLikes did with a batch of (user, post) likes.
type LikeImport struct {
	// Outcomes[i] is UnknownUser, UnknownPost, or Imported for a valid
	// like; of the valid ones, Liked of them were new (the others were
	// there already, liked or unliked since).
	Outcomes []Outcome
	// Liked counts the new likes; Deltas is how much each post's like
	// count moved (posts that did not move are left out).
	Liked  int
	Deltas map[int64]int64
	// Users are the users of the valid likes, ascending.
	Users []int64
}

// ImportLikes makes each user like each post unless the pair has a row
// already (a like, or an unlike the user made since, which an import must
// not undo), with exact like counts: it goes through ApplyLikes, the
// batch writer's own path, whose locks and upserts serialize it with the
// live likes of the same pairs. An imported like is versioned at its
// post's creation, so it sorts below every live action of its user, and
// a re-run finds its own version stored and changes nothing.
func (s *Store) ImportLikes(ctx context.Context, likes [][2]int64) (LikeImport, error) {
	res := LikeImport{Outcomes: make([]Outcome, len(likes))}
	var users, posts []int64
	for _, l := range likes {
		users, posts = append(users, l[0]), append(posts, l[1])
	}
	slices.Sort(users)
	slices.Sort(posts)
	users, posts = slices.Compact(users), slices.Compact(posts)
	live := make(map[int64]bool, len(users))
	for _, chunk := range idChunks(users) {
		found, err := s.queryIDs(ctx, len(chunk), "SELECT id FROM users WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL", chunk...)
		if err != nil {
			return res, fmt.Errorf("sqlstore: import likes: read users: %w", err)
		}
		for _, id := range found {
			live[id] = true
		}
	}
	created := make(map[int64]int64, len(posts))
	for _, chunk := range idChunks(posts) {
		rows, err := s.db.QueryContext(ctx, "SELECT id, created_at FROM posts WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL", chunk...)
		if err != nil {
			return res, fmt.Errorf("sqlstore: import likes: read posts: %w", err)
		}
		for rows.Next() {
			var id, at int64
			if err := rows.Scan(&id, &at); err != nil {
				rows.Close()
				return res, err
			}
			created[id] = at
		}
		if err := closeRows(rows); err != nil {
			return res, fmt.Errorf("sqlstore: import likes: read posts: %w", err)
		}
	}
	var evs []feed.LikeEvent
	seen := map[int64]bool{}
	for i, l := range likes {
		at, ok := created[l[1]]
		switch {
		case !live[l[0]]:
			res.Outcomes[i] = UnknownUser
			continue
		case !ok:
			res.Outcomes[i] = UnknownPost
			continue
		}
		res.Outcomes[i] = Imported
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
		return res, nil
	}
	deltas, _, err := s.ApplyLikes(ctx, evs)
	if err != nil {
		return res, fmt.Errorf("sqlstore: import likes: %w", err)
	}
	for _, d := range deltas {
		res.Liked += int(d)
	}
	res.Deltas = deltas
	return res, nil
}

// PostRow is an imported post.
type PostRow struct {
	Key       ExternalKey
	Content   string
	Data      string // compact JSON (feed.CheckData) or ""
	CreatedAt time.Time
}

// PostImport is what ImportPosts did with a batch.
type PostImport struct {
	// Outcomes[i] is what became of post i.
	Outcomes []Outcome
	// Authors are the authors who got new posts, ascending: their
	// followers' feeds changed.
	Authors []int64
}

// importRetries bounds how often ImportPosts runs a batch again after a
// duplicate key: another writer took a key or an id between the batch's
// read and its insert.
const importRetries = 5

// maxSeqAttempts bounds the sequence numbers ImportPosts tries for one
// post: far more than a millisecond's 4,096 need, unless it is full.
const maxSeqAttempts = 1 << 16

// ImportPosts stores the posts whose (author, external id) is new, each
// with an id from its creation time (feed.IDAt's millisecond, the first
// sequence number free in it), so that feeds show imported history in
// time order below every post made live since. No outbox event is
// written: nothing fans out. Running it twice changes nothing.
func (s *Store) ImportPosts(ctx context.Context, posts []PostRow) (PostImport, error) {
	var res PostImport
	var err error
	for attempt := 1; attempt <= importRetries; attempt++ {
		err = s.write(ctx, func(tx *sql.Tx) error {
			var err error
			res, err = s.importPosts(ctx, tx, posts)
			return err
		})
		if !s.d.duplicate(err) {
			break
		}
	}
	if err != nil {
		return PostImport{}, fmt.Errorf("sqlstore: import %d posts: %w", len(posts), err)
	}
	return res, nil
}

func (s *Store) importPosts(ctx context.Context, tx *sql.Tx, posts []PostRow) (PostImport, error) {
	res := PostImport{Outcomes: make([]Outcome, len(posts))}
	authors := make([]int64, 0, len(posts))
	for _, p := range posts {
		authors = append(authors, p.Key.AuthorID)
	}
	slices.Sort(authors)
	authors = slices.Compact(authors)
	// The authors are locked, in id order like every user lock, so that a
	// deletion (which marks the user under the same lock) cannot slip
	// between this check and the insert and leave posts its purge missed.
	live := make(map[int64]bool, len(authors))
	for _, chunk := range idChunks(authors) {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM users WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL"+s.d.forUpdate, chunk...)
		if err != nil {
			return res, fmt.Errorf("lock authors: %w", err)
		}
		found, err := scanIDs(rows, len(chunk))
		if err != nil {
			return res, fmt.Errorf("lock authors: %w", err)
		}
		for _, id := range found {
			live[id] = true
		}
	}
	keys := make([]ExternalKey, 0, len(posts))
	for _, p := range posts {
		if live[p.Key.AuthorID] {
			keys = append(keys, p.Key)
		}
	}
	have, err := s.postIDs(ctx, tx, keys)
	if err != nil {
		return res, err
	}
	// Ids: each post's millisecond with the sequence feed.ImportSeq
	// gives it (the same in every run and every database), or its next
	// attempt's while another post holds the id, stored or in the batch.
	var fresh []int
	ids := make([]int64, len(posts))
	attempt := make([]int, len(posts))
	for i, p := range posts {
		switch {
		case !live[p.Key.AuthorID]:
			res.Outcomes[i] = UnknownUser
			continue
		case have[p.Key] != 0:
			res.Outcomes[i] = Unchanged
			continue
		}
		have[p.Key] = -1 // the same key again in the batch is unchanged
		fresh = append(fresh, i)
		res.Outcomes[i] = Imported
	}
	stored := map[int64]bool{}
	for {
		used := make(map[int64]bool, len(fresh))
		var probe []any
		for _, i := range fresh {
			p := posts[i]
			for ; ; attempt[i]++ {
				if attempt[i] > maxSeqAttempts {
					return res, fmt.Errorf("no free id in the millisecond of %s for post %q of %d", p.CreatedAt.Format(time.RFC3339Nano), p.Key.ExternalID, p.Key.AuthorID)
				}
				id, err := feed.IDAt(p.CreatedAt, feed.ImportSeq(p.Key.AuthorID, p.Key.ExternalID, attempt[i]))
				if err == nil && !stored[id] && !used[id] {
					ids[i] = id
					break
				}
			}
			used[ids[i]] = true
			probe = append(probe, ids[i])
		}
		clashed := false
		for start := 0; start < len(probe); start += importIDs {
			chunk := probe[start:min(start+importIDs, len(probe))]
			found, err := queryIDsTx(ctx, tx, "SELECT id FROM posts WHERE id IN ("+placeholders(len(chunk))+")", chunk...)
			if err != nil {
				return res, fmt.Errorf("read ids: %w", err)
			}
			for _, id := range found {
				stored[id], clashed = true, true
			}
		}
		if !clashed {
			break
		}
	}
	args := make([]any, 0, 6*len(fresh))
	gotPosts := map[int64]bool{}
	for _, i := range fresh {
		p := posts[i]
		var data any
		if p.Data != "" {
			data = p.Data
		}
		args = append(args, ids[i], p.Key.AuthorID, p.Content, millis(p.CreatedAt), data, p.Key.ExternalID)
		if !gotPosts[p.Key.AuthorID] {
			gotPosts[p.Key.AuthorID] = true
			res.Authors = append(res.Authors, p.Key.AuthorID)
		}
	}
	for start := 0; start < len(args); start += 6 * importChunk {
		chunk := args[start:min(start+6*importChunk, len(args))]
		if _, err := tx.ExecContext(ctx, "INSERT INTO posts (id, author_id, content, created_at, deleted_at, data, external_id) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, NULL, ?, ?), ", len(chunk)/6), ", "), chunk...); err != nil {
			return res, err
		}
	}
	slices.Sort(res.Authors)
	return res, nil
}

// postIDs is PostIDsByExternalID inside an import's transaction (on
// SQLite the only connection): deleted posts included, since their
// external ids stay taken.
func (s *Store) postIDs(ctx context.Context, tx *sql.Tx, keys []ExternalKey) (map[ExternalKey]int64, error) {
	out := make(map[ExternalKey]int64, len(keys))
	err := readPairs(ctx, tx, keys, "SELECT author_id, external_id, id FROM posts", "(author_id = ? AND external_id = ?)",
		func(k ExternalKey) []any { return []any{k.AuthorID, k.ExternalID} },
		func(rows *sql.Rows) error {
			var k ExternalKey
			var id int64
			err := rows.Scan(&k.AuthorID, &k.ExternalID, &id)
			out[k] = id
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("read post keys: %w", err)
	}
	return out, nil
}

// readPairs runs query WHERE cond OR cond ..., one cond (two
// placeholders, filled by args) per key, likePairsPerSelect keys a
// statement, and hands each row to scan.
func readPairs[K any](ctx context.Context, tx *sql.Tx, keys []K, query, cond string, args func(K) []any, scan func(*sql.Rows) error) error {
	for start := 0; start < len(keys); start += likePairsPerSelect {
		chunk := keys[start:min(start+likePairsPerSelect, len(keys))]
		conds := make([]string, len(chunk))
		vals := make([]any, 0, 2*len(chunk))
		for i, k := range chunk {
			conds[i] = cond
			vals = append(vals, args(k)...)
		}
		rows, err := tx.QueryContext(ctx, query+" WHERE "+strings.Join(conds, " OR "), vals...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		if err := closeRows(rows); err != nil {
			return err
		}
	}
	return nil
}

func queryIDsTx(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanIDs(rows, len(args))
}

// insertEdges inserts edges created at now, with the statement ending
// onDup, and returns how many rows it added.
func insertEdges(ctx context.Context, tx *sql.Tx, edges []pair, now int64, onDup string) (int64, error) {
	var added int64
	for start := 0; start < len(edges); start += importChunk {
		chunk := edges[start:min(start+importChunk, len(edges))]
		args := make([]any, 0, 3*len(chunk))
		for _, p := range chunk {
			args = append(args, p.a, p.b, now)
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO follows (follower_id, followee_id, created_at) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(chunk)), ", ")+onDup, args...)
		if err != nil {
			return 0, fmt.Errorf("insert %d edges: %w", len(chunk), err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		added += n
	}
	return added, nil
}

// readEdges adds to have those of edges that exist.
func (s *Store) readEdges(ctx context.Context, tx *sql.Tx, edges []pair, have map[pair]bool) error {
	err := readPairs(ctx, tx, edges, "SELECT follower_id, followee_id FROM follows"+s.d.likesByKey, "(follower_id = ? AND followee_id = ?)",
		func(p pair) []any { return []any{p.a, p.b} },
		func(rows *sql.Rows) error {
			var p pair
			err := rows.Scan(&p.a, &p.b)
			have[p] = true
			return err
		})
	if err != nil {
		return fmt.Errorf("read edges: %w", err)
	}
	return nil
}
