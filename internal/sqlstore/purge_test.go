package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

func TestPurge(t *testing.T) {
	for _, b := range []backend{{name: "sqlite", setup: setupSQLite}, {name: "mysql", setup: setupMySQL}, {name: "postgres", setup: setupPostgres}} {
		t.Run(b.name, func(t *testing.T) {
			e := &env{backend: b.name, newDB: b.setup(t)}
			t.Run("Steps", func(t *testing.T) { testPurgeSteps(t, e) })
			t.Run("Recreate", func(t *testing.T) { testPurgeRecreate(t, e) })
			t.Run("Relations", func(t *testing.T) { testPurgeRelations(t, e) })
		})
	}
}

// purgeFixture makes user 1 someone with more of everything than one
// batch holds: followers 2..1501, followees 2..1201, 1,200 likes and an
// unlike, posts (one liked by another user) and idempotency keys.
func purgeFixture(t *testing.T, s *Store) (posts []int64, liked []int64) {
	t.Helper()
	ctx := t.Context()
	users := make([]feed.User, 0, 1501)
	for id := int64(1); id <= 1501; id++ {
		users = append(users, feed.User{ID: id, Name: "u"})
	}
	if err := s.BulkCreateUsers(ctx, users); err != nil {
		t.Fatal(err)
	}
	var followers, followees []int64
	for id := int64(2); id <= 1501; id++ {
		followers = append(followers, id)
		if id <= 1201 {
			followees = append(followees, id)
		}
	}
	if err := s.BulkFollow(ctx, 1, followers); err != nil {
		t.Fatal(err)
	}
	bulkFollowing(t, s, 1, followees)
	// Posts of user 2 that user 1 likes, and that user 3 likes too.
	var evs []feed.LikeEvent
	for i := int64(0); i < 1200; i++ {
		liked = append(liked, 100_000+i)
		evs = append(evs, like(1, 100_000+i, 10+i, true), like(3, 100_000+i, 10+i, true))
	}
	bulkPosts(t, s, 2, liked)
	evs = append(evs, like(1, 99, 5, false)) // an unlike tombstone
	for i := int64(0); i < 3; i++ {
		p, _, err := s.CreatePost(ctx, feed.Post{ID: 200_000 + i, AuthorID: 1, Content: "mine", CreatedAt: time.Now()}, feed.Idempotency{Key: fmt.Sprintf("key-%d", i), Fingerprint: make([]byte, feed.FingerprintSize), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		posts = append(posts, p.ID)
		evs = append(evs, like(4, p.ID, 3000+i, true))
	}
	mustApply(t, s, evs...)
	if _, err := s.SetMarker(ctx, 1, posts[0], time.Now()); err != nil {
		t.Fatal(err)
	}
	return posts, liked
}

// checkCountsExact checks every user's counts and every post's like
// count against the rows (a deleted user's own counts are nobody's).
func checkCountsExact(t *testing.T, s *Store) {
	t.Helper()
	for _, q := range []string{
		`SELECT COUNT(*) FROM users u WHERE u.follower_count <> (SELECT COUNT(*) FROM follows f WHERE f.followee_id = u.id) AND u.deleted_at IS NULL`,
		`SELECT COUNT(*) FROM users u WHERE u.following_count <> (SELECT COUNT(*) FROM follows f WHERE f.follower_id = u.id) AND u.deleted_at IS NULL`,
		`SELECT COUNT(*) FROM post_stats p WHERE p.like_count <> (SELECT COUNT(*) FROM likes l WHERE l.post_id = p.post_id AND l.liked = 1)`,
	} {
		var n int
		if err := s.DB().QueryRowContext(t.Context(), q).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s: got %d, %v; want 0", q, n, err)
		}
	}
}

func countRows(t *testing.T, s *Store, q string, args ...any) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRowContext(t.Context(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func testPurgeSteps(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	posts, _ := purgeFixture(t, s)
	checkCountsExact(t, s)

	p, started, err := s.DeleteUser(ctx, 1)
	if err != nil || !started || p.Done() {
		t.Fatalf("DeleteUser(1): got %+v, %v, %v; want a new running purge", p, started, err)
	}
	// Gone for every read at once; a repeat returns the same purge.
	if p2, started, err := s.DeleteUser(ctx, 1); err != nil || started || p2.User != 1 || p2.Done() {
		t.Fatalf("DeleteUser(1) again: got %+v, %v, %v; want the running purge", p2, started, err)
	}
	_, _, err = s.DeleteUser(ctx, 99_999)
	wantCode(t, err, feed.ENOTFOUND)
	_, err = s.User(ctx, 1)
	wantCode(t, err, feed.ENOTFOUND)
	_, err = s.TokenGeneration(ctx, 1)
	wantCode(t, err, feed.ENOTFOUND)
	if got, err := s.Users(ctx, []int64{1, 2}); err != nil || len(got) != 1 {
		t.Fatalf("Users(1, 2): got %v, %v; want user 2 only", got, err)
	}
	_, err = s.Follow(ctx, 5, 1)
	wantCode(t, err, feed.ENOTFOUND)
	_, err = s.CreateUser(ctx, feed.User{ID: 1, Name: "again"})
	wantCode(t, err, feed.EDELETING)
	if gone, err := s.DeletedUsers(ctx, time.Now().Add(-time.Hour)); err != nil || len(gone) != 1 || gone[0] != 1 {
		t.Fatalf("DeletedUsers: got %v, %v; want [1]", gone, err)
	}

	// Worker a claims the purge and does one batch, then "dies": its
	// lease runs out and b resumes; a's next batch applies nothing.
	user, ok, err := s.ClaimPurge(ctx, "a", 300*time.Millisecond)
	if err != nil || !ok || user != 1 {
		t.Fatalf("ClaimPurge(a): got %d, %v, %v; want 1", user, ok, err)
	}
	if _, ok, err := s.ClaimPurge(ctx, "b", time.Minute); err != nil || ok {
		t.Fatalf("ClaimPurge(b) while a's lease runs: got %v, %v; want none", ok, err)
	}
	b, err := s.PurgeBatch(ctx, 1, "a", 300*time.Millisecond)
	if err != nil || b.Done {
		t.Fatalf("PurgeBatch(a): got %+v, %v; want a batch", b, err)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM follows WHERE follower_id = 1"); n != 200 {
		t.Fatalf("followees left after one batch: got %d; want 200", n)
	}
	checkCountsExact(t, s)
	time.Sleep(400 * time.Millisecond)
	if user, ok, err := s.ClaimPurge(ctx, "b", time.Minute); err != nil || !ok || user != 1 {
		t.Fatalf("ClaimPurge(b) after a's lease: got %d, %v, %v; want 1", user, ok, err)
	}
	if _, err := s.PurgeBatch(ctx, 1, "a", time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("PurgeBatch(a) after losing the lease: got %v; want ErrLeaseLost", err)
	}
	// Someone unfollows between batches: the counts stay exact.
	if _, err := s.Unfollow(ctx, 1500, 1); err != nil {
		t.Fatal(err)
	}
	batches := 0
	var deleted []int64
	for {
		b, err := s.PurgeBatch(ctx, 1, "b", time.Minute)
		if err != nil {
			t.Fatalf("PurgeBatch(b) #%d: %v", batches, err)
		}
		batches++
		deleted = append(deleted, b.Posts...)
		checkCountsExact(t, s)
		if b.Done {
			break
		}
		if batches > 20 {
			t.Fatal("purge does not finish")
		}
	}
	// following 200 left: 1; followers 1,499: 2; likes 1,201: 2; posts: 1;
	// keys: 1; the notification groups user 1 received (user 4's likes of
	// 3 posts): 1; user 1's 1,200 likes in others' groups: 2; the last: 1.
	if batches != 11 {
		t.Errorf("batches: got %d; want 11", batches)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM notice_actors WHERE actor_id = 1 OR recipient_id = 1"); n != 0 {
		t.Errorf("notification rows of user 1 left after the purge: %d", n)
	}
	if len(deleted) != len(posts) {
		t.Errorf("posts deleted: got %v; want %v", deleted, posts)
	}
	for _, q := range []string{
		"SELECT COUNT(*) FROM follows WHERE follower_id = 1 OR followee_id = 1",
		"SELECT COUNT(*) FROM likes WHERE user_id = 1",
		"SELECT COUNT(*) FROM posts WHERE author_id = 1",
		"SELECT COUNT(*) FROM idempotency WHERE author_id = 1",
		"SELECT COUNT(*) FROM markers WHERE user_id = 1",
		"SELECT COUNT(*) FROM users WHERE id = 1",
	} {
		if n := countRows(t, s, q); n != 0 {
			t.Errorf("%s: got %d; want 0", q, n)
		}
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM post_stats WHERE post_id = ?", posts[0]); n != 0 {
		t.Errorf("stats of a purged post: got %d rows; want 0", n)
	}
	got, err := s.Purge(ctx, 1)
	if err != nil || !got.Done() || got.Following != 1200 || got.Followers != 1499 || got.Likes != 1200 || got.Posts != 3 {
		t.Fatalf("Purge(1): got %+v, %v; want done, 1200 following, 1499 followers, 1200 likes, 3 posts", got, err)
	}
	// Re-running is a no-op: the purge is finished, nobody holds it.
	if _, err := s.PurgeBatch(ctx, 1, "b", time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("PurgeBatch after done: got %v; want ErrLeaseLost", err)
	}
	if _, ok, err := s.ClaimPurge(ctx, "c", time.Minute); err != nil || ok {
		t.Fatalf("ClaimPurge after done: got %v, %v; want none", ok, err)
	}
	_, _, err = s.DeleteUser(ctx, 1)
	wantCode(t, err, feed.ENOTFOUND)
	checkCountsExact(t, s)
}

// testPurgeRecreate: a user created again with a purged user's id starts
// above the old token generation, and is not hidden.
func testPurgeRecreate(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1)
	for range 2 {
		if err := s.RevokeTokens(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.DeleteUser(ctx, 1); err != nil {
		t.Fatal(err)
	}
	purgeAll(t, s)
	if _, err := s.CreateUser(ctx, feed.User{ID: 1, Name: "again"}); err != nil {
		t.Fatalf("CreateUser after the purge: %v", err)
	}
	if gen, err := s.TokenGeneration(ctx, 1); err != nil || gen != 3 {
		t.Fatalf("TokenGeneration of the new user: got %d, %v; want 3 (the old one's 2, plus the deletion)", gen, err)
	}
	if gone, err := s.DeletedUsers(ctx, time.Now().Add(-time.Hour)); err != nil || len(gone) != 0 {
		t.Fatalf("DeletedUsers after the id was created again: got %v, %v; want none", gone, err)
	}
	// Deleted again: a new purge, with the generation moved on again.
	if p, started, err := s.DeleteUser(ctx, 1); err != nil || !started || p.Done() {
		t.Fatalf("DeleteUser of the new user: got %+v, %v, %v", p, started, err)
	}
	purgeAll(t, s)
	if _, err := s.CreateUser(ctx, feed.User{ID: 1, Name: "third"}); err != nil {
		t.Fatal(err)
	}
	if gen, err := s.TokenGeneration(ctx, 1); err != nil || gen != 4 {
		t.Fatalf("TokenGeneration of the third user: got %d, %v; want 4", gen, err)
	}
}

// testPurgeRelations: the purge removes the user's mutes and blocks in
// both directions, and nobody else's.
func testPurgeRelations(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2, 3, 4)
	for _, f := range []func(context.Context, int64, int64) (bool, error){s.Mute, s.Block} {
		for _, pair := range [][2]int64{{1, 2}, {3, 1}, {3, 4}} {
			if _, err := f(ctx, pair[0], pair[1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, _, err := s.DeleteUser(ctx, 1); err != nil {
		t.Fatal(err)
	}
	purgeAll(t, s)
	for _, q := range []string{
		"SELECT COUNT(*) FROM mutes WHERE user_id = 1 OR target_id = 1",
		"SELECT COUNT(*) FROM blocks WHERE blocker_id = 1 OR blocked_id = 1",
	} {
		var n int
		if err := s.DB().QueryRowContext(ctx, q).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s: got %d, %v; want 0", q, n, err)
		}
	}
	if m, err := s.Mutes(ctx, 3, 0, 10); err != nil || len(m) != 1 || m[0] != 4 {
		t.Fatalf("Mutes of user 3: got %v, %v; want [4]", m, err)
	}
	if b, err := s.Blocks(ctx, 3, 0, 10); err != nil || len(b) != 1 || b[0] != 4 {
		t.Fatalf("Blocks of user 3: got %v, %v; want [4]", b, err)
	}
}

// purgeAll runs every pending purge to the end, as one worker.
func purgeAll(t testing.TB, s *Store) int {
	t.Helper()
	ctx := context.Background()
	batches := 0
	for {
		user, ok, err := s.ClaimPurge(ctx, "t", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return batches
		}
		for {
			b, err := s.PurgeBatch(ctx, user, "t", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			batches++
			if b.Done {
				break
			}
		}
	}
}

// TestPurgeBig measures the purge of a user with 100,000 followers, 10,000
// followees and 10,000 likes on the MySQL of FEEDD_TEST_MYSQL_DSN. It runs
// only with FEEDD_PURGE_BIG=1:
//
//	FEEDD_PURGE_BIG=1 go test -run TestPurgeBig -v ./internal/sqlstore/
func TestPurgeBig(t *testing.T) {
	if os.Getenv("FEEDD_PURGE_BIG") == "" {
		t.Skip("set FEEDD_PURGE_BIG=1 to measure the purge of a big user")
	}
	s := (&env{backend: "mysql", newDB: setupMySQL(t)}).store(t)
	ctx := t.Context()
	const followers, followees, likes = 100_000, 10_000, 10_000
	start := time.Now()
	users := make([]feed.User, 0, followers+1)
	for id := int64(1); id <= followers+1; id++ {
		users = append(users, feed.User{ID: id, Name: "u"})
	}
	if err := s.BulkCreateUsers(ctx, users); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, 0, followers)
	for id := int64(2); id <= followers+1; id++ {
		ids = append(ids, id)
	}
	if err := s.BulkFollow(ctx, 1, ids); err != nil {
		t.Fatal(err)
	}
	bulkFollowing(t, s, 1, ids[:followees])
	evs := make([]feed.LikeEvent, 0, likes)
	posts := make([]int64, 0, likes)
	for i := int64(0); i < likes; i++ {
		posts = append(posts, 1_000_000+i)
		evs = append(evs, like(1, 1_000_000+i, 10+i, true))
	}
	bulkPosts(t, s, 2, posts)
	for len(evs) > 0 {
		n := min(len(evs), 1000)
		mustApply(t, s, evs[:n]...)
		evs = evs[n:]
	}
	t.Logf("loaded in %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if _, _, err := s.DeleteUser(ctx, 1); err != nil {
		t.Fatal(err)
	}
	batches := purgeAll(t, s)
	took := time.Since(start)
	t.Logf("purged %d followers, %d followees, %d likes in %d batches: %s", followers, followees, likes, batches, took.Round(time.Millisecond))
	checkCountsExact(t, s)
	if took > 60*time.Second {
		t.Errorf("purge took %s; want under 60s", took)
	}
}

// bulkFollowing makes follower follow ids (already users), straight in the
// tables, counts included.
func bulkFollowing(t *testing.T, s *Store, follower int64, ids []int64) {
	t.Helper()
	bulkInsert(t, s, "INSERT INTO follows (follower_id, followee_id, created_at) VALUES ",
		fmt.Sprintf("(%d, ?, 0)", follower), ids)
	for chunk := range slices.Chunk(ids, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		if _, err := s.DB().ExecContext(t.Context(),
			"UPDATE users SET follower_count = follower_count + 1 WHERE id IN ("+placeholders(len(chunk))+")", args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DB().ExecContext(t.Context(), "UPDATE users SET following_count = following_count + ? WHERE id = ?", len(ids), follower); err != nil {
		t.Fatal(err)
	}
}

// bulkPosts stores posts ids by author, straight in the table.
func bulkPosts(t *testing.T, s *Store, author int64, ids []int64) {
	t.Helper()
	bulkInsert(t, s, "INSERT INTO posts (id, author_id, content, created_at) VALUES ",
		fmt.Sprintf("(?, %d, 'x', 0)", author), ids)
}
