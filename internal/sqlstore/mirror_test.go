package sqlstore

import (
	"database/sql"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestMirror runs the journal and the sync between two databases that
// play two shards of 2: ids 2, 4 on shard 0 (a), 1, 3 on shard 1 (b).
func TestMirror(t *testing.T) {
	for _, b := range []backend{
		{name: "sqlite", setup: setupSQLite},
		{name: "mysql", setup: setupMySQL},
		{name: "postgres", setup: setupPostgres},
	} {
		t.Run(b.name, func(t *testing.T) {
			newDB := b.setup(t)
			e := &env{backend: b.name, newDB: newDB}
			t.Run("Journal", func(t *testing.T) { testJournal(t, e) })
			t.Run("Replies", func(t *testing.T) { testReplies(t, e, b.name != "sqlite") })
			t.Run("Reposts", func(t *testing.T) { testReposts(t, e, b.name != "sqlite") })
			if b.name != "sqlite" { // never sharded
				t.Run("SyncMirror", func(t *testing.T) { testSyncMirror(t, e) })
			}
		})
	}
}

// testJournal: a write that lands after a sync read its row keeps the
// row; a claimed row is left to its claimer for the lease.
func testJournal(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	y := Sync{Kind: SyncFollow, A: 2, B: 1}
	journal := func() {
		t.Helper()
		if err := s.write(ctx, func(tx *sql.Tx) error { return s.journal(ctx, tx, []Sync{y, y}) }); err != nil {
			t.Fatal(err)
		}
	}
	journal()
	pending, err := s.PendingSyncs(ctx, []Sync{y, {Kind: SyncLike, A: 2, B: 1}})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v, %v", pending, err)
	}
	journal() // a write after the sync read the row
	if err := s.DoneSyncs(ctx, pending); err != nil {
		t.Fatal(err)
	}
	if again, err := s.PendingSyncs(ctx, []Sync{y}); err != nil || len(again) != 1 || again[0].Due <= pending[0].Due {
		t.Fatalf("after a later write: %v, %v; want the row kept, due later than %d", again, err, pending[0].Due)
	}
	if claimed, err := s.ClaimSyncs(ctx, time.Now(), 10, time.Minute); err != nil || len(claimed) != 0 {
		t.Fatalf("claim before due: %v, %v", claimed, err)
	}
	later := time.Now().Add(SyncDelay + time.Second)
	claimed, err := s.ClaimSyncs(ctx, later, 10, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	if other, err := s.ClaimSyncs(ctx, later, 10, time.Minute); err != nil || len(other) != 0 {
		t.Fatalf("second claim within the lease: %v, %v", other, err)
	}
	if err := s.DoneSyncs(ctx, claimed); err != nil {
		t.Fatal(err)
	}
	if left, err := s.PendingSyncs(ctx, []Sync{y}); err != nil || len(left) != 0 {
		t.Fatalf("after done: %v, %v", left, err)
	}
}

func testSyncMirror(t *testing.T, e *env) {
	ctx := t.Context()
	a, b := e.store(t), e.store(t)
	home := Shard{K: 0, N: 2}
	mustUsers(t, a, 2, 4)
	mustUsers(t, b, 1, 3)
	if _, err := a.FollowOut(ctx, 2, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.FollowOut(ctx, 2, 99); err != nil { // 99 never was: an orphan
		t.Fatal(err)
	}
	if _, err := a.BlockOut(ctx, 4, 3); err != nil {
		t.Fatal(err)
	}
	post := int64(10) // on shard 0
	mustPost(t, a, post, 2)
	if _, err := a.ApplyLikesOn(ctx, home, []feed.LikeEvent{{User: 1, Post: post, Liked: true, Version: 5}, {User: 4, Post: post, Liked: true, Version: 6}}); err != nil {
		t.Fatal(err)
	}
	syncs := []Sync{{Kind: SyncFollow, A: 2, B: 1}, {Kind: SyncFollow, A: 2, B: 99}, {Kind: SyncBlock, A: 4, B: 3}, {Kind: SyncLike, A: 1, B: post}}
	pending, err := a.PendingSyncs(ctx, syncs)
	if err != nil || len(pending) != 4 {
		t.Fatalf("pending: %v, %v; want the 4 (4's like of a post of its own shard has no mirror)", pending, err)
	}
	for range 2 { // a second run changes nothing
		orphans, err := b.SyncMirror(ctx, a, syncs)
		if err != nil {
			t.Fatal(err)
		}
		if len(orphans) != 1 || orphans[0].B != 99 {
			t.Fatalf("orphans %v, want 2 -> 99", orphans)
		}
		if u, err := b.User(ctx, 1); err != nil || u.FollowerCount != 1 {
			t.Fatalf("user 1: %+v, %v; want 1 follower", u, err)
		}
	}
	if got, err := b.Followers(ctx, 1, 0, 10); err != nil || len(got) != 1 || got[0] != 2 {
		t.Errorf("followers of 1 on its shard: %v, %v", got, err)
	}
	if h, err := b.Hidden(ctx, 3); err != nil || !h.Blocked(4) {
		t.Errorf("3's hidden set misses 4's block: %v", err)
	}
	if l, err := b.UserLikes(ctx, 1, 0, 10); err != nil || len(l) != 1 || l[0].Post != post || l[0].Version != 5 {
		t.Errorf("likes of 1 on its shard: %v, %v", l, err)
	}
	if err := a.DropOrphans(ctx, []Sync{{Kind: SyncFollow, A: 2, B: 99}}); err != nil {
		t.Fatal(err)
	}
	if u, err := a.User(ctx, 2); err != nil || u.FollowingCount != 1 {
		t.Errorf("user 2 after the orphan: %+v, %v; want 1 following", u, err)
	}

	// The truth goes; the sync follows it.
	if _, err := a.UnfollowOut(ctx, 2, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ApplyLikesOn(ctx, home, []feed.LikeEvent{{User: 1, Post: post, Liked: false, Version: 7}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SyncMirror(ctx, a, syncs); err != nil {
		t.Fatal(err)
	}
	if u, err := b.User(ctx, 1); err != nil || u.FollowerCount != 0 {
		t.Errorf("user 1 after the unfollow: %+v, %v; want 0 followers", u, err)
	}
	if l, err := b.UserLikes(ctx, 1, 0, 10); err != nil || len(l) != 0 {
		t.Errorf("likes of 1 after the unlike: %v, %v", l, err)
	}
}
