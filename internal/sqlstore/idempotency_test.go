package sqlstore

import (
	"crypto/sha256"
	"database/sql"
	"io/fs"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// idemKey is key with the fingerprint of a request whose canonical form
// is body, kept an hour.
func idemKey(key, body string) feed.Idempotency {
	sum := sha256.Sum256([]byte(body))
	return feed.Idempotency{Key: key, Fingerprint: sum[:], TTL: time.Hour}
}

// createWith creates post id by author with content under idem.
func createWith(t *testing.T, s *Store, id, author int64, content string, idem feed.Idempotency) (feed.Post, bool, error) {
	t.Helper()
	return s.CreatePost(t.Context(), feed.Post{ID: id, AuthorID: author, Content: content, CreatedAt: time.Now()}, idem)
}

// wantNoPost fails t if post id exists.
func wantNoPost(t *testing.T, s *Store, id int64) {
	t.Helper()
	if _, err := s.Post(t.Context(), id); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("Post(%d): got %v; want not found", id, err)
	}
}

func testIdempotency(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)

	first, created, err := createWith(t, s, 10, 1, "once", idemKey("key-A", "once"))
	if err != nil || !created {
		t.Fatalf("CreatePost: got %v, %v; want created", created, err)
	}
	// A retry carries a fresh id and the same request: the first post.
	again, created, err := createWith(t, s, 11, 1, "once", idemKey("key-A", "once"))
	if err != nil || created || again != first {
		t.Fatalf("CreatePost replay: got %+v, created %v, %v; want %+v, false", again, created, err, first)
	}
	wantNoPost(t, s, 11)
	// The same key with another request is refused, and writes nothing.
	_, created, err = createWith(t, s, 12, 1, "twice", idemKey("key-A", "twice"))
	wantCode(t, err, feed.EKEYREUSED)
	if created {
		t.Fatal("CreatePost with a reused key: got created true")
	}
	wantNoPost(t, s, 12)
	if n, err := s.OutboxBacklog(ctx); err != nil || n != 1 {
		t.Fatalf("OutboxBacklog: got %d, %v; want 1", n, err)
	}

	// Keys are per author and exact.
	for _, c := range []struct {
		id, author int64
		key        string
	}{{13, 2, "key-A"}, {14, 1, "key-a"}, {15, 1, "key-A "}, {16, 1, ""}, {17, 1, ""}} {
		idem := feed.Idempotency{}
		if c.key != "" {
			idem = idemKey(c.key, "twice")
		}
		if _, created, err := createWith(t, s, c.id, c.author, "twice", idem); err != nil || !created {
			t.Fatalf("CreatePost(%d, author %d, key %q): got created %v, %v; want true", c.id, c.author, c.key, created, err)
		}
	}

	// A deleted post is not found through its key, never a tombstone;
	// another request with the key is still a reuse.
	if _, created, err := createWith(t, s, 20, 1, "gone", idemKey("key-D", "gone")); err != nil || !created {
		t.Fatalf("CreatePost(20): got created %v, %v; want true", created, err)
	}
	if err := s.DeletePost(ctx, 20, 1); err != nil {
		t.Fatalf("DeletePost(20): %v", err)
	}
	_, _, err = createWith(t, s, 21, 1, "gone", idemKey("key-D", "gone"))
	wantCode(t, err, feed.ENOTFOUND)
	_, _, err = createWith(t, s, 22, 1, "other", idemKey("key-D", "other"))
	wantCode(t, err, feed.EKEYREUSED)
	wantNoPost(t, s, 21)
	wantNoPost(t, s, 22)

	// Incomplete idempotency is a bug of the caller's.
	for _, idem := range []feed.Idempotency{
		{Key: "k", TTL: time.Hour},
		{Key: "k", Fingerprint: []byte("short"), TTL: time.Hour},
		{Key: "k", Fingerprint: idemKey("k", "").Fingerprint},
	} {
		_, _, err = createWith(t, s, 30, 1, "x", idem)
		wantCode(t, err, feed.EINVALID)
	}
	wantNoPost(t, s, 30)
}

