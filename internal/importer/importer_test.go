package importer_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/importer"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// The SQL store is the importer's Store.
var _ importer.Store = (*sqlstore.Store)(nil)

// stores runs fn on the embedded SQLite store, on MariaDB and on
// PostgreSQL.
func stores(t *testing.T, fn func(t *testing.T, s *sqlstore.Store)) {
	for _, st := range []struct {
		name string
		open func(t *testing.T) (*sqlstore.Store, error)
	}{
		{"sqlite", func(t *testing.T) (*sqlstore.Store, error) {
			return sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "feedd.db"))
		}},
		{"mysql", func(t *testing.T) (*sqlstore.Store, error) {
			return sqlstore.OpenMySQL(t.Context(), testenv.CreateDatabase(t, "feedd_import_"))
		}},
		{"postgres", func(t *testing.T) (*sqlstore.Store, error) {
			return sqlstore.OpenPostgres(t.Context(), testenv.CreatePostgresDatabase(t, "feedd_import_"))
		}},
	} {
		t.Run(st.name, func(t *testing.T) {
			s, err := st.open(t)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			fn(t, s)
		})
	}
}

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// data is a small app's export, with a bad line of each sort among good
// ones. Users 1..4; 1 follows 2 and 3; 2 follows 3; 4 follows 3.
var data = map[importer.Kind]string{
	importer.Users: lines(
		`{"id":"1","name":"alice"}`,
		`{"id":"2","name":"bob"}`,
		`{"id":"3","name":"carol"}`,
		`{"id":"4","name":"dave"}`,
		`{"id":"5","name":""}`,     // 5: empty name
		`{"id":"-6","name":"eve"}`, // 6: not an id
		`{"id":"7",`,               // 7: malformed
	),
	importer.Follows: lines(
		`{"follower_id":"1","followee_id":"2"}`,
		`{"follower_id":"1","followee_id":"3"}`,
		`{"follower_id":"2","followee_id":"3"}`,
		`{"follower_id":"1","followee_id":"2"}`, // 4: the same edge again
		`{"follower_id":"4","followee_id":"3"}`,
		`{"follower_id":"4","followee_id":"99"}`, // 6: unknown user
		`{"follower_id":"4","followee_id":"4"}`,  // 7: self
	),
	importer.Posts: lines(
		`{"author_id":"3","external_id":"c-1","content":"carol in 2010","created_at":"2010-05-01T12:00:00Z"}`,
		`{"author_id":"3","external_id":"c-2","content":"carol in 2024","created_at":"2024-06-01T08:30:00.5+02:00","data":{"kind":"photo","n":1}}`,
		`{"author_id":"2","external_id":"b-1","content":"bob in 2012","created_at":"2012-01-01T00:00:00Z"}`,
		`{"author_id":"2","external_id":"b-0","content":"bob, same millisecond","created_at":"2012-01-01T00:00:00Z"}`,
		`{"author_id":"99","external_id":"x","content":"nobody","created_at":"2012-01-01T00:00:00Z"}`,   // 5: unknown author
		`{"author_id":"2","external_id":"b-2","content":"","created_at":"2012-01-01T00:00:00Z"}`,        // 6: empty content
		`{"author_id":"2","external_id":"b-3","content":"too old","created_at":"1999-01-01T00:00:00Z"}`, // 7: before 2006
		`{"author_id":"2","external_id":"b-4","content":"bad data","created_at":"2012-01-01T00:00:00Z","data":[1]}`,
		``,
	),
	importer.Likes: lines(
		`{"user_id":"1","author_id":"3","external_id":"c-1"}`,
		`{"user_id":"2","author_id":"3","external_id":"c-1"}`,
		`{"user_id":"4","author_id":"3","external_id":"c-1"}`,
		`{"user_id":"1","author_id":"2","external_id":"b-1"}`,
		`{"user_id":"1","author_id":"3","external_id":"c-1"}`,  // 5: again
		`{"user_id":"1","author_id":"3","external_id":"nope"}`, // 6: unknown post
		`{"user_id":"98","author_id":"3","external_id":"c-2"}`, // 7: unknown user
	),
}

