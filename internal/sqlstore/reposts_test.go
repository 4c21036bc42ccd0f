package sqlstore

import (
	"fmt"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// testReposts: on one database a repost, its reposts row, its index row
// and its original's count commit together, a second repost of the same
// post by the same user is refused (IsReposted), and a delete takes them
// back. Across two shards (a, shard 0 of 2, holds the original; b, shard
// 1, the repost) the count follows the truth through SyncMirror, exactly
// however often it runs, and the reposter's purge takes it out.
func testReposts(t *testing.T, e *env, sharded bool) {
	ctx := t.Context()
	a := e.store(t)
	mustUsers(t, a, 2, 4, 6)
	if _, _, err := a.CreatePost(ctx, feed.Post{ID: 1002, AuthorID: 2, Content: "original"}, feed.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	count := func(s *Store, id int64) int64 { return postCounts(t, s, id).Reposts }
	repost := func(s *Store, home Shard, id, user, original int64) ([]Sync, error) {
		_, _, syncs, err := s.CreatePostOn(ctx, home, feed.Post{ID: id, AuthorID: user, RepostOfID: original, RepostOfAuthorID: 2}, feed.Idempotency{})
		return syncs, err
	}
	mine := func(s *Store, user, original int64) int64 {
		t.Helper()
		id, err := s.RepostOf(ctx, user, original)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	// One database.
	if _, err := repost(a, Shard{}, 1004, 4, 1002); err != nil {
		t.Fatal(err)
	}
	if _, err := repost(a, Shard{}, 1006, 4, 1002); !IsReposted(err) {
		t.Fatalf("a second repost of the same post: %v; want IsReposted", err)
	}
	p, err := a.Post(ctx, 1004)
	if err != nil || p.RepostOfID != 1002 || p.RepostOfAuthorID != 2 || p.Content != "" {
		t.Fatalf("the repost read back: %+v, %v", p, err)
	}
	if n, id := count(a, 1002), mine(a, 4, 1002); n != 1 || id != 1004 {
		t.Fatalf("after a repost: count %d, user 4's repost %d; want 1, 1004", n, id)
	}
	if got, err := a.RepostedAmong(ctx, 4, []int64{1002, 1004}); err != nil || len(got) != 1 || got[0] != 1002 {
		t.Fatalf("RepostedAmong = %v, %v; want [1002]", got, err)
	}
	if err := a.DeletePost(ctx, 1004, 4); err != nil {
		t.Fatal(err)
	}
	if n, id := count(a, 1002), mine(a, 4, 1002); n != 0 || id != 0 {
		t.Fatalf("after the unrepost: count %d, user 4's repost %d; want 0, 0", n, id)
	}
	if !sharded {
		return
	}

	// Two shards: the original on a (shard 0), the repost on b (shard 1).
	b := e.store(t)
	mustUsers(t, b, 1)
	syncs, err := repost(b, Shard{K: 1, N: 2}, 1001, 1, 1002)
	if err != nil || len(syncs) != 1 {
		t.Fatalf("a repost across shards: %v, %v; want one sync", syncs, err)
	}
	syncTwice(t, a, b, syncs, wantCount(func() int64 { return count(a, 1002) }, 1))
	del, err := b.DeletePostOn(ctx, Shard{K: 1, N: 2}, 1001, 1)
	if err != nil || len(del) != 1 {
		t.Fatalf("the repost's delete: %v, %v; want one sync", del, err)
	}
	syncTwice(t, a, b, append(del, syncs...), wantCount(func() int64 { return count(a, 1002) }, 0))

	// The purge of a reposter, on the original's shard (PurgeElsewhere).
	if syncs, err = repost(b, Shard{K: 1, N: 2}, 1003, 1, 1002); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SyncMirror(ctx, b, syncs); err != nil || count(a, 1002) != 1 {
		t.Fatalf("sync: %v; count %d, want 1", err, count(a, 1002))
	}
	if _, did, err := a.PurgeElsewhere(ctx, 1); err != nil || !did {
		t.Fatalf("PurgeElsewhere: %v, %v; want rows found", did, err)
	}
	if n := count(a, 1002); n != 0 {
		t.Fatalf("after the reposter's purge: count %d; want 0", n)
	}
}

// postCounts is post id's counts on s's primary.
func postCounts(t *testing.T, s *Store, id int64) feed.Counts {
	t.Helper()
	n, err := s.PostCountsPrimary(t.Context(), []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	return n[id]
}

// wantCount is a check of syncTwice: count() is want.
func wantCount(count func() int64, want int64) func() string {
	return func() string {
		if n := count(); n != want {
			return fmt.Sprintf("count %d; want %d", n, want)
		}
		return ""
	}
}