// testIdempotencyRace: ten requests with one key at once, half of them
// with one body and half with another. The first to commit wins: its
// twins get its post, the others EKEYREUSED; one post, one event.
func testIdempotencyRace(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	const author = 2
	mustUsers(t, s, author)
	results := make([]feed.Post, 10)
	errs := make([]error, len(results))
	var createdN atomic.Int64
	var wg sync.WaitGroup
	body := func(i int) string { return []string{"same", "other"}[i%2] }
	for i := range results {
		wg.Go(func() {
			p, created, err := createWith(t, s, int64(100+i), author, body(i), idemKey("key-B", body(i)))
			results[i], errs[i] = p, err
			if created {
				createdN.Add(1)
			}
		})
	}
	wg.Wait()
	if got := createdN.Load(); got != 1 {
		t.Fatalf("concurrent CreatePost: got %d created; want 1", got)
	}
	var winner feed.Post
	for i, err := range errs {
		if err == nil {
			winner = results[i]
		}
	}
	for i, err := range errs {
		switch {
		case body(i) == winner.Content && (err != nil || results[i] != winner):
			t.Fatalf("request %d (%q): got %+v, %v; want the winner %+v", i, body(i), results[i], err, winner)
		case body(i) != winner.Content && feed.ErrorCode(err) != feed.EKEYREUSED:
			t.Fatalf("request %d (%q): got %+v, %v; want %s", i, body(i), results[i], err, feed.EKEYREUSED)
		}
	}
	ids, err := s.AuthorPostIDs(ctx, author, 99, 110, 100)
	wantIDs(t, "AuthorPostIDs after the race", ids, err, []int64{winner.ID})
	if evs := drainOutbox(t, s); len(evs) != 1 || evs[0].PostID != winner.ID {
		t.Fatalf("outbox events of the race: got %+v; want one, of post %d", evs, winner.ID)
	}
}

