package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// CreatePost stores p (ID, AuthorID, Content and CreatedAt chosen by the
// caller) and, in the same transaction, the outbox event that announces it,
// and reports created=true.
//
// A non-empty idem.Key makes the call idempotent per author (see
// feed.Idempotency): the key is recorded in the same transaction, with
// idem.Fingerprint and an expiry idem.TTL from now. When the key is
// recorded and has not expired, nothing is written and the answer is the
// first call's: its post with created=false when the fingerprints match
// (or the key predates fingerprints), EKEYREUSED when they differ,
// ENOTFOUND when the post was deleted since. An expired key is taken over
// as if new.
//
// A twin that arrives while the first call's transaction is open waits for
// it on the key's row (MySQL's row lock, SQLite's single writer), then
// answers as above, or as a new call if the first rolled back: concurrent
// identical calls make one post. Only a wait cut short by the database
// (MySQL's innodb_lock_wait_timeout) is EKEYINFLIGHT.
//
// A post id that exists already is ECONFLICT: the caller retries with a
// fresh id. An incomplete idem (idem.Check) is EINVALID.
func (s *Store) CreatePost(ctx context.Context, p feed.Post, idem feed.Idempotency) (feed.Post, bool, error) {
	p, created, _, err := s.CreatePostOn(ctx, Shard{}, p, idem)
	return p, created, err
}

// CreatePostOn is CreatePost on shard home of a sharded deployment. A
// reply (p.InReplyToID set) is checked and indexed in the same
// transaction (checkReply, indexReply): when its parent lives on another shard, the
// caller has checked that the parent lives and set p.InReplyToAuthorID,
// and syncs is the journal's row for the parent's shard (mirror.go),
// which the caller settles.
func (s *Store) CreatePostOn(ctx context.Context, home Shard, p feed.Post, idem feed.Idempotency) (_ feed.Post, _ bool, syncs []Sync, _ error) {
	if !feed.ValidPostID(p.ID) || p.AuthorID <= 0 {
		return feed.Post{}, false, nil, fmt.Errorf("sqlstore: create post %d: %w", p.ID,
			feed.Errorf(feed.EINVALID, "post id %d must be a post id (feed.ValidPostID) and author id %d positive", p.ID, p.AuthorID))
	}
	if err := idem.Check(); err != nil {
		return feed.Post{}, false, nil, fmt.Errorf("sqlstore: create post %d: %w", p.ID, err)
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now()
	}
	p.CreatedAt = fromMillis(millis(p.CreatedAt))
	p.Deleted, p.EditedAt = false, time.Time{}
	payload := feed.PostCreated(ctx, p.ID, p.AuthorID).Encode()

	// takeOver: the key's record was seen expired, so this attempt
	// replaces it rather than inserting one.
	takeOver := false
	for attempt := 1; ; attempt++ {
		now := millis(time.Now())
		err := s.write(ctx, func(tx *sql.Tx) error {
			syncs = nil
			if idem.Key != "" {
				// First, so that a replay writes nothing and a concurrent
				// twin waits here on the key's row lock.
				if err := s.claimKey(ctx, tx, p, idem, now, takeOver); err != nil {
					return err
				}
			}
			if err := s.checkReply(ctx, tx, home, &p); err != nil {
				return err
			}
			if err := s.checkRepost(ctx, tx, home, &p); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx,
				"INSERT INTO posts (id, author_id, content, created_at, deleted_at, data, external_id, weight, in_reply_to_id, in_reply_to_author_id, repost_of_id, repost_of_author_id) VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?)",
				p.ID, p.AuthorID, p.Content, millis(p.CreatedAt), nullData(p.Data), nullData(p.ExternalID), nullWeight(p.Weight),
				nullID(p.InReplyToID), nullID(p.InReplyToAuthorID), nullID(p.RepostOfID), nullID(p.RepostOfAuthorID))
			if s.d.duplicate(err) {
				return errDuplicatePost
			}
			if err != nil {
				return err
			}
			if syncs, err = s.indexReply(ctx, tx, home, p); err != nil {
				return err
			}
			if syncs, err = s.indexRepost(ctx, tx, home, p, syncs); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, "INSERT INTO outbox (payload, created_at, sent_at) VALUES (?, ?, NULL)", payload, now)
			return err
		})
		if err == nil {
			return p, true, syncs, nil
		}
		if errors.Is(err, errDuplicatePost) {
			err = s.whichDuplicate(ctx, p)
		}
		if !errors.Is(err, errReplay) {
			return feed.Post{}, false, nil, fmt.Errorf("sqlstore: create post %d by %d: %w", p.ID, p.AuthorID, err)
		}
		rec, err := s.keyRecord(ctx, p.AuthorID, idem.Key)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Swept, or its first call rolled back: the key is new.
			takeOver = false
		case err != nil:
			return feed.Post{}, false, nil, fmt.Errorf("sqlstore: create post %d by %d: replay key: %w", p.ID, p.AuthorID, err)
		case rec.expiresAt <= millis(time.Now()):
			takeOver = true
		default:
			prev, err := rec.answer(idem)
			if err != nil {
				return feed.Post{}, false, nil, fmt.Errorf("sqlstore: create post by %d: replay key: %w", p.AuthorID, err)
			}
			return prev, false, nil, nil
		}
		if attempt == keyAttempts {
			return feed.Post{}, false, nil, fmt.Errorf("sqlstore: create post %d by %d: %w", p.ID, p.AuthorID, errKeyInFlight)
		}
	}
}

