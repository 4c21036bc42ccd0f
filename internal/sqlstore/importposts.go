package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

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
func (s *Store) ImportPosts(ctx context.Context, posts []feed.Post) ([]feed.ImportResult, error) {
	out := make([]feed.ImportResult, 0, len(posts))
	for start := 0; start < len(posts); start += importPostsPerTx {
		chunk := posts[start:min(start+importPostsPerTx, len(posts))]
		for _, p := range chunk {
			if !feed.ValidPostID(p.ID) || p.AuthorID <= 0 || p.ExternalID == "" {
				return out, fmt.Errorf("sqlstore: import posts: %w", feed.Errorf(feed.EINVALID,
					"post %d by %d: an imported post has a post id (feed.ValidPostID), a positive author id and an external id", p.ID, p.AuthorID))
			}
		}
		var res []feed.ImportResult
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
func (s *Store) importChunk(ctx context.Context, tx *sql.Tx, chunk []feed.Post) ([]feed.ImportResult, error) {
	keys := make([]feed.ExternalKey, len(chunk))
	ids := make([]any, len(chunk))
	for i, p := range chunk {
		keys[i], ids[i] = feed.ExternalKey{AuthorID: p.AuthorID, ExternalID: p.ExternalID}, p.ID
	}
	// Ids first, external ids second: under read committed (PostgreSQL's
	// default) each statement sees what committed before it, so a
	// racing import's post that appears between the two is seen by the
	// second, and answers "exists", not "id taken".
	rows, err := tx.QueryContext(ctx, "SELECT id FROM posts WHERE id IN ("+placeholders(len(ids))+")", ids...)
	if err != nil {
		return nil, err
	}
	found, err := scanIDs(rows, len(ids))
	if err != nil {
		return nil, err
	}
	byKey, err := externalIDsIn(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	taken := make(map[int64]bool, len(found))
	for _, id := range found {
		taken[id] = true
	}

	res := make([]feed.ImportResult, len(chunk))
	var values []string
	var args []any
	now := millis(time.Now())
	for i, p := range chunk {
		switch existing, ok := byKey[keys[i]]; {
		case ok:
			res[i] = feed.ImportResult{Outcome: feed.ExternalIDExists, ExistingID: existing}
			continue
		case taken[p.ID]:
			res[i] = feed.ImportResult{Outcome: feed.IDTaken}
			continue
		}
		// Later posts of the chunk see this one, as they would see it
		// stored by an earlier call.
		byKey[keys[i]], taken[p.ID] = p.ID, true
		created := p.CreatedAt
		if created.IsZero() {
			created = fromMillis(now)
		}
		values = append(values, "(?, ?, ?, ?, NULL, ?, ?, ?)")
		args = append(args, p.ID, p.AuthorID, p.Content, millis(created), nullData(p.Data), p.ExternalID, nullWeight(p.Weight))
	}
	if len(values) == 0 {
		return res, nil
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO posts (id, author_id, content, created_at, deleted_at, data, external_id, weight) VALUES "+
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
}, keys []feed.ExternalKey) (map[feed.ExternalKey]int64, error) {
	ids := make(map[feed.ExternalKey]int64, len(keys))
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
				var k feed.ExternalKey
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

// PostIDsByExternalID returns the ids of the posts among keys that exist,
// deleted ones included, with one query per chunk of keys, from the
// primary: how an import finds which of a batch it made before.
func (s *Store) PostIDsByExternalID(ctx context.Context, keys []feed.ExternalKey) (map[feed.ExternalKey]int64, error) {
	ids, err := externalIDsIn(ctx, s.db, keys)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: post ids by external id (%d keys): %w", len(keys), err)
	}
	return ids, nil
}
