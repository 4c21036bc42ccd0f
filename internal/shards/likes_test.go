package shards_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
)

// createPost stores a post of author's on author's shard, with an id that
// carries the shard.
func createPost(t *testing.T, s *shards.Store, ids *feed.IDGen, author int64) int64 {
	t.Helper()
	p := feed.Post{ID: ids.NextOn(author, s.N()), AuthorID: author, Content: "hello", CreatedAt: time.Now()}
	if _, _, err := s.Shard(s.Map().Of(author)).CreatePost(context.Background(), p, feed.Idempotency{}); err != nil {
		t.Fatal(err)
	}
	return p.ID
}

func likeCount(t *testing.T, s *shards.Store, post int64) int64 {
	t.Helper()
	c, err := s.Shard(s.Map().Of(post)).LikeCounts(context.Background(), []int64{post})
	if err != nil {
		t.Fatal(err)
	}
	return c[post]
}

// likedBy lists the posts user likes, newest like first, from user's shard.
func likedBy(t *testing.T, s *shards.Store, user int64) []int64 {
	t.Helper()
	es, err := s.Shard(s.Map().Of(user)).UserLikes(context.Background(), user, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range es {
		ids = append(ids, e.Post)
	}
	return ids
}

func TestLikesAcrossShards(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102, 104)
		ids := feed.NewIDGen(nil)
		p0 := createPost(t, s, ids, 100) // shard 0
		p1 := createPost(t, s, ids, 101) // shard 1
		p2 := createPost(t, s, ids, 102) // shard 2
		v := time.Now().UnixMicro()
		evs := []feed.LikeEvent{
			{User: 101, Post: p0, Liked: true, Version: v + 1},
			{User: 104, Post: p0, Liked: true, Version: v + 2}, // same shard as the post
			{User: 100, Post: p1, Liked: true, Version: v + 3},
			{User: 100, Post: p2, Liked: true, Version: v + 4},
			{User: 102, Post: p1, Liked: true, Version: v + 5},
		}
		w, err := s.ApplyLikes(ctx, evs)
		if err != nil {
			t.Fatal(err)
		}
		if w.Deltas[p0] != 2 || w.Deltas[p1] != 2 || w.Deltas[p2] != 1 || w.Tallies[p1].Count != 2 {
			t.Errorf("deltas %v, tallies %v", w.Deltas, w.Tallies)
		}
		// Again: nothing moves.
		if w, err := s.ApplyLikes(ctx, evs); err != nil || len(w.Deltas) != 0 {
			t.Fatalf("again: %v, %v", w.Deltas, err)
		}
		for post, want := range map[int64]int64{p0: 2, p1: 2, p2: 1} {
			if got := likeCount(t, s, post); got != want {
				t.Errorf("post %d: %d likes, want %d", post, got, want)
			}
		}
		wantIDs(t, "likes of 100", likedBy(t, s, 100), p2, p1)
		wantIDs(t, "likes of 101", likedBy(t, s, 101), p0)
		_, _, on, err := s.Shard(s.Map().Of(102)).UserLikeEntries(ctx, 102, 0, []int64{p1, p2})
		if err != nil || !on[p1].Liked || on[p1].Version != v+5 {
			t.Errorf("102's entries on %d: %v, %v", p1, on, err)
		}
		posts, err := s.LikedPosts(ctx, 100, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, p := range posts {
			got = append(got, p.ID)
		}
		want := []int64{p1, p2}
		slices.Sort(want)
		wantIDs(t, "LikedPosts of 100", got, want...)

		// An unlike, and a stale like delivered after it.
		if _, err := s.ApplyLikes(ctx, []feed.LikeEvent{{User: 100, Post: p1, Liked: false, Version: v + 10}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyLikes(ctx, []feed.LikeEvent{{User: 100, Post: p1, Liked: true, Version: v + 3}}); err != nil {
			t.Fatal(err)
		}
		if got := likeCount(t, s, p1); got != 1 {
			t.Errorf("post %d after the unlike: %d likes, want 1", p1, got)
		}
		wantIDs(t, "likes of 100 after the unlike", likedBy(t, s, 100), p2)
		// A deleted post leaves the paged list.
		if err := s.Shard(s.Map().Of(p2)).DeletePost(ctx, p2, 102); err != nil {
			t.Fatal(err)
		}
		if posts, err := s.LikedPosts(ctx, 100, 0, 10); err != nil || len(posts) != 0 {
			t.Errorf("LikedPosts of 100 after the delete: %v, %v", posts, err)
		}
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left", n)
		}
	})
}

// TestLikeSyncRepaired: the likes journaled on the post's shard whose
// sync was lost reach the liker's shard through the repairer.
func TestLikeSyncRepaired(t *testing.T) {
	feedtest.RequireServices(t)
	s := openSharded(t, 4, false)
	ctx := context.Background()
	createUsers(t, s, 100, 101)
	ids := feed.NewIDGen(nil)
	p0 := createPost(t, s, ids, 100)
	v := time.Now().UnixMicro()
	// The post's shard alone, as a writer that died before syncing.
	if _, err := s.Shard(0).ApplyLikesOn(ctx, sqlstore.Shard{K: 0, N: 4}, []feed.LikeEvent{{User: 101, Post: p0, Liked: true, Version: v}}); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "likes of 101 before the repair", likedBy(t, s, 101))
	if n, err := shards.SyncDueAt(ctx, s, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("sync due: %d, %v", n, err)
	}
	wantIDs(t, "likes of 101", likedBy(t, s, 101), p0)
	if got := likeCount(t, s, p0); got != 1 {
		t.Errorf("%d likes, want 1", got)
	}
}

// TestLikesRace: batches of likes and unlikes of the same cross-shard
// pairs from many goroutines, with versions in any order, end with each
// liker's copy equal to the truth and exact counts.
func TestLikesRace(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		users := []int64{100, 101, 102, 103}
		createUsers(t, s, users...)
		ids := feed.NewIDGen(nil)
		posts := []int64{createPost(t, s, ids, 100), createPost(t, s, ids, 101), createPost(t, s, ids, 102)}
		base := time.Now().UnixMicro()
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Go(func() {
				for i := range 10 {
					var evs []feed.LikeEvent
					for j, u := range users {
						for k, p := range posts {
							if (i+j+k+g)%3 == 0 {
								continue
							}
							evs = append(evs, feed.LikeEvent{User: u, Post: p, Liked: (i+g+j)%2 == 0, Version: base + int64(g*100+i*7+k)})
						}
					}
					if _, err := s.ApplyLikes(ctx, evs); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, p := range posts {
			likers, _, err := s.Shard(s.Map().Of(p)).PostLikers(ctx, p, 0, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			if got, liked := likeCount(t, s, p), int64(len(likers)); got != liked {
				t.Errorf("post %d: count %d, %d likers", p, got, liked)
			}
			for _, u := range users {
				_, _, truth, err := s.Shard(s.Map().Of(p)).UserLikeEntries(ctx, u, 0, []int64{p})
				if err != nil {
					t.Fatal(err)
				}
				_, _, mirror, err := s.Shard(s.Map().Of(u)).UserLikeEntries(ctx, u, 0, []int64{p})
				if err != nil {
					t.Fatal(err)
				}
				if truth[p] != mirror[p] {
					t.Errorf("user %d, post %d: truth %+v, the user's copy %+v", u, p, truth[p], mirror[p])
				}
			}
		}
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left", n)
		}
	})
}