// errDuplicatePost ends a CreatePost transaction whose post collided
// with another: on its id or on its author's external id.
var errDuplicatePost = errors.New("duplicate post")

// whichDuplicate says which of p's keys another post holds: its external
// id (feed.ExternalIDExistsError, with the other post's id) or else its
// id (ECONFLICT, for the caller to retry with a fresh one). It reads
// after the failed transaction rolled back, from the primary: the other
// post is committed (an insert waits for a conflicting one in flight), and
// posts are never removed but by a user's purge.
func (s *Store) whichDuplicate(ctx context.Context, p feed.Post) error {
	if p.ExternalID != "" {
		other, err := s.PostByExternalID(ctx, p.AuthorID, p.ExternalID)
		switch {
		case err == nil && other.ID != p.ID:
			return &feed.ExternalIDExistsError{PostID: other.ID, ExternalID: p.ExternalID}
		case err != nil && feed.ErrorCode(err) != feed.ENOTFOUND:
			return err
		}
	}
	return feed.Errorf(feed.ECONFLICT, "post id %d is taken", p.ID)
}

// PostByExternalID returns author's post with external id ext, a deleted
// one as a tombstone that keeps its ID and ExternalID (the external id
// stays taken). None is ENOTFOUND. It reads the primary, so that a caller
// that just wrote sees its write.
func (s *Store) PostByExternalID(ctx context.Context, author int64, ext string) (feed.Post, error) {
	p, err := scanPost(s.db.QueryRowContext(ctx, "SELECT "+postColumns+
		" FROM posts WHERE author_id = ? AND external_id = ?", author, ext))
	if errors.Is(err, sql.ErrNoRows) {
		err = feed.Errorf(feed.ENOTFOUND, "user %d has no post with external id %q", author, ext)
	}
	if err != nil {
		return feed.Post{}, fmt.Errorf("sqlstore: post of %d by external id: %w", author, err)
	}
	return p, nil
}

const postColumns = "id, author_id, content, created_at, deleted_at, data, edited_at, external_id, weight, in_reply_to_id, in_reply_to_author_id, repost_of_id, repost_of_author_id"

func postColumnsOf(alias string) string {
	return alias + ".id, " + alias + ".author_id, " + alias + ".content, " + alias + ".created_at, " +
		alias + ".deleted_at, " + alias + ".data, " + alias + ".edited_at, " + alias + ".external_id, " + alias + ".weight, " +
		alias + ".in_reply_to_id, " + alias + ".in_reply_to_author_id, " + alias + ".repost_of_id, " + alias + ".repost_of_author_id"
}

