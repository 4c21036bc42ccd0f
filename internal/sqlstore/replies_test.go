package sqlstore

import (
	"fmt"
	"slices"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// testReplies: on one database a reply, its index row and its parent's
// count commit together, and a delete takes them back; a reply to a
// deleted post is ENOTFOUND, across a block EBLOCKED. Across two shards
// (sharded: a, shard 0 of 2, holds the parent; b, shard 1, the reply)
// the mirror follows the truth through SyncMirror, exactly however often
// it runs, and the purge of the replier takes the reply out of the count.
func testReplies(t *testing.T, e *env, sharded bool) {
	ctx := t.Context()
	a := e.store(t)
	mustUsers(t, a, 2, 4, 6)
	if _, _, err := a.CreatePost(ctx, feed.Post{ID: 1002, AuthorID: 2, Content: "parent"}, feed.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	count := func(s *Store, id int64) int64 { return postCounts(t, s, id).Replies }
	replies := func(s *Store, id int64) []int64 {
		t.Helper()
		ids, err := s.ReplyIDs(ctx, id, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	reply := func(s *Store, home Shard, id, author, parent int64) ([]Sync, error) {
		_, _, syncs, err := s.CreatePostOn(ctx, home, feed.Post{ID: id, AuthorID: author, Content: "reply", InReplyToID: parent, InReplyToAuthorID: 2}, feed.Idempotency{})
		return syncs, err
	}

	// One database.
	if _, err := reply(a, Shard{}, 1004, 4, 1002); err != nil {
		t.Fatal(err)
	}
	p, err := a.Post(ctx, 1004)
	if err != nil || p.InReplyToID != 1002 || p.InReplyToAuthorID != 2 {
		t.Fatalf("the reply read back: %+v, %v", p, err)
	}
	if n, ids := count(a, 1002), replies(a, 1002); n != 1 || !slices.Equal(ids, []int64{1004}) {
		t.Fatalf("after a reply: count %d, index %v; want 1, [1004]", n, ids)
	}
	if _, err := a.Block(ctx, 2, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := reply(a, Shard{}, 1006, 6, 1002); feed.ErrorCode(err) != feed.EBLOCKED {
		t.Fatalf("a reply across a block: %v; want EBLOCKED", err)
	}
	if err := a.DeletePost(ctx, 1004, 4); err != nil {
		t.Fatal(err)
	}
	if n, ids := count(a, 1002), replies(a, 1002); n != 0 || len(ids) != 0 {
		t.Fatalf("after the reply's delete: count %d, index %v; want 0, []", n, ids)
	}
	if err := a.DeletePost(ctx, 1002, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := reply(a, Shard{}, 1008, 4, 1002); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("a reply to a deleted post: %v; want ENOTFOUND", err)
	}
	if !sharded {
		return
	}

	// Two shards: the parent on a (shard 0), the reply on b (shard 1).
	b := e.store(t)
	mustUsers(t, b, 1)
	if _, _, err := a.CreatePost(ctx, feed.Post{ID: 1010, AuthorID: 2, Content: "parent"}, feed.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	syncs, err := reply(b, Shard{K: 1, N: 2}, 1001, 1, 1010)
	if err != nil || len(syncs) != 1 {
		t.Fatalf("a reply across shards: %v, %v; want one sync", syncs, err)
	}
	if n := count(a, 1010); n != 0 {
		t.Fatalf("before the sync the parent counts %d; want 0", n)
	}
	syncTwice(t, a, b, syncs, func() string {
		if n, ids := count(a, 1010), replies(a, 1010); n != 1 || !slices.Equal(ids, []int64{1001}) {
			return fmt.Sprintf("count %d, index %v; want 1, [1001]", n, ids)
		}
		return ""
	})
	del, err := b.DeletePostOn(ctx, Shard{K: 1, N: 2}, 1001, 1)
	if err != nil || len(del) != 1 {
		t.Fatalf("the reply's delete: %v, %v; want one sync", del, err)
	}
	syncTwice(t, a, b, append(del, syncs...), func() string {
		if n, ids := count(a, 1010), replies(a, 1010); n != 0 || len(ids) != 0 {
			return fmt.Sprintf("after the delete: count %d, index %v; want 0, []", n, ids)
		}
		return ""
	})

	// The purge of a replier, on the parent's shard (PurgeElsewhere).
	if syncs, err = reply(b, Shard{K: 1, N: 2}, 1003, 1, 1010); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SyncMirror(ctx, b, syncs); err != nil || count(a, 1010) != 1 {
		t.Fatalf("sync: %v; count %d, want 1", err, count(a, 1010))
	}
	if _, did, err := a.PurgeElsewhere(ctx, 1); err != nil || !did {
		t.Fatalf("PurgeElsewhere: %v, %v; want rows found", did, err)
	}
	if n, ids := count(a, 1010), replies(a, 1010); n != 0 || len(ids) != 0 {
		t.Fatalf("after the replier's purge: count %d, index %v; want 0, []", n, ids)
	}
}

// syncTwice syncs a's mirror of syncs from b twice, and after each run
// has check say what is wrong ("" for nothing): a sync run again changes
// nothing.
func syncTwice(t *testing.T, a, b *Store, syncs []Sync, check func() string) {
	t.Helper()
	for i := range 2 {
		if _, err := a.SyncMirror(t.Context(), b, syncs); err != nil {
			t.Fatal(err)
		}
		if bad := check(); bad != "" {
			t.Fatalf("after sync %d: %s", i+1, bad)
		}
	}
}