func sources(kinds ...importer.Kind) []importer.Source {
	var out []importer.Source
	for _, k := range kinds {
		out = append(out, importer.Source{Kind: k, Name: string(k) + ".jsonl", R: strings.NewReader(data[k])})
	}
	return out
}

func counts(sum importer.Summary) map[importer.Kind]importer.Counts {
	out := map[importer.Kind]importer.Counts{}
	for k, c := range sum.Counts {
		out[k] = *c
	}
	return out
}

// importCache is what testImport reads and primes of a cache, besides
// what the import corrects.
type importCache interface {
	feed.Inboxes
	feed.KV
	importer.LikeCounters
	FillLikeCounts(ctx context.Context, tallies map[int64]feed.LikeTally, ttl time.Duration) error
	LikeStates(ctx context.Context, reader int64, posts []int64, postTimes []time.Time, counted []int64, ttl time.Duration) (feed.LikeStates, error)
}

func TestImport(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		cache := inmemcache.New(inmemcache.Options{})
		t.Cleanup(func() { cache.Close() })
		testImport(t, s, cache)
	})
}

// TestImportRedis is TestImport's run with the deployment's Redis, whose
// inboxes, counters and like sets the import corrects a pipeline at a
// time (one store: the cache calls are the same whatever the SQL).
func TestImportRedis(t *testing.T) {
	ctx := t.Context()
	opts, err := redis.ParseURL(cmp.Or(os.Getenv("FEEDD_TEST_REDIS_URL"), "redis://127.0.0.1:6379/1"))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	if err := client.Ping(ctx).Err(); err != nil {
		feedtest.Missing(t, "Redis at %s (FEEDD_TEST_REDIS_URL): %v", opts.Addr, err)
	}
	prefix := fmt.Sprintf("importtest%d:", time.Now().UnixNano())
	t.Cleanup(func() {
		keys, err := client.Keys(context.Background(), prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = client.Del(context.Background(), keys...).Err()
		}
		if err != nil {
			t.Errorf("deleting the test's keys %s*: %v", prefix, err)
		}
	})
	s, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "feedd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	testImport(t, s, rediscache.New(client, rediscache.Options{Prefix: prefix}))
}