// nullID is a reply's parent or parent author as a query argument: NULL
// for a post that answers none.
func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// nullWeight is a post's weight as a query argument: NULL for the default,
// so that most rows store nothing (migration 0017).
func nullWeight(w feed.Weight) any {
	if w.IsDefault() {
		return nil
	}
	return w.Value()
}

// nullData is a post's data or external id as a query argument: NULL for
// none.
func nullData(data string) any {
	if data == "" {
		return nil
	}
	return data
}

// scanPost reads a post. A deleted post comes back as a tombstone, without
// its content and data, so that no caller can show it by forgetting to
// look at Deleted; it keeps its external id, which stays taken.
func scanPost(r scanner) (feed.Post, error) {
	var p feed.Post
	var created int64
	var deleted, edited sql.NullInt64
	var data, ext sql.NullString
	var weight sql.NullFloat64
	var parent, parentAuthor, original, originalAuthor sql.NullInt64
	if err := r.Scan(&p.ID, &p.AuthorID, &p.Content, &created, &deleted, &data, &edited, &ext, &weight, &parent, &parentAuthor, &original, &originalAuthor); err != nil {
		return feed.Post{}, err
	}
	p.InReplyToID, p.InReplyToAuthorID = parent.Int64, parentAuthor.Int64
	p.RepostOfID, p.RepostOfAuthorID = original.Int64, originalAuthor.Int64
	if weight.Valid {
		p.Weight = feed.WeightOf(weight.Float64)
	}
	p.CreatedAt = fromMillis(created)
	if edited.Valid {
		p.EditedAt = fromMillis(edited.Int64)
	}
	p.Data, p.ExternalID = data.String, ext.String
	if deleted.Valid {
		p.Deleted, p.Content, p.Data = true, "", ""
	}
	return p, nil
}

// Post returns one post; a deleted one is a tombstone with Deleted set. An
// unknown id is ENOTFOUND.
func (s *Store) Post(ctx context.Context, id int64) (feed.Post, error) {
	p, err := scanPost(s.rdb.QueryRowContext(ctx, "SELECT "+postColumns+" FROM posts WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	if err != nil {
		return feed.Post{}, fmt.Errorf("sqlstore: post %d: %w", id, err)
	}
	return p, nil
}

// Posts returns the posts among ids that exist, deleted ones as tombstones,
// with one query per chunk of ids.
func (s *Store) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	posts := make(map[int64]feed.Post, len(ids))
	for _, chunk := range chunks(ids) {
		err := s.fromReplica(ctx, func(db *sql.DB) error {
			rows, err := db.QueryContext(ctx,
				"SELECT "+postColumns+" FROM posts WHERE id IN ("+placeholders(len(chunk))+")", chunk...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				p, err := scanPost(rows)
				if err != nil {
					return err
				}
				posts[p.ID] = p
			}
			return rows.Err()
		})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: posts (%d ids): %w", len(ids), err)
		}
	}
	if s.lag != nil && len(posts) < len(ids) {
		// A post the replica does not have yet may be one just published:
		// its absence must not read as a deletion (a reader's page would
		// drop it from the inbox or author list it came from). The
		// primary answers for the misses, which are rare.
		var missing []int64
		for _, id := range ids {
			if _, ok := posts[id]; !ok {
				missing = append(missing, id)
			}
		}
		for _, chunk := range chunks(missing) {
			rows, err := s.db.QueryContext(ctx, "SELECT "+postColumns+" FROM posts WHERE id IN ("+placeholders(len(chunk))+")", chunk...)
			if err != nil {
				return nil, fmt.Errorf("sqlstore: posts (%d ids) from the primary: %w", len(missing), err)
			}
			found, err := scanPosts(rows, nil, len(chunk))
			if err != nil {
				return nil, fmt.Errorf("sqlstore: posts (%d ids) from the primary: %w", len(missing), err)
			}
			for _, p := range found {
				posts[p.ID] = p
			}
		}
	}
	return posts, nil
}