// testIdempotencyInFlight: a request whose key another transaction holds
// waits for it, then answers as if it came after: the first's post when
// the first commits, a post of its own when the first rolls back. On
// MySQL a wait the server cuts short is EKEYINFLIGHT.
func testIdempotencyInFlight(t *testing.T, e *env) {
	ctx := t.Context()
	db := e.newDB(t)
	s := db.open(t)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	mustUsers(t, s, 1)
	// The first request, by hand, as another process would be doing it.
	other := db.open(t)
	holdKey := func(key string, postID int64) *sql.Tx {
		t.Helper()
		tx, err := other.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		idem := idemKey(key, "body")
		if _, err := tx.ExecContext(ctx, "INSERT INTO idempotency (author_id, idem_key, post_id, fingerprint, created_at, expires_at)"+
			" VALUES (1, ?, ?, ?, 0, ?)", key, postID, idem.Fingerprint, millis(time.Now().Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO posts (id, author_id, content, created_at) VALUES (?, 1, 'body', 0)", postID); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	type result struct {
		p       feed.Post
		created bool
		err     error
	}
	twin := func(id int64, key string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			p, created, err := s.CreatePost(ctx, feed.Post{ID: id, AuthorID: 1, Content: "body", CreatedAt: time.Now()}, idemKey(key, "body"))
			ch <- result{p, created, err}
		}()
		return ch
	}
	waiting := func(ch <-chan result) {
		t.Helper()
		select {
		case r := <-ch:
			t.Fatalf("CreatePost returned %+v while the key's first transaction was open; want it to wait", r)
		case <-time.After(200 * time.Millisecond):
		}
	}

	tx := holdKey("k-commit", 1)
	ch := twin(2, "k-commit")
	waiting(ch)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.err != nil || r.created || r.p.ID != 1 {
		t.Fatalf("CreatePost after the first committed: got %+v; want post 1, not created", r)
	}

	tx = holdKey("k-rollback", 3)
	ch = twin(4, "k-rollback")
	waiting(ch)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.err != nil || !r.created || r.p.ID != 4 {
		t.Fatalf("CreatePost after the first rolled back: got %+v; want post 4 created", r)
	}

	if e.backend != "mysql" {
		return // SQLite's writers queue; the wait ends with the first
	}
	// One connection, so the session's timeout is the store's.
	s.DB().SetMaxOpenConns(1)
	if _, err := s.DB().ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	tx = holdKey("k-stuck", 5)
	defer tx.Rollback()
	r := <-twin(6, "k-stuck")
	wantCode(t, r.err, feed.EKEYINFLIGHT)
	wantNoPost(t, s, 6)
}

func testIdempotencyExpiry(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1)
	expire := func(key string) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, "UPDATE idempotency SET expires_at = ? WHERE idem_key = ?",
			millis(time.Now())-1, key); err != nil {
			t.Fatal(err)
		}
	}
	// A key lives TTL from its first use.
	before := time.Now()
	if _, created, err := createWith(t, s, 1, 1, "a", feed.Idempotency{Key: "k", Fingerprint: idemKey("", "a").Fingerprint, TTL: 90 * time.Minute}); err != nil || !created {
		t.Fatalf("CreatePost(1): got %v, %v; want created", created, err)
	}
	var expires int64
	if err := s.DB().QueryRowContext(ctx, "SELECT expires_at FROM idempotency WHERE idem_key = 'k'").Scan(&expires); err != nil {
		t.Fatal(err)
	}
	if lo, hi := millis(before.Add(90*time.Minute)), millis(time.Now().Add(90*time.Minute)); expires < lo || expires > hi {
		t.Fatalf("expires_at: got %d; want within [%d, %d]", expires, lo, hi)
	}

	// Expired, the key is new: the same request makes a new post, and
	// the key then stands for it.
	expire("k")
	if p, created, err := createWith(t, s, 2, 1, "a", idemKey("k", "a")); err != nil || !created || p.ID != 2 {
		t.Fatalf("CreatePost(2) with an expired key: got %+v, %v, %v; want post 2 created", p, created, err)
	}
	if p, created, err := createWith(t, s, 3, 1, "a", idemKey("k", "a")); err != nil || created || p.ID != 2 {
		t.Fatalf("CreatePost(3) replay: got %+v, %v, %v; want post 2", p, created, err)
	}
	_, _, err := createWith(t, s, 4, 1, "b", idemKey("k", "b"))
	wantCode(t, err, feed.EKEYREUSED)
	// So is another request, and a deleted post's key.
	expire("k")
	if p, created, err := createWith(t, s, 5, 1, "b", idemKey("k", "b")); err != nil || !created || p.ID != 5 {
		t.Fatalf("CreatePost(5) with an expired key: got %+v, %v, %v; want post 5 created", p, created, err)
	}
	if err := s.DeletePost(ctx, 5, 1); err != nil {
		t.Fatal(err)
	}
	expire("k")
	if p, created, err := createWith(t, s, 6, 1, "b", idemKey("k", "b")); err != nil || !created || p.ID != 6 {
		t.Fatalf("CreatePost(6) after delete and expiry: got %+v, %v, %v; want post 6 created", p, created, err)
	}

	// Many twins take an expired key over at once: one post.
	expire("k")
	var wg sync.WaitGroup
	var createdN atomic.Int64
	ids := make([]int64, 8)
	for i := range ids {
		wg.Go(func() {
			p, created, err := createWith(t, s, int64(10+i), 1, "c", idemKey("k", "c"))
			if err != nil {
				t.Errorf("CreatePost(%d) taking over: %v", 10+i, err)
			}
			ids[i] = p.ID
			if created {
				createdN.Add(1)
			}
		})
	}
	wg.Wait()
	if createdN.Load() != 1 {
		t.Fatalf("concurrent take-over: got %d created; want 1", createdN.Load())
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent take-over: got posts %v; want one", ids)
		}
	}
}