func testImport(t *testing.T, s *sqlstore.Store, cache importCache) {
	ctx := t.Context()
	// Readers with inboxes, and a cached like counter, before the
	// import: the import must not leave them stale.
	for _, r := range []int64{1, 2, 3, 4} {
		if err := cache.FillInbox(ctx, r, nil, true, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	caches := importer.Caches{Inboxes: cache, Likes: cache, KV: cache, InboxTTL: time.Hour, LikeCountTTL: time.Hour}
	var bad strings.Builder
	// The kinds in the wrong order: the run takes them in its own.
	sum, err := importer.Run(ctx, s, caches, importer.Options{Bad: &bad, Batch: 3},
		sources(importer.Likes, importer.Posts, importer.Follows, importer.Users))
	if !errors.Is(err, importer.ErrSkipped) {
		t.Fatalf("Run: %v; want ErrSkipped", err)
	}
	want := map[importer.Kind]importer.Counts{
		importer.Users:   {Read: 7, Imported: 4, Skipped: 3},
		importer.Follows: {Read: 7, Imported: 4, Unchanged: 1, Skipped: 2},
		importer.Posts:   {Read: 8, Imported: 4, Skipped: 4},
		importer.Likes:   {Read: 7, Imported: 4, Unchanged: 1, Skipped: 2},
	}
	if got := counts(sum); !equal(got, want) {
		t.Errorf("summary %v; want %v", got, want)
	}
	for _, line := range []string{
		"users.jsonl:5: name is required",
		"users.jsonl:6: \"-6\" is not a user id",
		"users.jsonl:7: malformed JSON",
		"follows.jsonl:6: unknown user: 4 or 99 does not exist",
		"follows.jsonl:7: a user cannot follow themselves",
		"posts.jsonl:5: unknown user: author 99 does not exist",
		"posts.jsonl:6: content is required",
		"posts.jsonl:7: created_at 1999-01-01T00:00:00Z is outside",
		"posts.jsonl:8: data must be a JSON object, not an array",
		"likes.jsonl:6: unknown post: author 3 has no post \"nope\"",
		"likes.jsonl:7: unknown user: 98 does not exist",
	} {
		if !strings.Contains(bad.String(), line) {
			t.Errorf("bad lines lack %q; got:\n%s", line, bad.String())
		}
	}
	if n := strings.Count(bad.String(), "\n"); n != 11 {
		t.Errorf("%d bad lines reported; want 11:\n%s", n, bad.String())
	}
	checkStore(t, s)
	// The inboxes of the readers whose feeds changed are gone: 1, 2
	// and 4 follow someone new (and 2 and 3, who have new posts, are
	// followed by 1, 2 and 4). 3 follows no one: its inbox stays.
	for r, dropped := range map[int64]bool{1: true, 2: true, 3: false, 4: true} {
		if p, err := cache.InboxPage(ctx, r, 0, 10); err != nil || p.Exists == dropped {
			t.Errorf("inbox of %d: exists %v, err %v; want it dropped: %v", r, p.Exists, err, dropped)
		}
	}

	// Again, the whole set: nothing changes.
	bad.Reset()
	sum, err = importer.Run(ctx, s, caches, importer.Options{Bad: &bad},
		sources(importer.Users, importer.Follows, importer.Posts, importer.Likes))
	if !errors.Is(err, importer.ErrSkipped) {
		t.Fatalf("second Run: %v; want ErrSkipped", err)
	}
	want = map[importer.Kind]importer.Counts{
		importer.Users:   {Read: 7, Unchanged: 4, Skipped: 3},
		importer.Follows: {Read: 7, Unchanged: 5, Skipped: 2},
		importer.Posts:   {Read: 8, Unchanged: 4, Skipped: 4},
		importer.Likes:   {Read: 7, Unchanged: 5, Skipped: 2},
	}
	if got := counts(sum); !equal(got, want) {
		t.Errorf("second summary %v; want %v", got, want)
	}
	checkStore(t, s)

	// A cached like counter moves with the likes an import adds.
	ids, err := s.PostIDsByExternalID(ctx, []feed.ExternalKey{{AuthorID: 3, ExternalID: "c-1"}})
	if err != nil {
		t.Fatal(err)
	}
	c1 := ids[feed.ExternalKey{AuthorID: 3, ExternalID: "c-1"}]
	tallies, err := s.LikeTallies(ctx, []int64{c1})
	if err != nil || tallies[c1].Count != 3 {
		t.Fatalf("SQL's tally of c-1 before: %+v, %v; want a count of 3", tallies, err)
	}
	if err := cache.FillLikeCounts(ctx, tallies, time.Hour); err != nil {
		t.Fatal(err)
	}
	_, err = importer.Run(ctx, s, caches, importer.Options{}, []importer.Source{{Kind: importer.Likes, Name: "more",
		R: strings.NewReader(`{"user_id":"3","author_id":"3","external_id":"c-1"}` + "\n")}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := cache.LikeStates(ctx, 0, nil, nil, []int64{c1}, time.Hour)
	if n, cached := st.Counts[c1]; err != nil || !cached || n != 4 {
		t.Errorf("cached like count of c-1: %d (cached %v, err %v); want 4", n, cached, err)
	}
}

func equal(a, b map[importer.Kind]importer.Counts) bool {
	for _, k := range importer.Kinds {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

// checkStore checks what the import of data stored: counts, posts in time
// order with their ids, likes.
func checkStore(t *testing.T, s *sqlstore.Store) {
	t.Helper()
	ctx := t.Context()
	users, err := s.Users(ctx, []int64{1, 2, 3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	type fc struct{ followers, following int64 }
	want := map[int64]fc{1: {0, 2}, 2: {1, 1}, 3: {3, 0}, 4: {0, 1}}
	if len(users) != 4 {
		t.Errorf("%d users; want 4", len(users))
	}
	for id, w := range want {
		if got := (fc{users[id].FollowerCount, users[id].FollowingCount}); got != w {
			t.Errorf("user %d: followers, following = %v; want %v", id, got, w)
		}
	}
	if users[1].Name != "alice" {
		t.Errorf("user 1 is named %q; want alice", users[1].Name)
	}
	key := func(author int64, ext string) feed.ExternalKey {
		return feed.ExternalKey{AuthorID: author, ExternalID: ext}
	}
	ids, err := s.PostIDsByExternalID(ctx, []feed.ExternalKey{key(3, "c-1"), key(3, "c-2"), key(2, "b-1"), key(2, "b-0")})
	if err != nil {
		t.Fatal(err)
	}
	c1, c2, b1, b0 := ids[key(3, "c-1")], ids[key(3, "c-2")], ids[key(2, "b-1")], ids[key(2, "b-0")]
	// Ids from created_at: history before 2025 is negative, in time
	// order; two posts of one millisecond get two ids of it.
	if !(c1 < b1 && b1 < c2 && c2 < 0 && b0 < c2 && c1 < b0 && b0 != b1) {
		t.Errorf("ids c-1 %d, b-1 %d, b-0 %d, c-2 %d; want negative, in time order", c1, b1, b0, c2)
	}
	for _, c := range []struct {
		id   int64
		at   string
		data string
	}{{c1, "2010-05-01T12:00:00Z", ""}, {c2, "2024-06-01T06:30:00.5Z", `{"kind":"photo","n":1}`}, {b1, "2012-01-01T00:00:00Z", ""}} {
		p, err := s.Post(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.CreatedAt.UTC().Format(time.RFC3339Nano); got != c.at || p.Data != c.data {
			t.Errorf("post %d: created %s data %q; want %s %q", c.id, got, p.Data, c.at, c.data)
		}
		if got := feed.IDTime(c.id).Format(time.RFC3339Nano); got != c.at {
			t.Errorf("post %d's id says %s; want %s", c.id, got, c.at)
		}
	}
	likes, err := s.LikeCounts(ctx, []int64{c1, c2, b1})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int64]int64{c1: 3, c2: 0, b1: 1}; fmt.Sprint(likes) != fmt.Sprint(want) {
		t.Errorf("like counts %v; want %v", likes, want)
	}
	liked, err := s.UserLikes(ctx, 1, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, l := range liked {
		got = append(got, l.Post)
	}
	if !slices.Equal(got, []int64{b1, c1}) {
		t.Errorf("user 1 likes %v; want %v, newest post first", got, []int64{b1, c1})
	}
}

// TestImportStrict: --strict stops at the first bad line, after storing
// the lines before it, and reads no further.
func TestImportStrict(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		var bad strings.Builder
		_, err := importer.Run(t.Context(), s, importer.Caches{}, importer.Options{Bad: &bad, Strict: true}, sources(importer.Users))
		var le *importer.LineError
		if !errors.As(err, &le) || le.File != "users.jsonl" || le.Line != 5 {
			t.Fatalf("Run: %v; want the LineError of users.jsonl:5", err)
		}
		if n := strings.Count(bad.String(), "\n"); n != 1 {
			t.Errorf("%d bad lines reported; want 1:\n%s", n, bad.String())
		}
		users, err := s.Users(t.Context(), []int64{1, 2, 3, 4})
		if err != nil || len(users) != 4 {
			t.Errorf("%d users stored, err %v; want the 4 before the bad line", len(users), err)
		}
		// A bad line found only by the store (an unknown user) stops
		// the run too, before the next batch.
		follows := "{\"follower_id\":\"1\",\"followee_id\":\"2\"}\n{\"follower_id\":\"1\",\"followee_id\":\"77\"}\n{\"follower_id\":\"2\",\"followee_id\":\"3\"}\n"
		_, err = importer.Run(t.Context(), s, importer.Caches{}, importer.Options{Strict: true, Batch: 2},
			[]importer.Source{{Kind: importer.Follows, Name: "f", R: strings.NewReader(follows)}})
		if !errors.As(err, &le) || le.Line != 2 {
			t.Fatalf("Run: %v; want the LineError of f:2", err)
		}
		u, err := s.User(t.Context(), 3)
		if err != nil || u.FollowerCount != 0 {
			t.Errorf("user 3 has %d followers (err %v); want 0: the run stopped before line 3", u.FollowerCount, err)
		}
	})
}

// TestImportRefusesUnknownKeys: a line with a key its kind does not have
// (a typo would lose the key's value) stops the run whatever the mode,
// naming the line and the key, and nothing of its batch is written; so
// does an export given as a file of one kind.
func TestImportRefusesUnknownKeys(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		ctx := t.Context()
		if _, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{}, []importer.Source{
			{Kind: importer.Users, Name: "u", R: strings.NewReader(`{"id":"1","name":"alice"}` + "\n")}}); err != nil {
			t.Fatal(err)
		}
		posts := lines(
			`{"author_id":"1","external_id":"a","content":"one","created_at":"2020-01-01T00:00:00Z"}`,
			`{"author_id":"1","external_id":"b","content":"two","created_at":"2020-01-01T00:00:00Z","dta":{"x":1}}`,
			`{"author_id":"1","external_id":"c","content":"three","created_at":"2020-01-01T00:00:00Z"}`,
		)
		for _, strict := range []bool{false, true} {
			var bad strings.Builder
			_, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{Bad: &bad, Strict: strict},
				[]importer.Source{{Kind: importer.Posts, Name: "posts.jsonl", R: strings.NewReader(posts)}})
			var le *importer.LineError
			if !errors.As(err, &le) || le.File != "posts.jsonl" || le.Line != 2 || !strings.Contains(le.Reason, `unknown key "dta"`) {
				t.Fatalf("strict %v: Run: %v; want the LineError of posts.jsonl:2 naming the key dta", strict, err)
			}
			if !strings.Contains(bad.String(), `posts.jsonl:2: unknown key "dta"`) {
				t.Errorf("strict %v: reported %q; want posts.jsonl:2 and the key", strict, bad.String())
			}
			ids, err := s.PostIDsByExternalID(ctx, []feed.ExternalKey{{AuthorID: 1, ExternalID: "a"}, {AuthorID: 1, ExternalID: "b"}, {AuthorID: 1, ExternalID: "c"}})
			if err != nil || len(ids) != 0 {
				t.Fatalf("strict %v: posts stored %v (err %v); want none of the batch", strict, ids, err)
			}
		}

		// An export given as a file of users.
		export := lines(`{"kind":"user","id":"2","name":"bob"}`, `{"kind":"profile","user_id":"2","created_at":"2020-01-01T00:00:00Z","follower_count":0,"following_count":0}`)
		_, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{},
			[]importer.Source{{Kind: importer.Users, Name: "bob.jsonl", R: strings.NewReader(export)}})
		var le *importer.LineError
		if !errors.As(err, &le) || le.Line != 1 || !strings.Contains(le.Reason, "--export bob.jsonl") {
			t.Fatalf("Run(an export as users): %v; want the LineError of line 1 pointing to --export", err)
		}
		if u, err := s.Users(ctx, []int64{2}); err != nil || len(u) != 0 {
			t.Errorf("users stored %v (err %v); want none", u, err)
		}
	})
}

// TestImportConcurrentFollows: follows made through the store while an
// import adds edges to the same users leave exact counts.
func TestImportConcurrentFollows(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		ctx := t.Context()
		const n = 300
		var users strings.Builder
		var follows strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&users, "{\"id\":\"%d\",\"name\":\"u%d\"}\n", i, i)
			if i > 1 {
				fmt.Fprintf(&follows, "{\"follower_id\":\"%d\",\"followee_id\":\"1\"}\n", i)
				fmt.Fprintf(&follows, "{\"follower_id\":\"1\",\"followee_id\":\"%d\"}\n", i)
			}
		}
		if _, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{}, []importer.Source{{Kind: importer.Users, Name: "u", R: strings.NewReader(users.String())}}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			var err error
			for i := 2; i <= n && err == nil; i += 3 {
				_, err = s.Follow(context.WithoutCancel(ctx), int64(i), 1)
				if err == nil && i%2 == 0 {
					_, err = s.Unfollow(context.WithoutCancel(ctx), int64(i), 1)
				}
			}
			done <- err
		}()
		_, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{Batch: 50, Writers: 3},
			[]importer.Source{{Kind: importer.Follows, Name: "f", R: strings.NewReader(follows.String())}})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		followers, err := s.Followers(ctx, 1, 0, 2*n)
		if err != nil {
			t.Fatal(err)
		}
		u, err := s.User(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if u.FollowerCount != int64(len(followers)) || u.FollowingCount != n-1 {
			t.Errorf("user 1: %d followers counted, %d edges; following %d, want %d", u.FollowerCount, len(followers), u.FollowingCount, n-1)
		}
	})
}