// DeletePost soft-deletes post id on behalf of author. An unknown or
// already deleted post is ENOTFOUND, someone else's is EFORBIDDEN, in that
// order, so that nobody learns which deleted ids existed. A reply leaves
// its parent's replies index and count in the same transaction.
func (s *Store) DeletePost(ctx context.Context, id, author int64) error {
	_, err := s.DeletePostOn(ctx, Shard{}, id, author)
	return err
}

// DeletePostOn is DeletePost on shard home of a sharded deployment: a
// reply whose parent lives on another shard journals the sync of the
// parent's index instead, which the caller settles.
func (s *Store) DeletePostOn(ctx context.Context, home Shard, id, author int64) ([]Sync, error) {
	var syncs []Sync
	err := s.write(ctx, func(tx *sql.Tx) error {
		syncs = nil
		var parent, original sql.NullInt64
		err := tx.QueryRowContext(ctx, "SELECT in_reply_to_id, repost_of_id FROM posts WHERE id = ? AND author_id = ? AND deleted_at IS NULL"+s.d.forUpdate,
			id, author).Scan(&parent, &original)
		if errors.Is(err, sql.ErrNoRows) {
			return errNotAuthor
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE posts SET deleted_at = ? WHERE id = ?", millis(time.Now()), id); err != nil {
			return err
		}
		if original.Int64 != 0 {
			syncs, err = s.unindexRepost(ctx, tx, home, id, author, original.Int64)
			return err
		}
		if !parent.Valid || parent.Int64 == 0 {
			return nil
		}
		syncs, err = s.remove(ctx, tx, home, replyIndex, id, parent.Int64)
		return err
	})
	if errors.Is(err, errNotAuthor) {
		err = s.whyNotAuthor(ctx, id, author, "delete")
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: delete post %d: %w", id, err)
	}
	return syncs, nil
}

// whyNotAuthor says why an update of post id by author matched no row:
// ENOTFOUND for an unknown or deleted post, EFORBIDDEN for someone else's.
// A post is never undeleted nor changes author, so this read cannot
// contradict the update.
func (s *Store) whyNotAuthor(ctx context.Context, id, author int64, verb string) error {
	p, err := s.Post(ctx, id)
	switch {
	case err != nil:
		return err
	case p.Deleted:
		return feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	case p.AuthorID != author:
		return feed.Errorf(feed.EFORBIDDEN, "only its author can %s post %d", verb, id)
	}
	return errors.New("the update matched nothing")
}

// errNotAuthor ends an EditPost transaction whose update matched no row.
var errNotAuthor = errors.New("not the author of a live post")

// EditPost applies e to post id on behalf of author and returns the post
// as it now is. An edit of content or data sets EditedAt to now, or to the
// previous edit's time plus a millisecond if that is later (two edits
// within a millisecond, or a clock stepping back): every such edit has a
// higher version than the last (feed.Post.Version), so that the caches
// keep the newest. A change of weight alone keeps the version. An unknown or
// deleted post is ENOTFOUND, someone else's EFORBIDDEN, as for DeletePost.
// The caller has validated e (feed.CheckContent, feed.CheckData).
func (s *Store) EditPost(ctx context.Context, id, author int64, e feed.PostEdit) (feed.Post, error) {
	if err := e.Check(); err != nil {
		// An empty SET: the API refuses such an edit before it gets here.
		return feed.Post{}, fmt.Errorf("sqlstore: edit post %d: %w", id, err)
	}
	var set []string
	var args []any
	if e.Content != nil {
		set = append(set, "content = ?")
		args = append(args, *e.Content)
	}
	if e.SetData {
		set = append(set, "data = ?")
		args = append(args, nullData(e.Data))
	}
	if e.Weight != nil {
		set = append(set, "weight = ?")
		args = append(args, nullWeight(*e.Weight))
	}
	if e.Content != nil || e.SetData {
		// What readers see changed: a new version. A weight alone is the
		// application's, which readers never see, so it leaves the post
		// unedited (and its version, which the caches' copies keep: an
		// equal version replaces a cached copy).
		now := millis(time.Now())
		set = append(set, "edited_at = CASE WHEN edited_at >= ? THEN edited_at + 1 ELSE ? END")
		args = append(args, now, now)
	}
	args = append(args, id, author)

	var p feed.Post
	var err error
	if s.d.updateReturning {
		p, err = scanPost(s.db.QueryRowContext(ctx, "UPDATE posts SET "+strings.Join(set, ", ")+
			" WHERE id = ? AND author_id = ? AND deleted_at IS NULL RETURNING "+postColumns, args...))
		if errors.Is(err, sql.ErrNoRows) {
			err = errNotAuthor
		}
	} else {
		err = s.editInTx(ctx, id, author, strings.Join(set, ", "), args, &p)
	}
	if errors.Is(err, errNotAuthor) {
		err = s.whyNotAuthor(ctx, id, author, "edit")
	}
	if err != nil {
		return feed.Post{}, fmt.Errorf("sqlstore: edit post %d: %w", id, err)
	}
	return p, nil
}

