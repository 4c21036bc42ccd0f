package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// errReplay ends a CreatePost transaction whose idempotency key is taken.
var errReplay = errors.New("idempotency key already used")

// keyAttempts bounds CreatePost's rounds of finding its idempotency key
// taken, then gone (swept, or its first request rolled back) or expired
// and taken over by a twin: each round is another request racing for the
// key, so giving up says "in flight".
const keyAttempts = 4

var errKeyInFlight = feed.Errorf(feed.EKEYINFLIGHT, "a request with this idempotency key is still being processed; retry shortly")

// claimKey records idem's key for p in tx: a new row, or with takeOver the
// expired row's replacement. errReplay means the key is someone's: a
// committed row (a new one), or a row that is no longer expired.
func (s *Store) claimKey(ctx context.Context, tx *sql.Tx, p feed.Post, idem feed.Idempotency, now int64, takeOver bool) error {
	expires := now + idem.TTL.Milliseconds()
	var res sql.Result
	var err error
	if takeOver {
		// Only while it is expired: of two calls taking it over, the
		// second waits for the first's row lock, then matches nothing.
		res, err = tx.ExecContext(ctx, "UPDATE idempotency SET post_id = ?, fingerprint = ?, created_at = ?, expires_at = ?"+
			" WHERE author_id = ? AND idem_key = ? AND expires_at <= ?",
			p.ID, idem.Fingerprint, now, expires, p.AuthorID, idem.Key, now)
	} else {
		res, err = tx.ExecContext(ctx, "INSERT INTO idempotency (author_id, idem_key, post_id, fingerprint, created_at, expires_at)"+
			" VALUES (?, ?, ?, ?, ?, ?)", p.AuthorID, idem.Key, p.ID, idem.Fingerprint, now, expires)
	}
	switch {
	case s.d.duplicate(err):
		return errReplay
	case s.d.lockWaitTimeout(err):
		return errKeyInFlight
	case err != nil:
		return err
	}
	if takeOver {
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return errReplay
		}
	}
	return nil
}

// keyRec is an idempotency key's record and its post.
type keyRec struct {
	fingerprint []byte // nil: recorded before fingerprints were
	expiresAt   int64
	post        feed.Post
}

func (s *Store) keyRecord(ctx context.Context, author int64, key string) (keyRec, error) {
	var rec keyRec
	row := s.rdb.QueryRowContext(ctx, "SELECT i.fingerprint, i.expires_at, "+postColumnsOf("p")+
		" FROM idempotency i JOIN posts p ON p.id = i.post_id WHERE i.author_id = ? AND i.idem_key = ?", author, key)
	var err error
	rec.post, err = scanPost(scanAfter{row, []any{&rec.fingerprint, &rec.expiresAt}})
	return rec, err
}

// scanAfter scans a row's first columns into first, the rest into what
// Scan is given: the post of a row that carries more than a post.
type scanAfter struct {
	r     scanner
	first []any
}

func (s scanAfter) Scan(dest ...any) error { return s.r.Scan(append(s.first, dest...)...) }

// answer is what a repeat with idem gets from a live record.
func (rec keyRec) answer(idem feed.Idempotency) (feed.Post, error) {
	switch {
	case rec.fingerprint != nil && !bytes.Equal(rec.fingerprint, idem.Fingerprint):
		return feed.Post{}, feed.Errorf(feed.EKEYREUSED,
			"this idempotency key was first used with a different request; a new request needs a new key")
	case rec.post.Deleted:
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d, created with this idempotency key, was deleted", rec.post.ID)
	}
	return rec.post, nil
}

// SweepIdempotencyKeys deletes the idempotency keys expired at now, at
// most sweepChunk per statement, and returns how many it deleted.
func (s *Store) SweepIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	cutoff := millis(now)
	for {
		// Two statements per chunk, as in SweepOutbox. The delete checks
		// the expiry again: a key taken over meanwhile is kept.
		keys, err := s.expiredKeys(ctx, cutoff)
		if err != nil {
			return total, fmt.Errorf("sqlstore: sweep idempotency keys: %w", err)
		}
		if len(keys) == 0 {
			return total, nil
		}
		args := make([]any, 0, 1+2*len(keys))
		args = append(args, cutoff)
		for _, k := range keys {
			args = append(args, k.author, k.key)
		}
		res, err := s.db.ExecContext(ctx, "DELETE FROM idempotency WHERE expires_at <= ? AND (author_id, idem_key) IN ("+
			strings.TrimSuffix(strings.Repeat("(?, ?), ", len(keys)), ", ")+")", args...)
		if err != nil {
			return total, fmt.Errorf("sqlstore: sweep idempotency keys: %w", err)
		}
		deleted, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("sqlstore: sweep idempotency keys: %w", err)
		}
		total += deleted
		// deleted == 0: every key was taken over meanwhile; stop rather
		// than read them again.
		if len(keys) < sweepChunk || deleted == 0 {
			return total, nil
		}
	}
}

type authorKey struct {
	author int64
	key    string
}

// expiredKeys returns up to sweepChunk keys expired at cutoff, oldest
// first, along idempotency_expires.
func (s *Store) expiredKeys(ctx context.Context, cutoff int64) ([]authorKey, error) {
	rows, err := s.rdb.QueryContext(ctx,
		"SELECT author_id, idem_key FROM idempotency WHERE expires_at <= ? ORDER BY expires_at LIMIT ?", cutoff, sweepChunk)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []authorKey
	for rows.Next() {
		var k authorKey
		if err := rows.Scan(&k.author, &k.key); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