// TestImportConcurrentBlocks: blocks and account deletions made while
// an import with several writers adds edges between the same users
// leave no edge across a block, no edge imported for a user deleted
// before its batch, and exact counts (a batch meets them either before
// its insert or under its users' locks at its end).
func TestImportConcurrentBlocks(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		ctx := t.Context()
		const n = 400
		var users, follows strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&users, "{\"id\":\"%d\",\"name\":\"u%d\"}\n", i, i)
		}
		// Everyone follows users 1..5, and 1..5 follow everyone.
		for i := 1; i <= n; i++ {
			for k := int64(1); k <= 5; k++ {
				if int64(i) != k {
					fmt.Fprintf(&follows, "{\"follower_id\":\"%d\",\"followee_id\":\"%d\"}\n", i, k)
					fmt.Fprintf(&follows, "{\"follower_id\":\"%d\",\"followee_id\":\"%d\"}\n", k, i)
				}
			}
		}
		if _, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{}, []importer.Source{{Kind: importer.Users, Name: "u", R: strings.NewReader(users.String())}}); err != nil {
			t.Fatal(err)
		}
		// Users 1..5 block every seventh user, and every eleventh user
		// deletes their account, while the import runs.
		var blocked, deleted []int64
		done := make(chan error, 1)
		go func() {
			var err error
			for i := int64(6); i <= n && err == nil; i++ {
				switch {
				case i%7 == 0:
					_, err = s.Block(context.WithoutCancel(ctx), 1+i%5, i)
					blocked = append(blocked, i)
				case i%11 == 0:
					_, _, err = s.DeleteUser(context.WithoutCancel(ctx), i)
					deleted = append(deleted, i)
				}
			}
			done <- err
		}()
		// Edges across a block or to a deleted user are skipped lines.
		_, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{Batch: 40, Writers: 3},
			[]importer.Source{{Kind: importer.Follows, Name: "f", R: strings.NewReader(follows.String())}})
		if err != nil && !errors.Is(err, importer.ErrSkipped) {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// Run it again, now that every block and deletion is in: it adds
		// nothing across a block nor for a deleted user, and the counts
		// stay exact.
		sum, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{Batch: 40, Writers: 3},
			[]importer.Source{{Kind: importer.Follows, Name: "f", R: strings.NewReader(follows.String())}})
		if !errors.Is(err, importer.ErrSkipped) {
			t.Fatalf("second run: %v; want the blocked and deleted users' edges skipped", err)
		}
		if got := sum.Counts[importer.Follows].Imported; got != 0 {
			t.Errorf("second run imported %d edges; want 0", got)
		}
		db := s.DB()
		for _, b := range blocked {
			var edges int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM follows WHERE (follower_id = ? AND followee_id = ?) OR (follower_id = ? AND followee_id = ?)",
				1+b%5, b, b, 1+b%5).Scan(&edges); err != nil {
				t.Fatal(err)
			}
			if edges != 0 {
				t.Errorf("%d edges between user %d and user %d, who blocked them", edges, 1+b%5, b)
			}
		}
		var wrong int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM users u WHERE u.deleted_at IS NULL AND (
			follower_count <> (SELECT COUNT(*) FROM follows f WHERE f.followee_id = u.id) OR
			following_count <> (SELECT COUNT(*) FROM follows f WHERE f.follower_id = u.id))`).Scan(&wrong); err != nil {
			t.Fatal(err)
		}
		if wrong != 0 {
			t.Errorf("%d live users' counts differ from their edges", wrong)
		}
		// The import before the deletions added some of these users'
		// edges; a purge removes them. The second run added none.
		var live int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM users WHERE deleted_at IS NULL").Scan(&live); err != nil {
			t.Fatal(err)
		}
		if want := n - len(deleted); live != want {
			t.Errorf("%d live users; want %d", live, want)
		}
		u, err := s.User(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		var wantFollowing int64
		for i := int64(2); i <= n; i++ {
			if (i%7 == 0 && 1+i%5 == 1) || (i%11 == 0 && i%7 != 0) {
				continue
			}
			wantFollowing++
		}
		var deletedEdges int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM follows f JOIN users u ON u.id = f.followee_id WHERE f.follower_id = 1 AND u.deleted_at IS NOT NULL").Scan(&deletedEdges); err != nil {
			t.Fatal(err)
		}
		if got := u.FollowingCount - deletedEdges; got != wantFollowing {
			t.Errorf("user 1 follows %d live users; want %d", got, wantFollowing)
		}
	})
}

// TestImportConcurrentLikes: likes and unlikes made while an import with
// several writers brings likes of the same posts, and a run cut short
// then run again (batches that meet some of their rows), leave every
// post's like count equal to its likers.
func TestImportConcurrentLikes(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		ctx := t.Context()
		const n, posts = 200, 5
		var users, postLines, likes strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&users, "{\"id\":\"%d\",\"name\":\"u%d\"}\n", i, i)
		}
		for k := 1; k <= posts; k++ {
			fmt.Fprintf(&postLines, "{\"author_id\":\"1\",\"external_id\":\"p-%d\",\"content\":\"post %d\",\"created_at\":\"2020-01-0%dT00:00:00Z\"}\n", k, k, k)
		}
		for i := 2; i <= n; i++ {
			for k := 1; k <= posts; k++ {
				fmt.Fprintf(&likes, "{\"user_id\":\"%d\",\"author_id\":\"1\",\"external_id\":\"p-%d\"}\n", i, k)
			}
		}
		_, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{}, []importer.Source{
			{Kind: importer.Users, Name: "u", R: strings.NewReader(users.String())},
			{Kind: importer.Posts, Name: "p", R: strings.NewReader(postLines.String())},
		})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := s.PostIDsByExternalID(ctx, []feed.ExternalKey{{AuthorID: 1, ExternalID: "p-1"}, {AuthorID: 1, ExternalID: "p-3"}})
		if err != nil || len(ids) != 2 {
			t.Fatalf("posts: %v, %v", ids, err)
		}
		// A first run cut short: a third of the likes, so that the full
		// run's batches meet rows of some of their pairs.
		all := likes.String()
		cut := all[:strings.Index(all[len(all)/3:], "\n")+len(all)/3+1]
		if _, err := importer.Run(ctx, s, importer.Caches{}, importer.Options{Batch: 70},
			[]importer.Source{{Kind: importer.Likes, Name: "l1", R: strings.NewReader(cut)}}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			var err error
			for i := 2; i <= n && err == nil; i += 2 {
				for _, post := range ids {
					v := time.Now().UnixMicro()
					_, err = s.ApplyLikes(context.WithoutCancel(ctx), []feed.LikeEvent{{User: int64(i), Post: post, Liked: true, Version: v}})
					if err == nil && i%4 == 0 {
						_, err = s.ApplyLikes(context.WithoutCancel(ctx), []feed.LikeEvent{{User: int64(i), Post: post, Liked: false, Version: v + 1}})
					}
				}
			}
			done <- err
		}()
		_, err = importer.Run(ctx, s, importer.Caches{}, importer.Options{Batch: 50, Writers: 3},
			[]importer.Source{{Kind: importer.Likes, Name: "l", R: strings.NewReader(all)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, post := range ids {
			likers, _, err := s.PostLikers(ctx, post, 0, 0, 2*n)
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.LikeCounts(ctx, []int64{post})
			if err != nil {
				t.Fatal(err)
			}
			if c[post] != int64(len(likers)) {
				t.Errorf("post %d: like count %d, %d likers", post, c[post], len(likers))
			}
			// Every user liked it by the import; the live unlikes of every
			// fourth user are newer and stand.
			if want := n - 1 - (n / 4); len(likers) != want {
				t.Errorf("post %d: %d likers, want %d", post, len(likers), want)
			}
		}
	})
}

// TestImportHybrid: in hybrid mode an author the import takes over the
// pull threshold is recorded as pulled, as a follow crossing it would,
// and the readers' cached lists of pulled followees are made stale.
func TestImportHybrid(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		ctx := t.Context()
		cache := inmemcache.New(inmemcache.Options{})
		t.Cleanup(func() { cache.Close() })
		caches := importer.Caches{Inboxes: cache, KV: cache, InboxTTL: time.Hour}
		opts := importer.Options{Policy: feed.DeliveryPolicy{Mode: feed.ModeHybrid, PullThreshold: 3}}
		epoch := func() string {
			v, _, err := cache.Get(ctx, "pullmodes")
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		before := epoch()
		if _, err := importer.Run(ctx, s, caches, opts, sources(importer.Users, importer.Follows)); !errors.Is(err, importer.ErrSkipped) {
			t.Fatalf("Run: %v; want ErrSkipped", err)
		}
		users, err := s.Users(ctx, []int64{1, 2, 3, 4})
		if err != nil {
			t.Fatal(err)
		}
		for id, pulled := range map[int64]bool{1: false, 2: false, 3: true, 4: false} {
			if users[id].PullMode != pulled {
				t.Errorf("user %d (%d followers): pull mode %v; want %v", id, users[id].FollowerCount, users[id].PullMode, pulled)
			}
		}
		if after := epoch(); after == before {
			t.Errorf("modes epoch %q unchanged by the import; want a new one", after)
		}
	})
}

// unreachableInboxes is a cache whose inboxes cannot be dropped, as a
// Redis that went away during the import.
type unreachableInboxes struct{ *inmemcache.Cache }

func (unreachableInboxes) DropInbox(context.Context, int64) error {
	return errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
}

// TestImportCacheUnreachable: an import whose inbox drops fail marks the
// readers whose feeds changed stale in SQL, for the serving processes to
// reset once the cache is back, rather than leaving their inboxes as they
// were for as long as they are read.
func TestImportCacheUnreachable(t *testing.T) {
	stores(t, func(t *testing.T, s *sqlstore.Store) {
		ctx := t.Context()
		cache := inmemcache.New(inmemcache.Options{})
		t.Cleanup(func() { cache.Close() })
		caches := importer.Caches{Inboxes: unreachableInboxes{cache}, InboxTTL: time.Hour}
		sum, err := importer.Run(ctx, s, caches, importer.Options{}, sources(importer.Users, importer.Follows))
		if !errors.Is(err, importer.ErrSkipped) {
			t.Fatalf("Run: %v; want ErrSkipped (the data's bad lines)", err)
		}
		if sum.CacheErrors != 0 {
			t.Errorf("CacheErrors = %d; want 0: every failed drop was marked", sum.CacheErrors)
		}
		marked, err := s.StaleFeeds(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var users []int64
		for _, f := range marked {
			users = append(users, f.User)
		}
		// 1, 2 and 4 follow someone new; 3 follows no one.
		if want := []int64{1, 2, 4}; !slices.Equal(users, want) {
			t.Errorf("readers marked stale = %v; want %v", users, want)
		}
	})
}
