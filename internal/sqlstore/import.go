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

// ImportOutcome is what an import did with one row: ImportPosts with a
// post, ImportUsers, ImportFollows and ImportLikes with theirs.
type ImportOutcome int

const (
	// Imported: the post is stored.
	Imported ImportOutcome = iota
	// ExternalIDExists: the author has a post with this external id
	// already (ImportResult.ExistingID), deleted or not; nothing was
	// written. Importing a file again ends here for every post.
	ExternalIDExists
	// IDTaken: another post has this id (the same millisecond and
	// sequence); nothing was written. The caller tries again with another
	// sequence (feed.ImportSeq with the next attempt).
	IDTaken
)

// ImportResult is ImportPosts' answer for one post.
type ImportResult struct {
	Outcome    ImportOutcome
	ExistingID int64 // with ExternalIDExists: the post that has the external id
}

// importChunk bounds the keys of one lookup of external ids: two
// arguments a key.
const importChunk = chunkSize / 2

// importPostsPerTx bounds the posts of one ImportPosts transaction: seven
// arguments a post in its insert, under SQLite's 32766. A commit costs a
// flush of the log, and an import's batches are 2,000 rows: at 250 a
// transaction, 250,000 posts went in at 5,000/s against 10,200/s at
// 2,000 in the first of three alternated pairs on MariaDB (the machine's
// load swamped the other two).
const importPostsPerTx = 2000

// importAttempts bounds the rounds of one chunk that lose a race to a
// concurrent writer of the same keys (a post published in the same
// millisecond, an import running twice at once).
const importAttempts = 4

// ImportPosts stores posts as an import brings them: every field chosen
// by the caller (ID from feed.IDAt, AuthorID, Content, Data, CreatedAt,
// ExternalID, which is required), and no outbox event, so nothing is
// fanned out: the caller drops the inboxes the posts belong in. The
// caller has checked the authors exist and the content and data
// (feed.CheckContent, feed.CheckData, feed.CheckExternalID).
//
// It answers for each post, in order: Imported, ExternalIDExists with the
// post that has the external id (a post of the same call included), or
// IDTaken. A chunk of posts is one transaction, so a failure leaves the
// earlier chunks stored; running the call again completes it, as every
// post already stored answers ExternalIDExists. A post that is no valid
// post is EINVALID, and nothing of its chunk is stored.
func (s *Store) ImportPosts(ctx context.Context, posts []feed.Post) ([]ImportResult, error) {
	out := make([]ImportResult, 0, len(posts))
	for start := 0; start < len(posts); start += importPostsPerTx {
		chunk := posts[start:min(start+importPostsPerTx, len(posts))]
		for _, p := range chunk {
			if !feed.ValidPostID(p.ID) || p.AuthorID <= 0 || p.ExternalID == "" {
				return out, fmt.Errorf("sqlstore: import posts: %w", feed.Errorf(feed.EINVALID,
					"post %d by %d: an imported post has a post id (feed.ValidPostID), a positive author id and an external id", p.ID, p.AuthorID))
			}
		}
		var res []ImportResult
		var err error
		for attempt := 1; ; attempt++ {
			err = s.write(ctx, func(tx *sql.Tx) error {
				res, err = s.importChunk(ctx, tx, chunk)
				return err
			})
			// A duplicate here is a concurrent writer's row that the
			// chunk's lookups did not see yet: look again.
			if err == nil || !errors.Is(err, errDuplicatePost) || attempt == importAttempts {
				break
			}
		}
		if err != nil {
			return out, fmt.Errorf("sqlstore: import %d posts: %w", len(chunk), err)
		}
		out = append(out, res...)
	}
	return out, nil
}

