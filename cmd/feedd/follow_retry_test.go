package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// lostCache is a cache whose inbox maintenance can be made to fail, as
// when the process dies (or loses Redis) between a follow's SQL commit
// and its inbox backfill.
type lostCache struct {
	feed.Cache
	lost atomic.Bool
}

var errLost = errors.New("test: the process died before touching the inbox")

func (c *lostCache) InboxBounds(ctx context.Context, reader int64) (int64, int64, bool, error) {
	if c.lost.Load() {
		return 0, 0, false, errLost
	}
	return c.Cache.InboxBounds(ctx, reader)
}

func (c *lostCache) DropInbox(ctx context.Context, reader int64) error {
	if c.lost.Load() {
		return errLost
	}
	return c.Cache.DropInbox(ctx, reader)
}

// TestFollowRetryRepairsInbox: a follow whose edge was committed but whose
// backfill never ran (the serve process was killed in between: the chaos
// test found this) is retried by its client, as PUT is idempotent. The
// retry must repair the inbox: afterwards the reader's feed holds the
// followee's older posts, with no gap. Likewise a retried unfollow leaves
// none of the followee's posts behind.
func TestFollowRetryRepairsInbox(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		lc := &lostCache{}
		// An hour between smart refreshes: the refresh must not be what
		// hides the gap.
		in := startFeedd(t, env, func(d *deps) { lc.Cache = d.cache; d.cache = lc }, "FEEDD_REFRESH_INTERVAL", "1h")
		ctx := context.Background()
		alice, aliceTok := in.user("alice") // the followee
		carol, carolTok := in.user("carol") // whom the reader already follows
		_, bobTok := in.user("bob")         // the reader
		aliceID, _ := feed.ParseID(alice)
		carolID, _ := feed.ParseID(carol)

		// History: carol three hours ago, alice two and one hour ago.
		gen := feed.NewIDGen(func() time.Time { return time.Now().Add(-3 * time.Hour) })
		old := []feed.Post{{ID: gen.Next(), AuthorID: carolID, Content: "carol, 3h ago"}}
		for _, ago := range []time.Duration{2 * time.Hour, time.Hour} {
			id := feed.NewIDGen(func() time.Time { return time.Now().Add(-ago) }).Next()
			old = append(old, feed.Post{ID: id, AuthorID: aliceID, Content: "alice, earlier"})
		}
		for i := range old {
			old[i].CreatedAt = feed.IDTime(old[i].ID)
		}
		if err := in.d.store.BulkLoadPosts(ctx, old); err != nil {
			t.Fatal(err)
		}
		in.follow(bobTok, carol)
		now := in.post(carolTok, "carol, now")
		// Bob's inbox spans three hours of carol's posts.
		in.feedEventually(bobTok, 20, []string{now, feed.FormatID(old[0].ID)})
		_ = aliceTok

		// The follow commits; the backfill and its fallback never happen.
		lc.lost.Store(true)
		in.do("PUT", "/v1/me/following/"+alice, bobTok, nil)
		lc.lost.Store(false)
		// The client did not get its answer, and sends the PUT again.
		in.follow(bobTok, alice)

		want := []string{now, feed.FormatID(old[2].ID), feed.FormatID(old[1].ID), feed.FormatID(old[0].ID)}
		if got := in.feedAll(bobTok, 20); !slicesEqual(got, want) {
			t.Fatalf("bob's feed after the retried follow = %v; want %v (alice's two posts, no gap)", got, want)
		}

		// The same for an unfollow whose removal from the inbox was lost.
		lc.lost.Store(true)
		in.do("DELETE", "/v1/me/following/"+alice, bobTok, nil)
		lc.lost.Store(false)
		in.must(204, "DELETE", "/v1/me/following/"+alice, bobTok, nil)
		want = []string{now, feed.FormatID(old[0].ID)}
		if got := in.feedAll(bobTok, 20); !slicesEqual(got, want) {
			t.Fatalf("bob's feed after the retried unfollow = %v; want %v (none of alice's posts)", got, want)
		}
	})
}
