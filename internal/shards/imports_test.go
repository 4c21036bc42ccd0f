package shards_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
)

func TestImportFollowsAcrossShards(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102, 103, 104)
		if _, err := s.Block(ctx, 103, 102); err != nil {
			t.Fatal(err)
		}
		edges := [][2]int64{{100, 101}, {100, 104}, {102, 101}, {101, 100}, {100, 999}, {102, 103}, {100, 101}, {104, 104}}
		res, err := s.ImportFollows(ctx, edges)
		if err != nil {
			t.Fatal(err)
		}
		want := []feed.ImportOutcome{feed.Imported, feed.Imported, feed.Imported, feed.Imported, feed.UnknownUser, feed.Blocked, feed.Unchanged, feed.SelfFollow}
		if !slices.Equal(res.Outcomes, want) {
			t.Errorf("outcomes %v, want %v", res.Outcomes, want)
		}
		wantIDs(t, "followers", res.Followers, 100, 101, 102)
		wantIDs(t, "followees", res.Followees, 100, 101, 104)
		check := func() {
			t.Helper()
			wantCounts(t, s, 100, 1, 2)
			wantCounts(t, s, 101, 2, 1)
			wantCounts(t, s, 102, 0, 1)
			wantCounts(t, s, 104, 1, 0)
			wantIDs(t, "followers of 101", followersOf(t, s, 101), 100, 102)
			wantIDs(t, "followers of 100", followersOf(t, s, 100), 101)
			if n := journalRows(t, s); n != 0 {
				t.Errorf("%d journal rows left", n)
			}
		}
		check()
		// A re-run changes nothing; a run mixing new and old edges adds the
		// new ones only.
		if res, err := s.ImportFollows(ctx, edges); err != nil || res.Outcomes[0] != feed.Unchanged {
			t.Fatalf("re-run: %v, %v", res.Outcomes, err)
		}
		check()
		if _, err := s.ImportFollows(ctx, [][2]int64{{100, 101}, {103, 101}}); err != nil {
			t.Fatal(err)
		}
		wantCounts(t, s, 101, 3, 1)
		wantCounts(t, s, 103, 0, 1)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 100, 102, 103)
		checkExact(t, s)
	})
}

func TestImportLikesAcrossShards(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102)
		ids := feed.NewIDGen(nil)
		p0 := createPost(t, s, ids, 100)
		p1 := createPost(t, s, ids, 101)
		likes := [][2]int64{{101, p0}, {102, p0}, {100, p0}, {100, p1}, {999, p1}, {100, 12345 << 2}}
		res, err := s.ImportLikes(ctx, likes)
		if err != nil {
			t.Fatal(err)
		}
		want := []feed.ImportOutcome{feed.Imported, feed.Imported, feed.Imported, feed.Imported, feed.UnknownUser, feed.UnknownPost}
		if !slices.Equal(res.Outcomes, want) || res.Liked != 4 || res.Deltas[p0] != 3 || res.Deltas[p1] != 1 {
			t.Errorf("import: %+v", res)
		}
		wantIDs(t, "users", res.Users, 100, 101, 102)
		check := func() {
			t.Helper()
			if got := likeCount(t, s, p0); got != 3 {
				t.Errorf("post %d: %d likes, want 3", p0, got)
			}
			if got := likeCount(t, s, p1); got != 1 {
				t.Errorf("post %d: %d likes, want 1", p1, got)
			}
			wantIDs(t, "likes of 101", likedBy(t, s, 101), p0)
			wantIDs(t, "likes of 102", likedBy(t, s, 102), p0)
			if n := journalRows(t, s); n != 0 {
				t.Errorf("%d journal rows left", n)
			}
		}
		check()
		if res, err := s.ImportLikes(ctx, likes); err != nil || res.Liked != 0 {
			t.Fatalf("re-run: %+v, %v", res, err)
		}
		check()
		// A like unliked since is not undone by a re-run.
		if _, err := s.ApplyLikes(ctx, []feed.LikeEvent{{User: 101, Post: p0, Liked: false, Version: time.Now().UnixMicro()}}); err != nil {
			t.Fatal(err)
		}
		if res, err := s.ImportLikes(ctx, likes); err != nil || res.Liked != 0 {
			t.Fatalf("re-run after an unlike: %+v, %v", res, err)
		}
		if got := likeCount(t, s, p0); got != 2 {
			t.Errorf("post %d: %d likes, want 2", p0, got)
		}
		wantIDs(t, "likes of 101", likedBy(t, s, 101))
	})
}

// An import that dies between a batch's commit and its syncs leaves one
// journal row per follower and per liker (not per edge), and the repairer
// syncs every edge and like they stand for: the mirrors, and the
// followees' counts, come out exact.
func TestImportCutShortIsRepaired(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102, 103, 104)
		// 100's truth is on shard 0: the router's first half only, as if
		// the process died before its syncs.
		home := sqlstore.Shard{K: 0, N: s.N()}
		live := map[int64]bool{101: true, 102: true, 103: true}
		_, journaled, err := s.Shard(0).ImportFollowsOn(ctx, home, [][2]int64{{100, 101}, {100, 102}, {100, 103}, {104, 101}}, live)
		if err != nil {
			t.Fatal(err)
		}
		if len(journaled) != 2 || journalRows(t, s) != 2 {
			t.Fatalf("journaled %v, %d rows; want one row for each of 100 and 104", journaled, journalRows(t, s))
		}
		wantCounts(t, s, 101, 0, 0) // the mirror waits
		ids := feed.NewIDGen(nil)
		p := createPost(t, s, ids, 104) // on shard 0
		if _, journaled, err = s.Shard(0).ImportLikesOn(ctx, home, [][2]int64{{101, p}, {102, p}, {103, p}}, live); err != nil || len(journaled) != 3 {
			t.Fatalf("likes: journaled %v, %v; want one row for each liker", journaled, err)
		}
		if n, err := shards.SyncDueAt(ctx, s, time.Now().Add(time.Minute)); err != nil || n != 5 {
			t.Fatalf("repairer: %d rows, %v; want 5", n, err)
		}
		wantCounts(t, s, 100, 0, 3)
		wantCounts(t, s, 101, 2, 0)
		wantCounts(t, s, 104, 0, 1)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 100, 104)
		wantIDs(t, "followers of 103", followersOf(t, s, 103), 100)
		for _, u := range []int64{101, 102, 103} {
			wantIDs(t, "likes", likedBy(t, s, u), p)
		}
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left", n)
		}
		checkExact(t, s)
	})
}

// EachFollower names every follower of each author, whichever shard the
// follower lives on (the import's inbox drops read it).
func TestEachFollowerAcrossShards(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102, 103)
		if _, err := s.ImportFollows(ctx, [][2]int64{{101, 100}, {102, 100}, {103, 100}, {100, 101}, {102, 101}, {100, 102}}); err != nil {
			t.Fatal(err)
		}
		got := map[int64]int{}
		if err := s.EachFollower(ctx, []int64{100, 101, 103}, func(f int64) { got[f]++ }); err != nil {
			t.Fatal(err)
		}
		// 102 follows both 100 and 101: once for each.
		if want := map[int64]int{101: 1, 102: 2, 103: 1, 100: 1}; !maps.Equal(got, want) {
			t.Errorf("followers %v; want %v", got, want)
		}
	})
}
