package shards_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
)

// A home feed read from SQL across shards holds exactly the posts of the
// reader's followees and the reader's own, newest first, whatever shard
// each lives on, and pages without a gap or a repeat; a post and a user
// are found from their ids alone.
func TestFeedAcrossShards(t *testing.T) {
	ctx := context.Background()
	s := readerOfFour(t)
	gen := feed.NewIDGen(nil)
	var want []int64
	for round := range 5 {
		for author := int64(1); author <= 8; author++ {
			p := feed.Post{ID: gen.NextOn(author, s.N()), AuthorID: author, Content: "p", CreatedAt: time.Now()}
			if _, _, err := s.CreatePost(ctx, p, feed.Idempotency{}); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if author <= 5 {
				want = append(want, p.ID)
			}
			got, err := s.Post(ctx, p.ID)
			if err != nil || got.AuthorID != author {
				t.Fatalf("post %d read back as %+v, %v", p.ID, got, err)
			}
		}
	}
	// Newest first is by id: ids are ordered by time across shards only
	// to the millisecond.
	slices.Sort(want)
	slices.Reverse(want)

	var got []int64
	before := int64(0)
	for {
		page, err := s.FeedPostIDs(ctx, 1, 0, before, 7)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if len(page) < 7 {
			break
		}
		before = page[len(page)-1]
	}
	if !slices.Equal(got, want) {
		t.Fatalf("feed of 1 read in pages of 7:\n got %v\nwant %v", got, want)
	}
	followers, err := s.Followers(ctx, 4, 0, 10)
	if err != nil || !slices.Equal(followers, []int64{1}) {
		t.Fatalf("followers of 4 (shard 0, followed from shard 1) = %v, %v", followers, err)
	}
	byID, err := s.Users(ctx, []int64{1, 2, 3, 4, 99})
	if err != nil || len(byID) != 4 || byID[3].ID != 3 {
		t.Fatalf("Users across shards = %v, %v", byID, err)
	}
	posts, err := s.Posts(ctx, want[:9])
	if err != nil || len(posts) != 9 {
		t.Fatalf("Posts across shards: %d of 9, %v", len(posts), err)
	}
	// A post id that does not carry its author's shard is refused.
	bad := feed.Post{ID: gen.NextOn(2, s.N()), AuthorID: 1, Content: "x"}
	if _, _, err := s.CreatePost(ctx, bad, feed.Idempotency{}); feed.ErrorCode(err) != feed.EINVALID {
		t.Fatalf("post of 1 with an id of shard 2: %v, want EINVALID", err)
	}
}

// A page whose newest posts all live on one shard is whole: each shard
// is first asked for its share of a page only, and the one that holds
// more of it is asked again (gatherNewest). Its pages walk the feed
// without a gap or a repeat, and so do an author list's.
func TestFeedFromOneShard(t *testing.T) {
	ctx := context.Background()
	s := readerOfFour(t)
	gen := feed.NewIDGen(nil)
	var all []int64
	post := func(author int64) {
		t.Helper()
		p := feed.Post{ID: gen.NextOn(author, s.N()), AuthorID: author, Content: "p", CreatedAt: time.Now()}
		if _, _, err := s.CreatePost(ctx, p, feed.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		all = append(all, p.ID)
	}
	// A few posts by each followee, then 30 by user 2 (shard 2) alone.
	for range 3 {
		for author := int64(2); author <= 5; author++ {
			post(author)
		}
	}
	for range 30 {
		post(2)
	}
	slices.Sort(all)
	slices.Reverse(all)

	for _, n := range []int{12, 5, 40} {
		var got []int64
		before := int64(0)
		for {
			page, err := s.FeedPostIDs(ctx, 1, 0, before, n)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 && len(page) > 0 && !slices.Equal(page, all[:len(page)]) {
				t.Fatalf("first page of %d = %v; want the newest %v", n, page, all[:min(n, len(all))])
			}
			got = append(got, page...)
			if len(page) < n {
				break
			}
			before = page[len(page)-1]
		}
		if !slices.Equal(got, all) {
			t.Fatalf("feed of 1 in pages of %d:\n got %v\nwant %v", n, got, all)
		}
		ids, err := s.AuthorsPostIDs(ctx, []int64{2, 3, 4, 5}, 0, n)
		if err != nil || !slices.Equal(ids, all[:min(n, len(all))]) {
			t.Fatalf("AuthorsPostIDs(2..5, %d) = %v, %v; want %v", n, ids, err, all[:min(n, len(all))])
		}
	}
}

// readerOfFour is a store of 4 shards with users 1..8, two on each shard
// (id & 3), where reader 1 (shard 1) follows 2 (shard 2), 3 (shard 3),
// 4 (shard 0) and 5 (shard 1, its own); not 6, 7, 8.
func readerOfFour(t *testing.T) *shards.Store {
	t.Helper()
	feedtest.RequireServices(t)
	ctx := context.Background()
	s := openSharded(t, 4, false)
	var users []feed.User
	for id := int64(1); id <= 8; id++ {
		users = append(users, feed.User{ID: id, Name: "u", CreatedAt: time.Now()})
	}
	if err := s.BulkCreateUsers(ctx, users); err != nil {
		t.Fatal(err)
	}
	if err := s.BulkLoadFollows(ctx, [][2]int64{{1, 2}, {1, 3}, {1, 4}, {1, 5}}); err != nil {
		t.Fatal(err)
	}
	return s
}