func testIdempotencySweep(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	// More expired keys than one statement deletes, a live one, and one
	// that expires exactly now.
	now := time.Now()
	const expired = sweepChunk + sweepChunk/2
	var ids []string
	for i := range expired {
		ids = append(ids, strconv.Itoa(1000+i))
	}
	bulkInsert(t, s, "INSERT INTO idempotency (author_id, idem_key, post_id, fingerprint, created_at, expires_at) VALUES ",
		"(1, ?, 1, NULL, 0, 5)", ids)
	if _, created, err := createWith(t, s, 7, 2, "live", idemKey("live", "live")); err != nil || !created {
		t.Fatalf("CreatePost: got %v, %v", created, err)
	}
	if _, err := s.DB().ExecContext(ctx, "INSERT INTO idempotency (author_id, idem_key, post_id, created_at, expires_at) VALUES (2, 'edge', 7, 0, ?)", millis(now)); err != nil {
		t.Fatal(err)
	}
	n, err := s.SweepIdempotencyKeys(ctx, now)
	if err != nil || n != expired+1 {
		t.Fatalf("SweepIdempotencyKeys: got %d, %v; want %d", n, err, expired+1)
	}
	var left []string
	rows, err := s.DB().QueryContext(ctx, "SELECT idem_key FROM idempotency")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		left = append(left, k)
	}
	rows.Close()
	if len(left) != 1 || left[0] != "live" {
		t.Fatalf("keys after the purge: got %v; want [live]", left)
	}
	if n, err := s.SweepIdempotencyKeys(ctx, now); err != nil || n != 0 {
		t.Fatalf("SweepIdempotencyKeys again: got %d, %v; want 0", n, err)
	}
	// The live key still replays.
	if p, created, err := createWith(t, s, 8, 2, "live", idemKey("live", "live")); err != nil || created || p.ID != 7 {
		t.Fatalf("CreatePost replay after the purge: got %+v, %v, %v; want post 7", p, created, err)
	}
}

// testIdempotencyMigration: keys recorded before fingerprints and expiry
// existed replay as before, for any request, for 24 hours from their
// first use; older ones are expired and purged.
func testIdempotencyMigration(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.newDB(t).open(t)
	all := s.d.migrations
	before := fstest.MapFS{}
	names, err := fs.Glob(all, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name < "0007" {
			body, err := fs.ReadFile(all, name)
			if err != nil {
				t.Fatal(err)
			}
			before[name] = &fstest.MapFile{Data: body}
		}
	}
	s.d.migrations = before
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate to 0006: %v", err)
	}
	bulkUsers(t, s, []int64{1})        // CreateUser needs a later schema
	for _, id := range []int64{1, 2} { // so does CreatePost
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO posts (id, author_id, content, created_at) VALUES (?, 1, 'post', ?)",
			id, millis(time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	recent := millis(time.Now().Add(-time.Hour))
	for _, k := range []struct {
		key     string
		post    int64
		created int64
	}{{"recent", 1, recent}, {"old", 2, millis(time.Now().Add(-25 * time.Hour))}} {
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO idempotency (author_id, idem_key, post_id, created_at) VALUES (1, ?, ?, ?)",
			k.key, k.post, k.created); err != nil {
			t.Fatal(err)
		}
	}
	s.d.migrations = all
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate from 0006: %v", err)
	}
	var expires int64
	if err := s.DB().QueryRowContext(ctx, "SELECT expires_at FROM idempotency WHERE idem_key = 'recent'").Scan(&expires); err != nil || expires != recent+24*60*60*1000 {
		t.Fatalf("recent key's expires_at: got %d, %v; want %d", expires, err, recent+24*60*60*1000)
	}
	if p, created, err := createWith(t, s, 3, 1, "anything", idemKey("recent", "anything")); err != nil || created || p.ID != 1 {
		t.Fatalf("CreatePost with a key from before: got %+v, %v, %v; want post 1", p, created, err)
	}
	if n, err := s.SweepIdempotencyKeys(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("SweepIdempotencyKeys: got %d, %v; want the old key", n, err)
	}
}
