package timeline

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
)

// TestMutedFeedPagesStayFull has a reader mute 95% of the authors it
// follows, on each delivery model: every page of its feed is full until
// the last, no post repeats, none of a muted author shows, and every post
// of the others does, in order, through the inbox, its end in SQL and
// (hybrid) the pulled authors' lists.
func TestMutedFeedPagesStayFull(t *testing.T) {
	for _, mode := range []feed.FanoutMode{feed.ModePush, feed.ModePull, feed.ModeHybrid} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			cache := inmemcache.New(inmemcache.Options{})
			lists := inmemcache.New(inmemcache.Options{})
			t.Cleanup(func() { cache.Close(); lists.Close() })
			cfg := Config{
				InboxMax: 100, // the feed is longer: paging goes on in SQL
				Policy:   feed.DeliveryPolicy{Mode: mode, PullThreshold: 2},
			}
			svc := newWithWrites(slog.New(slog.DiscardHandler), cfg, testStore(t), cache, lists, feed.NewIDGen(nil), nil)

			const authors, perAuthor, kept, limit = 40, 15, 2, 4
			reader, other := int64(1), int64(2)
			for _, id := range []int64{reader, other} {
				if _, err := svc.CreateUser(ctx, id, "reader", ""); err != nil {
					t.Fatal(err)
				}
			}
			for a := int64(100); a < 100+authors; a++ {
				if _, err := svc.CreateUser(ctx, a, "author", ""); err != nil {
					t.Fatal(err)
				}
				if err := svc.Follow(ctx, reader, a); err != nil {
					t.Fatal(err)
				}
				if a%2 == 0 { // two followers: pulled in hybrid mode
					if err := svc.Follow(ctx, other, a); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Authors 100 (pulled in hybrid) and 101 (pushed) stay; the
			// other 38 of 40 are muted.
			for a := int64(100 + kept); a < 100+authors; a++ {
				if err := svc.Mute(ctx, reader, a); err != nil {
					t.Fatal(err)
				}
			}
			var want []int64
			for range perAuthor {
				for a := int64(100); a < 100+authors; a++ {
					id := publish(t, svc, a)
					if a < 100+kept {
						want = append(want, id)
					}
				}
			}
			slices.Reverse(want)

			got := readAll(t, svc, reader, limit)
			if !slices.Equal(got, want) {
				t.Fatalf("the feed read page by page: got %d posts %v; want %d %v", len(got), got, len(want), want)
			}

			// Unmuting brings an author's posts back, in place.
			if err := svc.Unmute(ctx, reader, 100+kept); err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, svc, reader, limit); len(got) != len(want)+perAuthor {
				t.Fatalf("after an unmute: got %d posts; want %d", len(got), len(want)+perAuthor)
			}
		})
	}
}

// readAll reads reader's whole feed in pages of limit, checking that
// every page but the last is full and that the cursor moves on.
func readAll(t *testing.T, svc *testService, reader int64, limit int) []int64 {
	t.Helper()
	var ids []int64
	before := int64(0)
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("the feed does not end")
		}
		pg, err := svc.Feed(context.Background(), reader, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		posts, more := pg.Posts, pg.More()
		if more && len(posts) < limit {
			t.Fatalf("page %d: %d posts and more; want full pages of %d", page, len(posts), limit)
		}
		for _, p := range posts {
			ids = append(ids, p.ID)
		}
		if !more {
			return ids
		}
		before = pg.Next
	}
}

// TestFilteredPageIsBounded: a reader whose inbox holds 10,000 posts of a
// muted author above its two visible ones gets bounded pages: short ones
// whose cursor moves on past what they read, then the visible posts, and
// an end, with no repeats.
func TestFilteredPageIsBounded(t *testing.T) {
	ctx := context.Background()
	cache := inmemcache.New(inmemcache.Options{InboxMax: 20_000})
	t.Cleanup(func() { cache.Close() })
	cfg := Config{InboxMax: 20_000, Policy: feed.DeliveryPolicy{Mode: feed.ModePush}}
	svc := newWithWrites(slog.New(slog.DiscardHandler), cfg, testStore(t), cache, nil, feed.NewIDGen(nil), nil)
	reader, muted, kept := int64(1), int64(2), int64(3)
	for _, id := range []int64{reader, muted, kept} {
		if _, err := svc.CreateUser(ctx, id, "user", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Follow(ctx, reader, kept); err != nil {
		t.Fatal(err)
	}
	if err := svc.Mute(ctx, reader, muted); err != nil {
		t.Fatal(err)
	}
	// The inbox and the post cache are set up directly: ids 1 and 2 are
	// the kept author's, the 10,000 above them the muted one's.
	const n = 10_002
	ids := make([]int64, n)
	posts := make([]feed.Post, n)
	for i := range n {
		id := int64(i + 1)
		ids[i] = id
		posts[i] = feed.Post{ID: id, AuthorID: muted, Content: "muted"}
		if id <= 2 {
			posts[i].AuthorID = kept
		}
	}
	if err := cache.CachePosts(ctx, posts, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := cache.FillInbox(ctx, reader, ids, true, time.Hour); err != nil {
		t.Fatal(err)
	}

	var got []int64
	before := int64(0)
	short := 0
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("the feed does not end")
		}
		pg, err := svc.Feed(ctx, reader, before, 5)
		if err != nil {
			t.Fatal(err)
		}
		ps, more := pg.Posts, pg.More()
		for _, p := range ps {
			got = append(got, p.ID)
		}
		if !more {
			break
		}
		short++
		next := pg.Next
		if len(ps) < 5 && (next == 0 || (before != 0 && next >= before)) {
			t.Fatalf("page %d: %d posts, more, next %d after %d; want a cursor that moves on", page, len(ps), next, before)
		}
		before = next
	}
	if !slices.Equal(got, []int64{2, 1}) {
		t.Fatalf("the feed = %v; want [2 1]", got)
	}
	// 10,000 hidden posts are more than one page reads (8,000).
	if short == 0 {
		t.Fatal("the first page read all 10,000 hidden posts; want it bounded")
	}
}