// editInTx is EditPost where UPDATE returns nothing (MySQL): the update and
// the read of what it wrote, in one transaction.
func (s *Store) editInTx(ctx context.Context, id, author int64, set string, args []any, p *feed.Post) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE posts SET "+set+
			" WHERE id = ? AND author_id = ? AND deleted_at IS NULL", args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		// In the transaction, under the update's row lock: exactly the
		// version this edit wrote.
		*p, err = scanPost(tx.QueryRowContext(ctx, "SELECT "+postColumns+" FROM posts WHERE id = ?", id))
		// MySQL counts changed rows only: a weight set to the weight the
		// post has matches its row and changes nothing (an edit of content
		// or data always changes edited_at).
		if errors.Is(err, sql.ErrNoRows) || n != 1 && err == nil && (p.Deleted || p.AuthorID != author) {
			return errNotAuthor
		}
		return err
	})
}

// AuthorPosts returns up to n of author's posts below before (0: from the
// newest), newest first, deleted ones left out.
func (s *Store) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, error) {
	if n <= 0 {
		return []feed.Post{}, nil
	}
	var posts []feed.Post
	err := s.fromReplica(ctx, func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, "SELECT "+postColumns+` FROM posts
			WHERE author_id = ? AND id < ? AND deleted_at IS NULL ORDER BY id DESC LIMIT ?`,
			author, upperBound(before), n)
		posts, err = scanPosts(rows, err, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: posts of %d before %d: %w", author, before, err)
	}
	return posts, nil
}

// scanPosts reads the posts of a query that returned rows and err, sized
// for n, and closes rows.
func scanPosts(rows *sql.Rows, err error, n int) ([]feed.Post, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	posts := make([]feed.Post, 0, min(n, 256))
	for rows.Next() {
		p, err := scanPost(rows)
		if err != nil {
			return nil, err
		}
		posts = append(posts, p)
	}
	return posts, rows.Err()
}

// AuthorPostIDs returns up to n ids of author's posts with after < id <
// before (0: no bound; posts from before 2025 have negative ids), newest
// first, deleted ones left out.
func (s *Store) AuthorPostIDs(ctx context.Context, author, after, before int64, n int) ([]int64, error) {
	if n <= 0 {
		return []int64{}, nil
	}
	ids, err := s.queryIDs(ctx, n, `SELECT id FROM posts
		WHERE author_id = ? AND id > ? AND id < ? AND deleted_at IS NULL ORDER BY id DESC LIMIT ?`,
		author, lowerBound(after), upperBound(before), n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: post ids of %d in (%d, %d): %w", author, after, before, err)
	}
	return ids, nil
}

// upperBound turns an exclusive upper bound where 0 means none into one
// SQL can compare with. Only 0 is none: a post from before 2025 has a
// negative id, and a page below it has a negative bound.
func upperBound(before int64) int64 {
	if before == 0 {
		return math.MaxInt64
	}
	return before
}

// lowerBound is upperBound for an exclusive lower bound: 0 means none,
// which takes in the negative ids of posts from before 2025.
func lowerBound(after int64) int64 {
	if after == 0 {
		return math.MinInt64
	}
	return after
}