// importChunk is one transaction of ImportPosts.
func (s *Store) importChunk(ctx context.Context, tx *sql.Tx, chunk []feed.Post) ([]ImportResult, error) {
	keys := make([]ExternalKey, len(chunk))
	ids := make([]any, len(chunk))
	for i, p := range chunk {
		keys[i], ids[i] = ExternalKey{p.AuthorID, p.ExternalID}, p.ID
	}
	byKey, err := externalIDsIn(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT id FROM posts WHERE id IN ("+placeholders(len(ids))+")", ids...)
	if err != nil {
		return nil, err
	}
	found, err := scanIDs(rows, len(ids))
	if err != nil {
		return nil, err
	}
	taken := make(map[int64]bool, len(found))
	for _, id := range found {
		taken[id] = true
	}

	res := make([]ImportResult, len(chunk))
	var values []string
	var args []any
	now := millis(time.Now())
	for i, p := range chunk {
		switch existing, ok := byKey[keys[i]]; {
		case ok:
			res[i] = ImportResult{Outcome: ExternalIDExists, ExistingID: existing}
			continue
		case taken[p.ID]:
			res[i] = ImportResult{Outcome: IDTaken}
			continue
		}
		// Later posts of the chunk see this one, as they would see it
		// stored by an earlier call.
		byKey[keys[i]], taken[p.ID] = p.ID, true
		created := p.CreatedAt
		if created.IsZero() {
			created = fromMillis(now)
		}
		values = append(values, "(?, ?, ?, ?, NULL, ?, ?)")
		args = append(args, p.ID, p.AuthorID, p.Content, millis(created), nullData(p.Data), p.ExternalID)
	}
	if len(values) == 0 {
		return res, nil
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO posts (id, author_id, content, created_at, deleted_at, data, external_id) VALUES "+
		strings.Join(values, ", "), args...)
	if s.d.duplicate(err) {
		return nil, errDuplicatePost
	}
	return res, err
}

// externalIDsIn returns the ids of the posts among keys, on q (the
// primary, or a transaction), one query per chunk of keys.
func externalIDsIn(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, keys []ExternalKey) (map[ExternalKey]int64, error) {
	ids := make(map[ExternalKey]int64, len(keys))
	for start := 0; start < len(keys); start += importChunk {
		chunk := keys[start:min(start+importChunk, len(keys))]
		args := make([]any, 0, 2*len(chunk))
		for _, k := range chunk {
			args = append(args, k.AuthorID, k.ExternalID)
		}
		err := func() error {
			rows, err := q.QueryContext(ctx, "SELECT author_id, external_id, id FROM posts WHERE (author_id, external_id) IN ("+
				strings.TrimSuffix(strings.Repeat("(?, ?), ", len(chunk)), ", ")+")", args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var k ExternalKey
				var id int64
				if err := rows.Scan(&k.AuthorID, &k.ExternalID, &id); err != nil {
					return err
				}
				ids[k] = id
			}
			return rows.Err()
		}()
		if err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// More outcomes, of the users, follows and likes an import brings.
const (
	// Unchanged: the store held the row already (a re-run, or the same
	// row twice in a batch); nothing changed.
	Unchanged ImportOutcome = iota + IDTaken + 1
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

// importRows bounds the rows of one multi-row statement of the users,
// follows and likes an import brings: under SQLite's 32766 bound
// variables at 5 per row, and well under MySQL's default packet size.
const importRows = 2000

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
func (s *Store) ImportUsers(ctx context.Context, users []feed.User) ([]ImportOutcome, error) {
	out := make([]ImportOutcome, len(users))
	for start := 0; start < len(users); start += importRows {
		chunk := users[start:min(start+importRows, len(users))]
		if err := s.importUsers(ctx, chunk, out[start:]); err != nil {
			return nil, fmt.Errorf("sqlstore: import %d users: %w", len(users), err)
		}
	}
	return out, nil
}

func (s *Store) importUsers(ctx context.Context, users []feed.User, out []ImportOutcome) error {
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
	Outcomes []ImportOutcome
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
// One transaction per call, first on the fast path, which locks its
// users only at its end: it inserts the edges, then locks every user of
// them in id order (a locking read walks its IN list sorted, and the
// chunks go in ascending order, as Follow does), sees under those locks
// that each is live and that no block stands between two of them, and
// moves the counts by the edges it inserted. A live Follow or Unfollow of
// one of these pairs meets the inserted row's lock and queues behind the
// import, and every count moves by increments, so counts stay exact.
// Two batches of the same users overlap everywhere but in their short
// count updates: when each batch locked its users for its whole insert,
// two writers took turns (92–97k follows/s against 114–121k/s, same
// run, docs/performance.md#importing).
//
// A batch that is not all new edges of live, unblocked users (a re-run,
// a bad line, a block) is undone and run again on the locking path: every
// user locked first, then the edges read and inserted.
func (s *Store) ImportFollows(ctx context.Context, edges [][2]int64) (FollowImport, error) {
	var res FollowImport
	var err error
	for lockFirst := false; ; lockFirst = true {
		err = s.write(ctx, func(tx *sql.Tx) error {
			var err error
			res, err = s.importFollows(ctx, tx, edges, lockFirst)
			return err
		})
		if lockFirst || !errors.Is(err, errLockFirst) {
			break
		}
	}
	if err != nil {
		return FollowImport{}, fmt.Errorf("sqlstore: import %d follows: %w", len(edges), err)
	}
	return res, nil
}

// errLockFirst says a batch of follows left the fast path: it held edges
// that exist, users that are not live, or blocked pairs.
var errLockFirst = errors.New("the batch takes the locking path")

func (s *Store) importFollows(ctx context.Context, tx *sql.Tx, edges [][2]int64, lockFirst bool) (FollowImport, error) {
	res := FollowImport{Outcomes: make([]ImportOutcome, len(edges))}
	users := make([]int64, 0, 2*len(edges))
	for _, e := range edges {
		users = append(users, e[0], e[1])
	}
	slices.Sort(users)
	users = slices.Compact(users)
	live, blocked := map[int64]bool{}, map[pair]bool{}
	if lockFirst {
		var err error
		if live, err = s.liveUsers(ctx, tx, users, s.d.forUpdate); err != nil {
			return res, err
		}
		// Block takes both users' locks: under ours, this read is final.
		if blocked, err = s.blocksAmong(ctx, tx, users, ""); err != nil {
			return res, err
		}
	}
	var want []pair
	for i, e := range edges {
		switch {
		case e[0] == e[1]:
			res.Outcomes[i] = SelfFollow
		case lockFirst && (!live[e[0]] || !live[e[1]]):
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
	// Most batches are all new (a first run) or all there (a re-run): one
	// insert that keeps existing edges tells which by its count of
	// affected rows. On the locking path, where nobody else can add or
	// remove these edges, a batch of both kinds is undone to a savepoint
	// and reads which edges exist first.
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
	case !lockFirst:
		return res, errLockFirst
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
	// Every user whose counts move, in id order.
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
	if !lockFirst {
		locked, err := s.liveUsers(ctx, tx, moved, s.d.forUpdate)
		if err != nil {
			return res, err
		}
		if len(locked) != len(moved) {
			return res, errLockFirst
		}
		// A locking read: it sees every block committed before our
		// locks, whatever this transaction read before.
		if blocked, err = s.blocksAmong(ctx, tx, moved, s.d.forUpdate); err != nil {
			return res, err
		}
		for p := range added {
			if blocked[p] {
				return res, errLockFirst
			}
		}
	}
	args := make([]any, 0, 5*len(moved))
	for _, id := range moved {
		args = append(args, id, "", followers[id], following[id], now)
	}
	for start := 0; start < len(args); start += 5 * importRows {
		chunk := args[start:min(start+5*importRows, len(args))]
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

// liveUsers returns which of users (ascending, without repeats) exist and
// are not deleted, reading with the statement ending lock.
func (s *Store) liveUsers(ctx context.Context, tx *sql.Tx, users []int64, lock string) (map[int64]bool, error) {
	live := make(map[int64]bool, len(users))
	for _, chunk := range idChunks(users) {
		rows, err := tx.QueryContext(ctx, "SELECT id FROM users WHERE id IN ("+placeholders(len(chunk))+") AND deleted_at IS NULL"+lock, chunk...)
		if err != nil {
			return nil, fmt.Errorf("read users: %w", err)
		}
		found, err := scanIDs(rows, len(chunk))
		if err != nil {
			return nil, fmt.Errorf("read users: %w", err)
		}
		for _, id := range found {
			live[id] = true
		}
	}
	return live, nil
}

// blocksAmong returns every pair that a block by one of users forbids to
// follow, both ways, reading with the statement ending lock. Blocks are
// few, so it reads them all and the caller filters.
func (s *Store) blocksAmong(ctx context.Context, tx *sql.Tx, users []int64, lock string) (map[pair]bool, error) {
	blocked := map[pair]bool{}
	for _, chunk := range idChunks(users) {
		rows, err := tx.QueryContext(ctx, "SELECT blocker_id, blocked_id FROM blocks WHERE blocker_id IN ("+placeholders(len(chunk))+")"+lock, chunk...)
		if err != nil {
			return nil, fmt.Errorf("read blocks: %w", err)
		}
		for rows.Next() {
			var p pair
			if err := rows.Scan(&p.a, &p.b); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read blocks: %w", err)
			}
			blocked[p], blocked[pair{p.b, p.a}] = true, true
		}
		if err := closeRows(rows); err != nil {
			return nil, fmt.Errorf("read blocks: %w", err)
		}
	}
	return blocked, nil
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
	Outcomes []ImportOutcome
	// Liked counts the new likes; Deltas is how much each post's like
	// count moved (posts that did not move are left out).
	Liked  int
	Deltas map[int64]int64
	// Users are the users of the valid likes, ascending.
	Users []int64
}

// ImportLikes makes each user like each post unless the pair has a row
// already (a like, or an unlike the user made since, which an import must
// not undo), with exact like counts, also while live likes of the same
// pairs are made (insertLikes, or ApplyLikes for a batch that meets rows
// of some of its pairs). An imported like is versioned at its post's
// creation, so it sorts below every live action of its user, and a
// re-run finds its own rows stored and changes nothing.
func (s *Store) ImportLikes(ctx context.Context, likes [][2]int64) (LikeImport, error) {
	res := LikeImport{Outcomes: make([]ImportOutcome, len(likes))}
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
	deltas, err := s.insertLikes(ctx, evs)
	if errors.Is(err, errMixedLikes) {
		// Some of the pairs have rows and some not (a run cut short, or
		// likes made meanwhile): the batch writer's locking read tells
		// which, under locks that keep live writers of the pairs off.
		deltas, _, err = s.ApplyLikes(ctx, evs)
	}
	if err != nil {
		return res, fmt.Errorf("sqlstore: import likes: %w", err)
	}
	for _, d := range deltas {
		res.Liked += int(d)
	}
	res.Deltas = deltas
	return res, nil
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
// errMixedLikes, with nothing written.
func (s *Store) insertLikes(ctx context.Context, evs []feed.LikeEvent) (map[int64]int64, error) {
	slices.SortFunc(evs, func(a, b feed.LikeEvent) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Post, b.Post))
	})
	// The same pair twice in a batch has the same version: one row.
	evs = slices.CompactFunc(evs, func(a, b feed.LikeEvent) bool { return a.User == b.User && a.Post == b.Post })
	var deltas map[int64]int64
	apply := func(tx *sql.Tx) error {
		deltas = map[int64]int64{}
		var added int64
		for start := 0; start < len(evs); start += importRows {
			chunk := evs[start:min(start+importRows, len(evs))]
			args := make([]any, 0, 3*len(chunk))
			for _, ev := range chunk {
				args = append(args, ev.User, ev.Post, ev.Version)
			}
			res, err := tx.ExecContext(ctx, "INSERT INTO likes (user_id, post_id, liked, version) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, 1, ?), ", len(chunk)), ", ")+s.d.keepLikes, args...)
			if err != nil {
				return fmt.Errorf("insert %d likes: %w", len(chunk), err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			added += n
		}
		switch added {
		case 0:
			return nil
		case int64(len(evs)):
		default:
			return errMixedLikes
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
			if _, err := tx.ExecContext(ctx, "INSERT INTO post_stats (post_id, like_count, updated_at) VALUES "+
				strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(chunk)), ", ")+s.d.upsertStats, args...); err != nil {
				return fmt.Errorf("move %d like counts: %w", len(chunk), err)
			}
		}
		return nil
	}
	var err error
	for round := 0; round < 4; round++ {
		if err = s.write(ctx, apply); err == nil || !s.d.retryable(err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return deltas, nil
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

// insertEdges inserts edges created at now, with the statement ending
// onDup, and returns how many rows it added.
func insertEdges(ctx context.Context, tx *sql.Tx, edges []pair, now int64, onDup string) (int64, error) {
	var added int64
	for start := 0; start < len(edges); start += importRows {
		chunk := edges[start:min(start+importRows, len(edges))]
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
