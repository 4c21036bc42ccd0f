package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/go-sql-driver/mysql"
)

// testDB is one fresh database of a backend.
type testDB struct {
	// open returns a new, unmigrated Store on the database, as another
	// process would open it; tb.Cleanup closes it.
	open func(tb testing.TB) *Store
}

// backend makes fresh databases of one kind.
type backend struct {
	name string
	// setup returns a function that creates fresh databases, or skips or
	// fails tb when the backend is not there. Benchmarks use them too.
	setup func(tb testing.TB) func(tb testing.TB) testDB
}

func TestStore(t *testing.T) {
	backends := []backend{
		{name: "sqlite", setup: setupSQLite},
		{name: "mysql", setup: setupMySQL},
		{name: "postgres", setup: setupPostgres},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			newDB := b.setup(t)
			for _, tc := range suite {
				t.Run(tc.name, func(t *testing.T) {
					tc.run(t, &env{backend: b.name, newDB: newDB})
				})
			}
		})
	}
}

func setupSQLite(testing.TB) func(tb testing.TB) testDB {
	return func(t testing.TB) testDB {
		path := filepath.Join(t.TempDir(), "feedd.db")
		return testDB{open: func(t testing.TB) *Store {
			t.Helper()
			s, err := OpenSQLite(t.Context(), path)
			if err != nil {
				t.Fatalf("OpenSQLite: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}}
	}
}

// setupMySQL connects to the server named by FEEDD_TEST_MYSQL_DSN (default:
// root on the local MariaDB). Every database it makes is created for one
// test and dropped after it; FEEDD_TEST_MYSQL_PREFIX (default feedd_test_)
// starts their names, so that whoever shares the server can tell them apart.
func setupMySQL(t testing.TB) func(tb testing.TB) testDB {
	dsn := os.Getenv("FEEDD_TEST_MYSQL_DSN")
	if dsn == "" {
		dsn = "root@tcp(127.0.0.1:3306)/"
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("FEEDD_TEST_MYSQL_DSN does not parse: %v", err)
	}
	cfg.DBName = ""
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	root, err := OpenMySQL(ctx, cfg.FormatDSN())
	if err != nil {
		feedtest.Missing(t, "MySQL/MariaDB at %s is unreachable (%v): start MariaDB or set FEEDD_TEST_MYSQL_DSN", cfg.Addr, err)
	}
	t.Cleanup(func() { root.Close() })

	prefix := cmp.Or(os.Getenv("FEEDD_TEST_MYSQL_PREFIX"), "feedd_test_")
	return func(t testing.TB) testDB {
		t.Helper()
		name := fmt.Sprintf("%s%016x", prefix, rand.Uint64())
		if _, err := root.DB().ExecContext(t.Context(),
			"CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
			t.Fatalf("create database %s: %v", name, err)
		}
		// Registered first, so it runs after the stores are closed.
		t.Cleanup(func() {
			if _, err := root.DB().ExecContext(context.Background(), "DROP DATABASE `"+name+"`"); err != nil {
				t.Errorf("drop database %s: %v", name, err)
			}
		})
		dbcfg := cfg.Clone()
		dbcfg.DBName = name
		return testDB{open: func(t testing.TB) *Store {
			t.Helper()
			s, err := OpenMySQL(t.Context(), dbcfg.FormatDSN())
			if err != nil {
				t.Fatalf("OpenMySQL: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}}
	}
}

// setupPostgres connects to the server named by FEEDD_TEST_POSTGRES_DSN
// (default: postgres on the local PostgreSQL). Every database it makes is
// created for one test and dropped after it.
func setupPostgres(t testing.TB) func(tb testing.TB) testDB {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	root, err := OpenPostgres(ctx, testenv.PostgresDSN())
	if err != nil {
		feedtest.Missing(t, "PostgreSQL is unreachable (%v): start it or set FEEDD_TEST_POSTGRES_DSN", err)
	}
	root.Close()
	return func(t testing.TB) testDB {
		t.Helper()
		dsn := testenv.CreatePostgresDatabase(t, "feedd_test_")
		return testDB{open: func(t testing.TB) *Store {
			t.Helper()
			s, err := OpenPostgres(t.Context(), dsn)
			if err != nil {
				t.Fatalf("OpenPostgres: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}}
	}
}

// env is what a test of the suite gets.
type env struct {
	backend string
	newDB   func(tb testing.TB) testDB
}

// store returns a migrated store on a fresh database.
func (e *env) store(t *testing.T) *Store {
	t.Helper()
	s := e.newDB(t).open(t)
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

var suite = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	{"Migrate", testMigrate},
	{"Users", testUsers},
	{"Handles", testHandles},
	{"ListMemberLimit", testListMemberLimit},
	{"TokenGeneration", testTokenGeneration},
	{"Markers", testMarkers},
	{"Notices", testNotices},
	{"NoticeBurst", testNoticeBurst},
	{"StaleFeeds", testStaleFeeds},
	{"MarkerRace", testMarkerRace},
	{"Follow", testFollow},
	{"FollowRace", testFollowRace},
	{"WriteConflict", testWriteConflict},
	{"ManyFollowers", testManyFollowers},
	{"FollowerPaging", testFollowerPaging},
	{"Mutes", testMutes},
	{"Blocks", testBlocks},
	{"BlockFollowRace", testBlockFollowRace},
	{"Bulk", testBulk},
	{"BulkLoad", testBulkLoad},
	{"FollowBatch", testFollowBatch},
	{"FollowBatchRace", testFollowBatchRace},
	{"CreatePost", testCreatePost},
	{"Idempotency", testIdempotency},
	{"IdempotencyRace", testIdempotencyRace},
	{"IdempotencyInFlight", testIdempotencyInFlight},
	{"IdempotencyExpiry", testIdempotencyExpiry},
	{"IdempotencySweep", testIdempotencySweep},
	{"IdempotencyMigration", testIdempotencyMigration},
	{"DuplicatePostID", testDuplicatePostID},
	{"ExternalID", testExternalID},
	{"ExternalIDRace", testExternalIDRace},
	{"HistoryIDs", testHistoryIDs},
	{"ImportPosts", testImportPosts},
	{"ImportPostsRace", testImportPostsRace},
	{"DeletePost", testDeletePost},
	{"PostData", testPostData},
	{"EditPost", testEditPost},
	{"AuthorPosts", testAuthorPosts},
	{"FeedPostIDs", testFeedPostIDs},
	{"NewestPostsFloor", testNewestPostsFloor},
	{"PushedFeedPostIDs", testPushedFeedPostIDs},
	{"Relay", testRelay},
	{"RelayConcurrent", testRelayConcurrent},
	{"ListenOutbox", testListenOutbox},
}

// wantCode fails t unless err carries the domain error code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := feed.ErrorCode(err); got != code {
		t.Fatalf("error %v: got code %q; want %q", err, got, code)
	}
}

func mustUsers(t *testing.T, s *Store, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.CreateUser(t.Context(), feed.User{ID: id, Name: fmt.Sprintf("user %d", id)}); err != nil {
			t.Fatalf("CreateUser(%d): %v", id, err)
		}
	}
}

func mustFollow(t *testing.T, s *Store, follower, followee int64) {
	t.Helper()
	if _, err := s.Follow(t.Context(), follower, followee); err != nil {
		t.Fatalf("Follow(%d, %d): %v", follower, followee, err)
	}
}

func mustPost(t *testing.T, s *Store, id, author int64) feed.Post {
	t.Helper()
	p, created, err := s.CreatePost(t.Context(), feed.Post{
		ID: id, AuthorID: author, Content: fmt.Sprintf("post %d", id), CreatedAt: time.Now(),
	}, feed.Idempotency{})
	if err != nil || !created {
		t.Fatalf("CreatePost(%d): got created %v, %v; want true, nil", id, created, err)
	}
	return p
}

// isFollowing reports whether follower follows followee.
func isFollowing(ctx context.Context, s *Store, follower, followee int64) (bool, error) {
	var one int
	err := s.rdb.QueryRowContext(ctx, "SELECT 1 FROM follows WHERE follower_id = ? AND followee_id = ?",
		follower, followee).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("sqlstore: is %d following %d: %w", follower, followee, err)
	}
	return true, nil
}

// wantCounts checks a user's follow counts.
func wantCounts(t *testing.T, s *Store, id, followers, following int64) {
	t.Helper()
	u, err := s.User(t.Context(), id)
	if err != nil {
		t.Fatalf("User(%d): %v", id, err)
	}
	if u.FollowerCount != followers || u.FollowingCount != following {
		t.Fatalf("user %d counts: got %d followers, %d following; want %d, %d",
			id, u.FollowerCount, u.FollowingCount, followers, following)
	}
}

func wantIDs(t *testing.T, what string, got []int64, err error, want []int64) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if want == nil {
		want = []int64{}
	}
	if got == nil || !slices.Equal(got, want) {
		t.Fatalf("%s: got %v; want %v", what, got, want)
	}
}

func testMigrate(t *testing.T, e *env) {
	ctx := t.Context()
	db := e.newDB(t)
	// Several processes start at once on an empty database.
	stores := make([]*Store, 4)
	for i := range stores {
		stores[i] = db.open(t)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate %d: %v", i, err)
		}
	}
	s := stores[0]
	for range 2 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	}
	migs, err := loadMigrations(s.d.migrations)
	if err != nil || len(migs) == 0 {
		t.Fatalf("loadMigrations: got %d, %v; want some", len(migs), err)
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(migs) {
		t.Fatalf("schema_migrations rows: got %d; want %d", n, len(migs))
	}
	for _, table := range []string{"users", "posts", "follows", "outbox", "idempotency"} {
		if _, err := s.DB().ExecContext(ctx, "SELECT COUNT(*) FROM "+table); err != nil {
			t.Fatalf("table %s: %v", table, err)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testUsers(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)

	created := time.Date(2025, 3, 4, 5, 6, 7, 891_234_567, time.UTC)
	got, err := s.CreateUser(ctx, feed.User{ID: 1, Name: "Ann ☕", FollowerCount: 7, CreatedAt: created})
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	want := feed.User{ID: 1, Name: "Ann ☕", CreatedAt: created.Truncate(time.Millisecond)}
	if got != want {
		t.Fatalf("CreateUser: got %+v; want %+v", got, want)
	}
	if u, err := s.User(ctx, 1); err != nil || u != want {
		t.Fatalf("User(1): got %+v, %v; want %+v", u, err, want)
	}

	before := time.Now().Add(-time.Second)
	bob, err := s.CreateUser(ctx, feed.User{ID: 2, Name: "bob"})
	if err != nil {
		t.Fatalf("CreateUser(2): %v", err)
	}
	if bob.CreatedAt.Before(before) || bob.CreatedAt.After(time.Now()) {
		t.Fatalf("CreateUser without CreatedAt: got %v; want about now", bob.CreatedAt)
	}

	_, err = s.CreateUser(ctx, feed.User{ID: 1, Name: "again"})
	wantCode(t, err, feed.ECONFLICT)
	_, err = s.User(ctx, 99)
	wantCode(t, err, feed.ENOTFOUND)
	_, err = s.CreateUser(ctx, feed.User{ID: 0, Name: "nobody"})
	wantCode(t, err, feed.EINVALID)

	users, err := s.Users(ctx, []int64{2, 99, 1, 2})
	if err != nil {
		t.Fatalf("Users: %v", err)
	}
	if len(users) != 2 || users[1] != want || users[2] != bob {
		t.Fatalf("Users(2, 99, 1, 2): got %+v; want users 1 and 2", users)
	}
	if users, err := s.Users(ctx, nil); err != nil || len(users) != 0 {
		t.Fatalf("Users(nil): got %v, %v; want empty", users, err)
	}

	// More ids than one IN list holds.
	var ids []int64
	for id := int64(1000); id < 1000+chunkSize+20; id++ {
		ids = append(ids, id)
	}
	bulkUsers(t, s, ids)
	users, err = s.Users(ctx, append(ids, 1, 99))
	if err != nil {
		t.Fatalf("Users(%d ids): %v", len(ids)+2, err)
	}
	if len(users) != len(ids)+1 {
		t.Fatalf("Users(%d ids): got %d users; want %d", len(ids)+2, len(users), len(ids)+1)
	}
}

// testTokenGeneration: a user starts at generation 0 (so tokens minted
// before the column existed, which carry none, keep working), each
// revocation adds one, and an unknown user is ENOTFOUND both ways.
func testTokenGeneration(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	for want := range int64(3) {
		if gen, err := s.TokenGeneration(ctx, 1); err != nil || gen != want {
			t.Fatalf("TokenGeneration(1) after %d revocations: got %d, %v; want %d", want, gen, err, want)
		}
		if err := s.RevokeTokens(ctx, 1); err != nil {
			t.Fatalf("RevokeTokens(1): %v", err)
		}
	}
	if gen, err := s.TokenGeneration(ctx, 2); err != nil || gen != 0 {
		t.Fatalf("TokenGeneration(2), never revoked: got %d, %v; want 0", gen, err)
	}
	_, err := s.TokenGeneration(ctx, 99)
	wantCode(t, err, feed.ENOTFOUND)
	wantCode(t, s.RevokeTokens(ctx, 99), feed.ENOTFOUND)
}

// bulkUsers inserts users straight into the table, fast.
func bulkUsers(t *testing.T, s *Store, ids []int64) {
	t.Helper()
	bulkInsert(t, s, "INSERT INTO users (id, name, follower_count, following_count, created_at) VALUES ", "(?, 'bulk', 0, 0, 0)", ids)
}

// bulkFollowers makes ids (already users) follow followee, straight in the
// table: for paging tests, which do not look at the counts.
func bulkFollowers(t *testing.T, s *Store, followee int64, ids []int64) {
	t.Helper()
	bulkInsert(t, s, "INSERT INTO follows (followee_id, follower_id, created_at) VALUES ",
		fmt.Sprintf("(%d, ?, 0)", followee), ids)
}

func bulkInsert[T any](t *testing.T, s *Store, head, row string, ids []T) {
	t.Helper()
	ctx := t.Context()
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for chunk := range slices.Chunk(ids, 200) {
		rows := make([]string, len(chunk))
		args := make([]any, len(chunk))
		for i, id := range chunk {
			rows[i], args[i] = row, id
		}
		if _, err := tx.ExecContext(ctx, head+strings.Join(rows, ", "), args...); err != nil {
			t.Fatalf("bulk insert: %v", err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func testFollow(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2, 3, 4, 5, 6)

	steps := []struct {
		op                 string
		follower, followee int64
		want               bool
	}{
		{"follow", 1, 2, true},
		{"follow", 1, 2, false},
		{"follow", 3, 2, true},
		{"unfollow", 1, 2, true},
		{"unfollow", 1, 2, false},
		{"unfollow", 2, 1, false},
		{"follow", 1, 2, true},
	}
	for _, st := range steps {
		var got bool
		var err error
		if st.op == "follow" {
			got, err = s.Follow(ctx, st.follower, st.followee)
		} else {
			got, err = s.Unfollow(ctx, st.follower, st.followee)
		}
		if err != nil || got != st.want {
			t.Fatalf("%s(%d, %d): got %v, %v; want %v, nil", st.op, st.follower, st.followee, got, err, st.want)
		}
	}
	wantCounts(t, s, 1, 0, 1)
	wantCounts(t, s, 2, 2, 0)
	wantCounts(t, s, 3, 0, 1)

	for _, c := range []struct {
		follower, followee int64
		want               bool
	}{{1, 2, true}, {3, 2, true}, {2, 1, false}, {1, 3, false}} {
		if got, err := isFollowing(ctx, s, c.follower, c.followee); err != nil || got != c.want {
			t.Fatalf("isFollowing(%d, %d): got %v, %v; want %v", c.follower, c.followee, got, err, c.want)
		}
	}

	_, err := s.Follow(ctx, 1, 99)
	wantCode(t, err, feed.ENOTFOUND)
	_, err = s.Follow(ctx, 99, 1)
	wantCode(t, err, feed.ENOTFOUND)
	_, err = s.Follow(ctx, 1, 1)
	wantCode(t, err, feed.EINVALID)
	if got, err := s.Unfollow(ctx, 99, 1); err != nil || got {
		t.Fatalf("Unfollow(99, 1): got %v, %v; want false, nil", got, err)
	}
	wantCounts(t, s, 1, 0, 1)

	// Following pages by keyset too.
	for _, id := range []int64{6, 4, 5} {
		mustFollow(t, s, 1, id)
	}
	got, err := s.Following(ctx, 1, 0, 2)
	wantIDs(t, "Following(1, 0, 2)", got, err, []int64{2, 4})
	got, err = s.Following(ctx, 1, 4, 2)
	wantIDs(t, "Following(1, 4, 2)", got, err, []int64{5, 6})
	got, err = s.Following(ctx, 1, 6, 2)
	wantIDs(t, "Following(1, 6, 2)", got, err, nil)
	got, err = s.Following(ctx, 1, 0, 0)
	wantIDs(t, "Following(1, 0, 0)", got, err, nil)
	got, err = s.Followers(ctx, 2, 0, 10)
	wantIDs(t, "Followers(2, 0, 10)", got, err, []int64{1, 3})
	wantCounts(t, s, 1, 0, 4)
}

// testFollowRace follows and unfollows one pair from many goroutines: the
// counts must agree with the edge, and with the calls that reported a
// change.
func testFollowRace(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2, 3)
	mustFollow(t, s, 3, 2) // a bystander edge the race must not disturb

	var follows, unfollows atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for g := range 50 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 8 {
				// Both directions, so that lock order matters.
				a, b := int64(1), int64(2)
				if r.IntN(4) == 0 {
					a, b = b, a
				}
				if r.IntN(2) == 0 {
					ok, err := s.Follow(ctx, a, b)
					if err != nil {
						errs <- err
						return
					}
					if ok && a == 1 {
						follows.Add(1)
					}
				} else {
					ok, err := s.Unfollow(ctx, a, b)
					if err != nil {
						errs <- err
						return
					}
					if ok && a == 1 {
						unfollows.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("racing follow: %v", err)
	}

	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	fwd, err := isFollowing(ctx, s, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	back, err := isFollowing(ctx, s, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := follows.Load()-unfollows.Load(), b2i(fwd); got != want {
		t.Fatalf("follows - unfollows that reported a change: got %d; want %d (edge 1->2 %v)", got, want, fwd)
	}
	wantCounts(t, s, 1, b2i(back), b2i(fwd))
	wantCounts(t, s, 2, b2i(fwd)+1, b2i(back))
	wantCounts(t, s, 3, 0, 1)
}

// testWriteConflict runs two write transactions that update the same two
// rows in opposite orders. On MySQL they deadlock and write retries the
// victim; on SQLite they never overlap. Either way both commit once.
func testWriteConflict(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)

	var attempts, inTx, maxInTx atomic.Int64
	arrived := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	bump := func(tx *sql.Tx, id int64) error {
		_, err := tx.ExecContext(ctx, "UPDATE users SET follower_count = follower_count + 1 WHERE id = ?", id)
		return err
	}
	txn := func(me int, first, second int64) error {
		once := sync.Once{}
		return s.write(ctx, func(tx *sql.Tx) error {
			attempts.Add(1)
			cur := inTx.Add(1)
			defer inTx.Add(-1)
			for m := maxInTx.Load(); cur > m && !maxInTx.CompareAndSwap(m, cur); m = maxInTx.Load() {
			}
			if err := bump(tx, first); err != nil {
				return err
			}
			once.Do(func() {
				// Wait for the other to hold its first row; on SQLite it
				// cannot, and the wait times out.
				close(arrived[me])
				select {
				case <-arrived[1-me]:
				case <-time.After(300 * time.Millisecond):
				}
			})
			return bump(tx, second)
		})
	}
	var wg sync.WaitGroup
	var errs [2]error
	wg.Go(func() { errs[0] = txn(0, 1, 2) })
	wg.Go(func() { errs[1] = txn(1, 2, 1) })
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
	}
	wantCounts(t, s, 1, 2, 0)
	wantCounts(t, s, 2, 2, 0)
	switch e.backend {
	case "mysql":
		if got := attempts.Load(); got != 3 {
			t.Fatalf("attempts: got %d; want 3 (one deadlock victim, retried)", got)
		}
	case "sqlite":
		if got := maxInTx.Load(); got != 1 || attempts.Load() != 2 {
			t.Fatalf("write transactions at once: got %d in %d attempts; want 1 in 2", got, attempts.Load())
		}
	}
}

func testManyFollowers(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	const star, fans = 1, 120
	var ids []int64
	for i := range fans {
		ids = append(ids, int64(1000+i*7))
	}
	mustUsers(t, s, star, 2)
	bulkUsers(t, s, ids)

	// Every fan follows the star and user 2 at once, then every other fan
	// unfollows the star, from 50 goroutines.
	run := func(f func(fan int64) error) {
		t.Helper()
		var wg sync.WaitGroup
		var failed atomic.Value
		work := make(chan int64)
		for range 50 {
			wg.Go(func() {
				for fan := range work {
					if err := f(fan); err != nil {
						failed.Store(err)
					}
				}
			})
		}
		for _, id := range ids {
			work <- id
		}
		close(work)
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			t.Fatal(err)
		}
	}
	run(func(fan int64) error {
		for _, who := range []int64{star, 2} {
			if ok, err := s.Follow(ctx, fan, who); err != nil || !ok {
				return fmt.Errorf("Follow(%d, %d): got %v, %v; want true", fan, who, ok, err)
			}
		}
		return nil
	})
	wantCounts(t, s, star, fans, 0)
	wantCounts(t, s, 2, fans, 0)

	run(func(fan int64) error {
		if (fan-1000)/7%2 == 0 {
			return nil
		}
		if ok, err := s.Unfollow(ctx, fan, star); err != nil || !ok {
			return fmt.Errorf("Unfollow(%d, %d): got %v, %v; want true", fan, star, ok, err)
		}
		return nil
	})
	wantCounts(t, s, star, fans/2, 0)
	wantCounts(t, s, 2, fans, 0)
	var want []int64
	for _, id := range ids {
		if (id-1000)/7%2 == 0 {
			want = append(want, id)
		}
		wantFollowing := int64(1)
		if (id-1000)/7%2 == 0 {
			wantFollowing = 2
		}
		wantCounts(t, s, id, 0, wantFollowing)
	}
	got, err := s.Followers(ctx, star, 0, fans)
	wantIDs(t, "Followers(star)", got, err, want)
}

func testFollowerPaging(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	const star, fans = 1, 2500
	r := rand.New(rand.NewPCG(7, 7))
	set := map[int64]bool{}
	for len(set) < fans {
		set[2+r.Int64N(1<<40)] = true
	}
	var ids []int64
	for id := range set {
		ids = append(ids, id)
	}
	mustUsers(t, s, star)
	bulkUsers(t, s, ids)
	bulkFollowers(t, s, star, ids)
	// Followers of someone else must not leak in.
	mustUsers(t, s, 3)
	bulkFollowers(t, s, 3, ids[:10])
	slices.Sort(ids)

	t.Run("Followers", func(t *testing.T) {
		for _, n := range []int{1, 97, 100, fans, fans + 1} {
			var got []int64
			var after int64
			pages := 0
			for {
				page, err := s.Followers(ctx, star, after, n)
				if err != nil {
					t.Fatalf("Followers(after %d, n %d): %v", after, n, err)
				}
				if len(page) > n {
					t.Fatalf("Followers(n %d): got %d ids; want at most %d", n, len(page), n)
				}
				if len(page) == 0 {
					break
				}
				pages++
				got = append(got, page...)
				after = page[len(page)-1]
			}
			if !slices.Equal(got, ids) {
				t.Fatalf("n %d: paged %d ids in %d pages; want the %d followers in order without duplicates", n, len(got), pages, fans)
			}
			if want := (fans + n - 1) / n; pages != want {
				t.Fatalf("n %d: got %d pages; want %d", n, pages, want)
			}
		}
	})

	t.Run("Ranges", func(t *testing.T) {
		for _, n := range []int{1, 300, 499, fans, 5000} {
			seen := map[int64]int{}
			var all []int64
			after := int64(0)
			ranges := 0
			for {
				upto, count, err := s.FollowerRangeEnd(ctx, star, after, n)
				if err != nil {
					t.Fatalf("FollowerRangeEnd(after %d, n %d): %v", after, n, err)
				}
				if count == 0 {
					if upto != 0 {
						t.Fatalf("FollowerRangeEnd past the end: got upto %d; want 0", upto)
					}
					break
				}
				if count > n || upto <= after {
					t.Fatalf("FollowerRangeEnd(after %d, n %d): got upto %d, count %d", after, n, upto, count)
				}
				got, err := s.FollowersInRange(ctx, star, after, upto)
				if err != nil {
					t.Fatalf("FollowersInRange(%d, %d): %v", after, upto, err)
				}
				if len(got) != count || got[len(got)-1] != upto {
					t.Fatalf("FollowersInRange(%d, %d): got %d ids ending %d; want %d ending %d",
						after, upto, len(got), got[len(got)-1], count, upto)
				}
				for _, id := range got {
					seen[id]++
				}
				all = append(all, got...)
				after = upto
				ranges++
			}
			if !slices.Equal(all, ids) {
				t.Fatalf("n %d: ranges covered %d ids; want each of the %d followers once", n, len(all), fans)
			}
			for id, c := range seen {
				if c != 1 {
					t.Fatalf("n %d: follower %d in %d ranges; want 1", n, id, c)
				}
			}
			if want := (fans + n - 1) / n; ranges != want {
				t.Fatalf("n %d: got %d ranges; want %d", n, ranges, want)
			}
		}
		got, err := s.FollowersInRange(ctx, star, ids[10], ids[10])
		wantIDs(t, "FollowersInRange(x, x)", got, err, nil)
		got, err = s.FollowersInRange(ctx, star, ids[9], ids[12])
		wantIDs(t, "FollowersInRange(ids[9], ids[12])", got, err, ids[10:13])
		if upto, count, err := s.FollowerRangeEnd(ctx, star, 0, 0); upto != 0 || count != 0 || err != nil {
			t.Fatalf("FollowerRangeEnd(n 0): got %d, %d, %v; want 0, 0, nil", upto, count, err)
		}
	})
}

func testBulk(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	const star, fans = 1, 1200
	users := []feed.User{{ID: star, Name: "star"}}
	var ids []int64
	for i := range fans {
		id := int64(100 + 3*i)
		ids = append(ids, id)
		users = append(users, feed.User{ID: id, Name: fmt.Sprint("fan ", i)})
	}
	if err := s.BulkCreateUsers(ctx, users); err != nil {
		t.Fatalf("BulkCreateUsers: %v", err)
	}
	wantCode(t, s.BulkCreateUsers(ctx, users[5:7]), feed.ECONFLICT)
	got, err := s.Users(ctx, []int64{star, ids[fans-1]})
	if err != nil || got[ids[fans-1]].Name != fmt.Sprint("fan ", fans-1) || got[star].CreatedAt.IsZero() {
		t.Fatalf("Users after BulkCreateUsers: got %+v, %v", got, err)
	}

	// Some fans follow already: they must not be counted twice.
	for _, id := range ids[:10] {
		mustFollow(t, s, id, star)
	}
	mustFollow(t, s, ids[0], ids[1])
	for range 2 {
		if err := s.BulkFollow(ctx, star, ids); err != nil {
			t.Fatalf("BulkFollow: %v", err)
		}
	}
	wantCounts(t, s, star, fans, 0)
	wantCounts(t, s, ids[0], 0, 2)
	wantCounts(t, s, ids[1], 1, 1)
	wantCounts(t, s, ids[fans-1], 0, 1)
	followers, err := s.Followers(ctx, star, 0, 2*fans)
	wantIDs(t, "Followers after BulkFollow", followers, err, ids)

	wantCode(t, s.BulkFollow(ctx, star, []int64{ids[0], 99}), feed.ENOTFOUND)
	wantCode(t, s.BulkFollow(ctx, star, []int64{ids[0], star}), feed.EINVALID)
	wantCounts(t, s, star, fans, 0)
}

// drainOutbox returns every outbox row's event, relaying them all.
func drainOutbox(t *testing.T, s *Store) []feed.Event {
	t.Helper()
	var evs []feed.Event
	_, err := s.RelayOutbox(t.Context(), 1000, func(_ context.Context, batch []feed.OutboxEvent) error {
		for _, ob := range batch {
			ev, err := feed.DecodeEvent(ob.Payload)
			if err != nil {
				return err
			}
			evs = append(evs, ev)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("RelayOutbox: %v", err)
	}
	return evs
}

func testCreatePost(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1)
	in := feed.Post{ID: 42, AuthorID: 1, Content: "hello, 世界 🌍", CreatedAt: time.Date(2025, 6, 1, 12, 0, 0, 123_456_789, time.UTC)}
	got, created, err := s.CreatePost(ctx, in, feed.Idempotency{})
	if err != nil || !created {
		t.Fatalf("CreatePost: got created %v, %v; want true, nil", created, err)
	}
	want := in
	want.CreatedAt = in.CreatedAt.Truncate(time.Millisecond)
	if got != want {
		t.Fatalf("CreatePost: got %+v; want %+v", got, want)
	}
	if p, err := s.Post(ctx, 42); err != nil || p != want {
		t.Fatalf("Post(42): got %+v, %v; want %+v", p, err, want)
	}
	_, err = s.Post(ctx, 43)
	wantCode(t, err, feed.ENOTFOUND)
	if n, err := s.OutboxBacklog(ctx); err != nil || n != 1 {
		t.Fatalf("OutboxBacklog: got %d, %v; want 1", n, err)
	}
	evs := drainOutbox(t, s)
	wantEv := []feed.Event{{Kind: feed.EventPostCreated, PostID: 42, AuthorID: 1}}
	if !slices.Equal(evs, wantEv) {
		t.Fatalf("outbox: got %+v; want %+v", evs, wantEv)
	}
	_, _, err = s.CreatePost(ctx, feed.Post{ID: 0, AuthorID: 1}, feed.Idempotency{})
	wantCode(t, err, feed.EINVALID)
	_, _, err = s.CreatePost(ctx, feed.Post{ID: 44, AuthorID: 1}, idemKey(strings.Repeat("k", 256), ""))
	wantCode(t, err, feed.EINVALID)

	// Posts in bulk, past one IN list, deleted ones flagged.
	var ids []int64
	for id := int64(1000); id < 1000+chunkSize+10; id++ {
		ids = append(ids, id)
	}
	bulkInsert(t, s, "INSERT INTO posts (id, author_id, content, created_at, deleted_at) VALUES ", "(?, 1, 'bulk', 0, NULL)", ids)
	if err := s.DeletePost(ctx, 1003, 1); err != nil {
		t.Fatalf("DeletePost: %v", err)
	}
	posts, err := s.Posts(ctx, append(ids, 42, 7))
	if err != nil {
		t.Fatalf("Posts: %v", err)
	}
	if len(posts) != len(ids)+1 || posts[42] != want || !posts[1003].Deleted || posts[1004].Deleted || posts[1004].Content != "bulk" {
		t.Fatalf("Posts: got %d posts, 42 %+v, 1003 %+v, 1004 %+v; want %d, 1003 deleted only",
			len(posts), posts[42], posts[1003], posts[1004], len(ids)+1)
	}
}

func testDuplicatePostID(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	mustPost(t, s, 50, 1)
	_, created, err := s.CreatePost(ctx, feed.Post{ID: 50, AuthorID: 2, CreatedAt: time.Now()}, idemKey("k", ""))
	wantCode(t, err, feed.ECONFLICT)
	if created {
		t.Fatalf("CreatePost with a taken id: got created true; want false")
	}
	// The failed attempt did not use up the key, nor leave an event.
	p, created, err := s.CreatePost(ctx, feed.Post{ID: 51, AuthorID: 2, CreatedAt: time.Now()}, idemKey("k", ""))
	if err != nil || !created || p.ID != 51 {
		t.Fatalf("CreatePost retry with a fresh id: got %+v, %v, %v; want post 51 created", p, created, err)
	}
	if n, err := s.OutboxBacklog(ctx); err != nil || n != 2 {
		t.Fatalf("OutboxBacklog: got %d, %v; want 2", n, err)
	}
	if p, err := s.Post(ctx, 50); err != nil || p.AuthorID != 1 {
		t.Fatalf("Post(50): got %+v, %v; want author 1's", p, err)
	}
}

func testDeletePost(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	orig := mustPost(t, s, 60, 1)

	wantCode(t, s.DeletePost(ctx, 61, 1), feed.ENOTFOUND)
	wantCode(t, s.DeletePost(ctx, 60, 2), feed.EFORBIDDEN)
	if err := s.DeletePost(ctx, 60, 1); err != nil {
		t.Fatalf("DeletePost by its author: %v", err)
	}
	wantCode(t, s.DeletePost(ctx, 60, 1), feed.ENOTFOUND)
	// Not found comes first: a deleted post is nobody's business.
	wantCode(t, s.DeletePost(ctx, 60, 2), feed.ENOTFOUND)

	p, err := s.Post(ctx, 60)
	want := feed.Post{ID: 60, AuthorID: 1, CreatedAt: orig.CreatedAt, Deleted: true}
	if err != nil || p != want {
		t.Fatalf("Post(60) after delete: got %+v, %v; want tombstone %+v", p, err, want)
	}
}

func testPostData(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1)
	// Data is stored and returned byte for byte, whatever it holds: the
	// largest allowed, characters outside the BMP, escapes.
	big := `{"s":"` + strings.Repeat("é", (feed.MaxDataBytes-8)/2) + `"}`
	for i, data := range []string{`{"title":"Hi 🌍","n":1.50,"tags":["a","b"],"x":null,"e":"\u0000<&>"}`, big, `{}`, ""} {
		id := int64(70 + i)
		in := feed.Post{ID: id, AuthorID: 1, Content: "with data", CreatedAt: feed.IDTime(id), Data: data}
		if _, created, err := s.CreatePost(ctx, in, feed.Idempotency{}); err != nil || !created {
			t.Fatalf("CreatePost(%d): created %v, %v", id, created, err)
		}
		in.CreatedAt = in.CreatedAt.Truncate(time.Millisecond)
		if p, err := s.Post(ctx, id); err != nil || p != in {
			t.Fatalf("Post(%d) = %.80v, %v; want %.80v", id, p, err, in)
		}
		posts, err := s.Posts(ctx, []int64{id})
		if err != nil || posts[id] != in {
			t.Fatalf("Posts(%d) = %.80v, %v; want %.80v", id, posts[id], err, in)
		}
		list, err := s.AuthorPosts(ctx, 1, id+1, 1)
		if err != nil || len(list) != 1 || list[0] != in {
			t.Fatalf("AuthorPosts = %.80v, %v; want [%.80v]", list, err, in)
		}
	}
	// A tombstone carries no data.
	if err := s.DeletePost(ctx, 70, 1); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Post(ctx, 70); err != nil || !p.Deleted || p.Data != "" || p.Content != "" {
		t.Fatalf("Post(70) after delete = %+v, %v; want a tombstone without data", p, err)
	}
}

func testEditPost(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	orig, _, err := s.CreatePost(ctx, feed.Post{ID: 80, AuthorID: 1, Content: "first", CreatedAt: time.Now(), Data: `{"v":1}`}, feed.Idempotency{})
	if err != nil {
		t.Fatal(err)
	}
	mustPost(t, s, 81, 1)
	content := func(s string) *string { return &s }

	edit := func(e feed.PostEdit, want feed.Post) feed.Post {
		t.Helper()
		before := time.Now().Truncate(time.Millisecond)
		got, err := s.EditPost(ctx, 80, 1, e)
		if err != nil {
			t.Fatalf("EditPost(%+v): %v", e, err)
		}
		if got.EditedAt.Before(before) || !got.EditedAt.After(want.EditedAt) {
			t.Fatalf("EditPost: EditedAt %v; want after the previous %v and not before %v", got.EditedAt, want.EditedAt, before)
		}
		want.EditedAt = got.EditedAt
		if got != want {
			t.Fatalf("EditPost(%+v) = %+v; want %+v", e, got, want)
		}
		if p, err := s.Post(ctx, 80); err != nil || p != want {
			t.Fatalf("Post(80) after the edit = %+v, %v; want %+v", p, err, want)
		}
		return want
	}
	want := orig
	want.Content = "second"
	want = edit(feed.PostEdit{Content: content("second")}, want) // data kept
	want.Data = `{"v":2}`
	want = edit(feed.PostEdit{SetData: true, Data: `{"v":2}`}, want) // content kept
	want.Content, want.Data = "third", ""
	want = edit(feed.PostEdit{Content: content("third"), SetData: true}, want) // data removed
	// Edits within one millisecond still get increasing versions.
	for range 5 {
		want = edit(feed.PostEdit{Content: content("again")}, func() feed.Post { w := want; w.Content = "again"; return w }())
	}
	if want.CreatedAt != orig.CreatedAt || want.ID != 80 {
		t.Fatalf("an edit moved the post: %+v; was %+v", want, orig)
	}

	_, err = s.EditPost(ctx, 80, 2, feed.PostEdit{Content: content("hijack")})
	wantCode(t, err, feed.EFORBIDDEN)
	_, err = s.EditPost(ctx, 99, 1, feed.PostEdit{Content: content("nobody")})
	wantCode(t, err, feed.ENOTFOUND)
	_, err = s.EditPost(ctx, 81, 1, feed.PostEdit{})
	wantCode(t, err, feed.EINVALID)
	if err := s.DeletePost(ctx, 81, 1); err != nil {
		t.Fatal(err)
	}
	_, err = s.EditPost(ctx, 81, 1, feed.PostEdit{Content: content("undead")})
	wantCode(t, err, feed.ENOTFOUND)
	_, err = s.EditPost(ctx, 81, 2, feed.PostEdit{Content: content("undead")})
	wantCode(t, err, feed.ENOTFOUND) // not found first, as for deletes
	if p, err := s.Post(ctx, 80); err != nil || p != want {
		t.Fatalf("Post(80) after refused edits = %+v, %v; want %+v", p, err, want)
	}
}

func testAuthorPosts(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	posts := map[int64]feed.Post{}
	for id := int64(10); id < 30; id++ {
		posts[id] = mustPost(t, s, id, 1+id%2) // author 1: even ids, author 2: odd
	}
	for _, id := range []int64{14, 20} {
		if err := s.DeletePost(ctx, id, 1); err != nil {
			t.Fatal(err)
		}
	}

	cases := []struct {
		after, before int64
		n             int
		want          []int64
	}{
		{0, 0, 100, []int64{28, 26, 24, 22, 18, 16, 12, 10}},
		{0, 0, 3, []int64{28, 26, 24}},
		{0, 22, 3, []int64{18, 16, 12}},
		{12, 26, 100, []int64{24, 22, 18, 16}},
		{10, 12, 100, nil},
		{28, 0, 100, nil},
		{0, 0, 0, nil},
		{0, 0, -1, nil},
	}
	for _, c := range cases {
		got, err := s.AuthorPostIDs(ctx, 1, c.after, c.before, c.n)
		wantIDs(t, fmt.Sprintf("AuthorPostIDs(1, %d, %d, %d)", c.after, c.before, c.n), got, err, c.want)
		if c.after != 0 {
			continue
		}
		full, err := s.AuthorPosts(ctx, 1, c.before, c.n)
		if err != nil {
			t.Fatal(err)
		}
		if full == nil || len(full) != len(c.want) {
			t.Fatalf("AuthorPosts(1, %d, %d): got %d posts; want %d", c.before, c.n, len(full), len(c.want))
		}
		for i, p := range full {
			if p != posts[c.want[i]] {
				t.Fatalf("AuthorPosts(1, %d, %d)[%d]: got %+v; want %+v", c.before, c.n, i, p, posts[c.want[i]])
			}
		}
	}
	got, err := s.AuthorPostIDs(ctx, 2, 0, 0, 3)
	wantIDs(t, "AuthorPostIDs(2)", got, err, []int64{29, 27, 25})
}

// feedWindows runs a feed query test twice: with post ids of 2025 (the
// join from follows) and with ids of now, so that every window with an
// after is a recent one (the walk of the window's posts on MariaDB, see
// FeedPostIDs). at shifts a test's post id (or bound; 0 stays 0) into the
// run's ids; ats a list.
func feedWindows(t *testing.T, e *env, test func(t *testing.T, s *Store, at func(int64) int64, ats func(...int64) []int64)) {
	for _, w := range []struct {
		name string
		base int64
		// lateral: every wide window is read followee by followee, what
		// PostgreSQL does for a rebuild (dialect.lateralFeed).
		lateral bool
	}{{"old", 0, false}, {"recent", feed.MinIDAt(time.Now()), false},
		{"old-lateral", 0, true}, {"recent-lateral", feed.MinIDAt(time.Now()), true}} {
		t.Run(w.name, func(t *testing.T) {
			at := func(id int64) int64 {
				if id == 0 {
					return 0
				}
				return w.base + id
			}
			ats := func(ids ...int64) []int64 {
				out := make([]int64, len(ids))
				for i, id := range ids {
					out[i] = at(id)
				}
				return out
			}
			s := e.store(t)
			if w.lateral {
				if !s.d.lateralFeed {
					return // the same queries as without
				}
				s.lateralMin = 0
			}
			test(t, s, at, ats)
		})
	}
}

func testFeedPostIDs(t *testing.T, e *env) {
	feedWindows(t, e, func(t *testing.T, s *Store, at func(int64) int64, ats func(...int64) []int64) {
		ctx := t.Context()
		const reader, a, b, c, lurker = 100, 1, 2, 3, 101
		mustUsers(t, s, reader, a, b, c, lurker)
		mustFollow(t, s, reader, a)
		mustFollow(t, s, reader, b)
		mustFollow(t, s, lurker, c)
		// Interleaved authors: a has 10, 13, 16, ...; b 11, 14, ...; c 12, 15, ...
		for id := int64(10); id < 40; id++ {
			mustPost(t, s, at(id), map[int64]int64{1: a, 2: b, 0: c}[id%3])
		}
		if err := s.DeletePost(ctx, at(34), a); err != nil {
			t.Fatal(err)
		}

		cases := []struct {
			after, before int64
			n             int
			want          []int64
		}{
			{0, 0, 100, []int64{38, 37, 35, 32, 31, 29, 28, 26, 25, 23, 22, 20, 19, 17, 16, 14, 13, 11, 10}},
			{0, 0, 4, []int64{38, 37, 35, 32}},
			{0, 32, 4, []int64{31, 29, 28, 26}},
			{25, 32, 100, []int64{31, 29, 28, 26}},
			{25, 0, 4, []int64{38, 37, 35, 32}},
			{30, 0, 100, []int64{38, 37, 35, 32, 31}},
			{38, 0, 100, nil},
			{0, 0, 0, nil},
		}
		for _, c := range cases {
			got, err := s.FeedPostIDs(ctx, reader, at(c.after), at(c.before), c.n)
			wantIDs(t, fmt.Sprintf("FeedPostIDs(%d, %d, %d)", c.after, c.before, c.n), got, err, ats(c.want...))
		}
		if _, err := s.Unfollow(ctx, reader, b); err != nil {
			t.Fatal(err)
		}
		got, err := s.FeedPostIDs(ctx, reader, 0, 0, 100)
		wantIDs(t, "FeedPostIDs after unfollowing b", got, err, ats(37, 31, 28, 25, 22, 19, 16, 13, 10))
		got, err = s.FeedPostIDs(ctx, reader, at(20), 0, 100)
		wantIDs(t, "FeedPostIDs(20, 0) after unfollowing b", got, err, ats(37, 31, 28, 25, 22))
		got, err = s.FeedPostIDs(ctx, 999, 0, 0, 100)
		wantIDs(t, "FeedPostIDs of a reader who follows nobody", got, err, nil)
		got, err = s.FeedPostIDs(ctx, 999, at(20), 0, 100)
		wantIDs(t, "FeedPostIDs(20, 0) of a reader who follows nobody", got, err, nil)

		// The reader's own posts are on its feed, in id order with its
		// followees', deleted ones left out; another's feed does not get
		// them unless it follows the reader.
		got, err = s.FeedPostIDs(ctx, a, 0, 0, 100)
		wantIDs(t, "FeedPostIDs of a, who follows nobody: its own posts", got, err, ats(37, 31, 28, 25, 22, 19, 16, 13, 10))
		mustPost(t, s, at(5), reader)
		mustPost(t, s, at(41), reader)
		mustPost(t, s, at(42), lurker)
		mustPost(t, s, at(43), reader)
		if err := s.DeletePost(ctx, at(43), reader); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			after, before int64
			n             int
			want          []int64
		}{
			{0, 0, 100, []int64{41, 37, 31, 28, 25, 22, 19, 16, 13, 10, 5}},
			{0, 0, 2, []int64{41, 37}},
			{0, 41, 2, []int64{37, 31}},
			{30, 0, 100, []int64{41, 37, 31}},
			{37, 0, 100, []int64{41}},
			{0, 10, 100, []int64{5}},
			{41, 0, 100, nil},
		} {
			got, err := s.FeedPostIDs(ctx, reader, at(c.after), at(c.before), c.n)
			wantIDs(t, fmt.Sprintf("FeedPostIDs(%d, %d, %d) with the reader's own posts", c.after, c.before, c.n), got, err, ats(c.want...))
		}
		got, err = s.FeedPostIDs(ctx, lurker, 0, 0, 3)
		wantIDs(t, "FeedPostIDs of lurker: c's posts and its own, none of reader's", got, err, ats(42, 39, 36))
	})
}

// testNewestPostsFloor: the k-th newest post of all, deleted ones
// counted (a refresh's walk meets them too), 0 when there are fewer.
func testNewestPostsFloor(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	got, err := s.NewestPostsFloor(ctx, 1)
	if err != nil || got != 0 {
		t.Fatalf("NewestPostsFloor(1) of no posts = %d, %v; want 0", got, err)
	}
	const a, b = 1, 2
	mustUsers(t, s, a, b)
	for id := int64(10); id <= 14; id++ {
		mustPost(t, s, id, map[bool]int64{true: a, false: b}[id%2 == 0])
	}
	if err := s.DeletePost(ctx, 13, b); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[int]int64{0: 0, 1: 14, 2: 13, 3: 12, 5: 10, 6: 0} {
		if got, err := s.NewestPostsFloor(ctx, k); err != nil || got != want {
			t.Errorf("NewestPostsFloor(%d) = %d, %v; want %d", k, got, err, want)
		}
	}
}

// testPushedFeedPostIDs: a hybrid inbox's query leaves out exactly the
// followees PullFollowees names, with the band evaluated at query time.
func testPushedFeedPostIDs(t *testing.T, e *env) {
	feedWindows(t, e, func(t *testing.T, s *Store, at func(int64) int64, ats func(...int64) []int64) {
		ctx := t.Context()
		const reader, a, b, c, d, x1, x2 = 100, 1, 2, 3, 4, 201, 202
		const high, low = 3, 2 // pulled: >= 3 followers, or 2 with pull_mode set
		mustUsers(t, s, reader, a, b, c, d, x1, x2)
		for _, e := range [][2]int64{
			{reader, a},                   // a: 1 follower, pushed
			{reader, b}, {x1, b}, {x2, b}, // b: 3, pulled
			{reader, c}, {x1, c}, // c: 2, pulled once its pull_mode is set
			{reader, d}, {x1, d}, // d: 2, pull_mode unset: pushed
		} {
			mustFollow(t, s, e[0], e[1])
		}
		if _, err := s.SetPullMode(ctx, c, true, 0); err != nil {
			t.Fatal(err)
		}
		for id := int64(10); id < 18; id++ { // a: 10, 14; b: 11, 15; c: 12, 16; d: 13, 17
			mustPost(t, s, at(id), []int64{a, b, c, d}[(id-10)%4])
		}
		pulled, err := s.PullFollowees(ctx, reader, high, low)
		wantIDs(t, "PullFollowees", pulled, err, []int64{b, c})
		// More pulled authors than it checks one by one (b, c and x's
		// none: pretend the bound is 1): the join answers the same.
		s.pullCandidates = 1
		pulled, err = s.PullFollowees(ctx, reader, high, low)
		wantIDs(t, "PullFollowees by the join", pulled, err, []int64{b, c})
		s.pullCandidates = chunkSize
		pulled, err = s.PullFollowees(ctx, x2, high, low)
		wantIDs(t, "PullFollowees of a reader following one pulled author", pulled, err, []int64{b})
		pulled, err = s.PullFollowees(ctx, a, high, low)
		wantIDs(t, "PullFollowees of a reader following nobody", pulled, err, nil)
		// A pulled reader is a pulled author of its own feed: its own
		// posts are merged from its list, not in its inbox's query.
		pulled, err = s.PullFollowees(ctx, b, high, low)
		wantIDs(t, "PullFollowees of pulled b, following nobody", pulled, err, []int64{b})
		mustFollow(t, s, b, c)
		pulled, err = s.PullFollowees(ctx, b, high, low)
		wantIDs(t, "PullFollowees of pulled b, following pulled c", pulled, err, []int64{b, c})
		s.pullCandidates = 1
		pulled, err = s.PullFollowees(ctx, b, high, low)
		wantIDs(t, "PullFollowees of pulled b by the join", pulled, err, []int64{b, c})
		pulled, err = s.PullFollowees(ctx, x1, high, low)
		wantIDs(t, "PullFollowees of pushed x1 by the join", pulled, err, []int64{b, c})
		s.pullCandidates = chunkSize
		if _, err := s.Unfollow(ctx, b, c); err != nil {
			t.Fatal(err)
		}
		got, err := s.PushedFeedPostIDs(ctx, b, high, low, 0, 0, 100)
		wantIDs(t, "PushedFeedPostIDs of pulled b", got, err, nil)
		got, err = s.PushedFeedPostIDs(ctx, a, high, low, 0, 0, 100)
		wantIDs(t, "PushedFeedPostIDs of pushed a: its own posts", got, err, ats(14, 10))
		for _, tc := range []struct {
			after, before int64
			want          []int64
		}{
			{0, 0, []int64{17, 14, 13, 10}},
			{13, 0, []int64{17, 14}},
			{0, 17, []int64{14, 13, 10}},
		} {
			got, err := s.PushedFeedPostIDs(ctx, reader, high, low, at(tc.after), at(tc.before), 100)
			wantIDs(t, fmt.Sprintf("PushedFeedPostIDs(%d, %d)", tc.after, tc.before), got, err, ats(tc.want...))
		}
		// c back to push: its posts are in the inbox's query at once.
		if _, err := s.SetPullMode(ctx, c, false, 0); err != nil {
			t.Fatal(err)
		}
		got, err = s.PushedFeedPostIDs(ctx, reader, high, low, 0, 0, 100)
		wantIDs(t, "PushedFeedPostIDs after c turned push", got, err, ats(17, 16, 14, 13, 12, 10))
		got, err = s.PushedFeedPostIDs(ctx, reader, high, low, at(11), 0, 100)
		wantIDs(t, "PushedFeedPostIDs(11, 0) after c turned push", got, err, ats(17, 16, 14, 13, 12))
	})
}

func testRelay(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1)

	calls := 0
	count := func(context.Context, []feed.OutboxEvent) error { calls++; return nil }
	if n, err := s.RelayOutbox(ctx, 10, count); err != nil || n != 0 || calls != 0 {
		t.Fatalf("RelayOutbox of an empty outbox: got %d, %v, %d publish calls; want 0, nil, 0", n, err, calls)
	}
	wantOldest := func(what string, wantN int64, from, to time.Time) {
		t.Helper()
		n, oldest, err := s.OutboxOldest(ctx)
		if err != nil || n != wantN || (n == 0) != oldest.IsZero() ||
			(n > 0 && (oldest.Before(from.Truncate(time.Millisecond)) || oldest.After(to))) {
			t.Fatalf("OutboxOldest %s: got %d, %v, %v; want %d written between %v and %v", what, n, oldest, err, wantN, from, to)
		}
	}
	wantOldest("of an empty outbox", 0, time.Time{}, time.Time{})
	before := time.Now()
	for id := int64(1); id <= 3; id++ {
		mustPost(t, s, id, 1)
		if id == 1 {
			time.Sleep(5 * time.Millisecond) // the first is the oldest by a margin
		}
	}
	first := time.Now()
	wantOldest("of three posts", 3, before, first)

	errBroker := errors.New("broker down")
	n, err := s.RelayOutbox(ctx, 10, func(context.Context, []feed.OutboxEvent) error { return errBroker })
	if !errors.Is(err, errBroker) || n != 0 {
		t.Fatalf("RelayOutbox with a failing publish: got %d, %v; want 0, %v", n, err, errBroker)
	}
	if got, err := s.OutboxBacklog(ctx); err != nil || got != 3 {
		t.Fatalf("OutboxBacklog after a failed publish: got %d, %v; want 3", got, err)
	}

	var published []feed.OutboxEvent
	collect := func(_ context.Context, evs []feed.OutboxEvent) error {
		published = append(published, evs...)
		return nil
	}
	if n, err := s.RelayOutbox(ctx, 2, collect); err != nil || n != 2 {
		t.Fatalf("RelayOutbox(2): got %d, %v; want 2", n, err)
	}
	if got, err := s.OutboxBacklog(ctx); err != nil || got != 1 {
		t.Fatalf("OutboxBacklog: got %d, %v; want 1", got, err)
	}
	wantOldest("with the third left", 1, before.Add(5*time.Millisecond), first)
	if n, err := s.RelayOutbox(ctx, 2, collect); err != nil || n != 1 {
		t.Fatalf("RelayOutbox(2) again: got %d, %v; want 1", n, err)
	}
	if n, err := s.RelayOutbox(ctx, 2, collect); err != nil || n != 0 {
		t.Fatalf("RelayOutbox of a drained outbox: got %d, %v; want 0", n, err)
	}
	wantOldest("of a drained outbox", 0, time.Time{}, time.Time{})
	var postIDs []int64
	for i, ob := range published {
		ev, err := feed.DecodeEvent(ob.Payload)
		if err != nil {
			t.Fatalf("payload %q: %v", ob.Payload, err)
		}
		if i > 0 && ob.ID <= published[i-1].ID {
			t.Fatalf("outbox ids: got %d after %d; want ascending", ob.ID, published[i-1].ID)
		}
		postIDs = append(postIDs, ev.PostID)
	}
	wantIDs(t, "relayed post ids", postIDs, nil, []int64{1, 2, 3})
	if n, err := s.RelayOutbox(ctx, 0, collect); err != nil || n != 0 {
		t.Fatalf("RelayOutbox(0): got %d, %v; want 0", n, err)
	}

	// Purge takes sent rows only, and only those sent before the time.
	mustPost(t, s, 4, 1)
	if n, err := s.SweepOutbox(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("SweepOutbox(an hour ago): got %d, %v; want 0", n, err)
	}
	if n, err := s.SweepOutbox(ctx, time.Now().Add(time.Second)); err != nil || n != 3 {
		t.Fatalf("SweepOutbox(now): got %d, %v; want 3", n, err)
	}
	if got, err := s.OutboxBacklog(ctx); err != nil || got != 1 {
		t.Fatalf("OutboxBacklog after purge: got %d, %v; want 1", got, err)
	}
	published = nil
	if n, err := s.RelayOutbox(ctx, 10, collect); err != nil || n != 1 || published[0].ID <= 3 {
		t.Fatalf("RelayOutbox after purge: got %d, %v, %v; want one new event", n, err, published)
	}

	// Purging more than one chunk.
	var ids []int64
	for id := int64(1); id <= sweepChunk+5; id++ {
		ids = append(ids, id)
	}
	bulkInsert(t, s, "INSERT INTO outbox (payload, created_at, sent_at) VALUES ", "('{}', 0, ?)", ids)
	if n, err := s.SweepOutbox(ctx, time.UnixMilli(sweepChunk+3)); err != nil || n != sweepChunk+2 {
		t.Fatalf("SweepOutbox over chunks: got %d, %v; want %d", n, err, sweepChunk+2)
	}

	if e.backend == "mysql" {
		// A relay waiting for the broker must not hold up the write path.
		mustPost(t, s, 5, 1)
		claimed, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := s.RelayOutbox(ctx, 10, func(context.Context, []feed.OutboxEvent) error {
				close(claimed)
				<-release
				return nil
			})
			done <- err
		}()
		<-claimed
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _, err := s.CreatePost(wctx, feed.Post{ID: 6, AuthorID: 1, CreatedAt: time.Now()}, feed.Idempotency{})
		cancel()
		close(release)
		if err != nil {
			t.Fatalf("CreatePost while a relay publishes: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("RelayOutbox: %v", err)
		}
		if got, err := s.OutboxBacklog(ctx); err != nil || got != 1 {
			t.Fatalf("OutboxBacklog: got %d, %v; want 1 (the post made during the relay)", got, err)
		}
	}
}

// testRelayConcurrent drains the outbox with several relays at once: each
// event is published exactly once.
func testRelayConcurrent(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1)
	const events = 500
	var wg sync.WaitGroup
	var failed atomic.Value
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < events; i += 8 {
				if _, _, err := s.CreatePost(ctx, feed.Post{ID: int64(1 + i), AuthorID: 1, CreatedAt: time.Now()}, feed.Idempotency{}); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[int64]int{}
	batches := 0
	var inFlight, maxInFlight atomic.Int64
	for range 4 {
		wg.Go(func() {
			for {
				n, err := s.RelayOutbox(ctx, 20, func(_ context.Context, evs []feed.OutboxEvent) error {
					mu.Lock()
					batches++
					for _, ob := range evs {
						ev, err := feed.DecodeEvent(ob.Payload)
						if err != nil {
							mu.Unlock()
							return err
						}
						seen[ev.PostID]++
					}
					mu.Unlock()
					cur := inFlight.Add(1)
					for m := maxInFlight.Load(); cur > m && !maxInFlight.CompareAndSwap(m, cur); m = maxInFlight.Load() {
					}
					time.Sleep(5 * time.Millisecond) // the broker's confirm
					inFlight.Add(-1)
					return nil
				})
				if err != nil {
					failed.Store(err)
					return
				}
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	if len(seen) != events {
		t.Fatalf("published %d distinct events; want %d", len(seen), events)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("event of post %d published %d times; want once", id, c)
		}
	}
	if got, err := s.OutboxBacklog(ctx); err != nil || got != 0 {
		t.Fatalf("OutboxBacklog after the drain: got %d, %v; want 0", got, err)
	}
	// On MySQL the relays publish side by side (SKIP LOCKED); on SQLite
	// the write transaction takes them one at a time.
	if e.backend == "mysql" && maxInFlight.Load() < 2 {
		t.Fatalf("relays publishing at once: got at most %d; want several", maxInFlight.Load())
	}
	t.Logf("%d events in %d batches, up to %d relays publishing at once", events, batches, maxInFlight.Load())
}

// testBulkLoad: the bulk load trusts its caller (counts as given, posts
// without outbox events), and a call with a key that exists fails and
// leaves nothing of itself.
func testBulkLoad(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	if any, err := s.AnyUsers(ctx); err != nil || any {
		t.Fatalf("AnyUsers of an empty store = %v, %v; want false", any, err)
	}
	users := []feed.User{{ID: 1, Name: "a", FollowerCount: 1}, {ID: 2, Name: "b", FollowingCount: 1}}
	if err := s.BulkLoadUsers(ctx, users); err != nil {
		t.Fatalf("BulkLoadUsers: %v", err)
	}
	if err := s.BulkLoadFollows(ctx, [][2]int64{{2, 1}}); err != nil {
		t.Fatalf("BulkLoadFollows: %v", err)
	}
	wantCounts(t, s, 1, 1, 0)
	wantCounts(t, s, 2, 0, 1)
	id := feed.NewIDGen(time.Now).Next()
	if err := s.BulkLoadPosts(ctx, []feed.Post{{ID: id, AuthorID: 1, Content: "old"}}); err != nil {
		t.Fatalf("BulkLoadPosts: %v", err)
	}
	if p, err := s.Post(ctx, id); err != nil || p.Content != "old" {
		t.Fatalf("Post after BulkLoadPosts = %+v, %v", p, err)
	}
	if n, err := s.OutboxBacklog(ctx); err != nil || n != 0 {
		t.Fatalf("outbox backlog %d, %v; want no event", n, err)
	}
	if any, err := s.AnyUsers(ctx); err != nil || !any {
		t.Fatalf("AnyUsers = %v, %v; want true", any, err)
	}
	// User 3 is new, user 2 is not: neither is stored.
	wantCode(t, s.BulkLoadUsers(ctx, []feed.User{{ID: 3, Name: "c"}, {ID: 2, Name: "b"}}), feed.ECONFLICT)
	if got, err := s.Users(ctx, []int64{3}); err != nil || len(got) != 0 {
		t.Fatalf("Users(3) = %v, %v; want none", got, err)
	}
	wantCode(t, s.BulkLoadFollows(ctx, [][2]int64{{1, 1}}), feed.EINVALID)

	// A load of more rows than one INSERT statement takes (loadChunk)
	// stores them all; PostgreSQL takes it as COPY, not as INSERTs.
	verbs := func() map[string]int64 {
		m := map[string]int64{}
		for _, c := range s.Statements() {
			m[c.Verb] += c.N
		}
		return m
	}
	before := verbs()
	var many []feed.User
	var edges [][2]int64
	for id := int64(10); id < 10+2*loadChunk+10; id++ {
		many = append(many, feed.User{ID: id, Name: fmt.Sprint(id), FollowingCount: 1})
		edges = append(edges, [2]int64{id, 1})
	}
	if err := s.BulkLoadUsers(ctx, many); err != nil {
		t.Fatalf("BulkLoadUsers(%d): %v", len(many), err)
	}
	if err := s.BulkLoadFollows(ctx, edges); err != nil {
		t.Fatalf("BulkLoadFollows(%d): %v", len(edges), err)
	}
	var n int
	if err := s.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM follows WHERE followee_id = 1").Scan(&n); err != nil || n != len(edges)+1 {
		t.Fatalf("followers of 1 after the load: %d, %v; want %d", n, err, len(edges)+1)
	}
	if after := verbs(); e.backend == "postgres" && (after["copy"]-before["copy"] != 2 || after["insert"] != before["insert"]) {
		t.Errorf("statements before the loads %v, after %v; want 2 more copy and no more insert", before, after)
	}
	if err := s.BulkLoadDone(ctx); err != nil {
		t.Fatalf("BulkLoadDone: %v", err)
	}
	if e.backend == "postgres" {
		// The planner has statistics and the visibility map is set.
		var vacuumed, analyzed bool
		if err := s.rdb.QueryRowContext(ctx, "SELECT last_vacuum IS NOT NULL, last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'follows'").
			Scan(&vacuumed, &analyzed); err != nil || !vacuumed || !analyzed {
			t.Errorf("follows after BulkLoadDone: vacuumed %v, analyzed %v, %v; want both", vacuumed, analyzed, err)
		}
	}
}
