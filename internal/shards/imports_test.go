package shards_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/shards"
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
