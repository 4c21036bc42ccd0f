package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

// rankedAll pages through a whole ranked feed and returns the post ids in
// order, checking that every page but the last is full.
func (in *instance) rankedAll(token string, limit int) []string {
	in.t.Helper()
	return in.pageAll("ranked", limit, func(p client.PageParams) (client.Page[client.Post], error) {
		return in.as(token).RankedFeedPage(context.Background(), p)
	})
}

// TestRankedFeed: GET /v1/me/feed?order=ranked ranks the latest feed's
// posts (pushed and pulled alike) by weight, likes and the reader's
// affinity; weight 0 keeps a post out; a snapshot's pages hold each of its
// posts once while likes, deletes and mutes happen, skipping what the
// reader may no longer see with pages kept full; a snapshot gone is 410
// cursor_expired; a weight shows to its author only. On every model:
// in hybrid, star's posts are pulled at read.
func TestRankedFeed(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for _, mode := range []string{"push", "pull", "hybrid"} {
			t.Run(mode, func(t *testing.T) { testRankedFeed(t, env, mode) })
		}
	})
}

func testRankedFeed(t *testing.T, env map[string]string, mode string) {
	{
		// Long enough that the steps from the first ranking to the check
		// before the regathering fit in it on a loaded machine (2 s did
		// not, in a CI run at load 30).
		const regather = 5 * time.Second
		in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", mode, "FEEDD_PULL_THRESHOLD", "2", "FEEDD_RANK_REGATHER", regather.String())
		ctx := context.Background()
		star, starTok := in.user("star") // pulled: two followers
		friend, friendTok := in.user("friend")
		_, readerTok := in.user("reader")
		_, fanTok := in.user("fan")
		in.follow(fanTok, star)
		in.follow(readerTok, star)
		in.follow(readerTok, friend)
		weight := func(v float64) *float64 { return &v }
		post := func(token, content string, w *float64) string {
			t.Helper()
			p, err := in.as(token).CreatePost(ctx, client.CreatePostParams{Content: content, Weight: w})
			if err != nil {
				t.Fatalf("post %q: %v", content, err)
			}
			return p.ID.String()
		}
		var friends, stars []string // newest first
		for i := range 3 {
			friends = append([]string{post(friendTok, fmt.Sprint("friend ", i), nil)}, friends...)
		}
		for i := range 6 {
			stars = append([]string{post(starTok, fmt.Sprint("star ", i), nil)}, stars...)
		}
		unranked := post(friendTok, "never ranked", weight(0))
		boosted := post(friendTok, "boosted", weight(50))
		latest := append(append([]string{boosted, unranked}, stars...), friends...)
		in.feedEventually(readerTok, 4, latest)

		// The reader likes one of star's posts: that post's likes and the
		// reader's affinity to star lift all of star's above friend's.
		liked := stars[3]
		if _, err := in.as(readerTok).Like(ctx, mustID(t, liked)); err != nil {
			t.Fatal(err)
		}
		want := []string{boosted, liked}
		for _, id := range stars {
			if id != liked {
				want = append(want, id)
			}
		}
		want = append(want, friends...)
		if got := in.rankedAll(readerTok, 4); !slices.Equal(got, want) {
			t.Fatalf("ranked feed = %v;\nwant %v (boosted, the liked post, star's newest first, friend's)", got, want)
		}

		// One snapshot, paged while it changes: likes do not move it, a
		// post deleted since and the posts of an author muted since are
		// skipped, and the pages stay full.
		first, err := in.as(readerTok).RankedFeedPage(ctx, client.PageParams{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := idsOf(first.Items); !slices.Equal(got, want[:3]) || first.NextCursor == "" {
			t.Fatalf("first page = %v, cursor %q; want %v and a cursor", got, first.NextCursor, want[:3])
		}
		for _, it := range first.Items {
			if it.Weight != nil {
				t.Errorf("the reader sees the weight of post %s: %v", it.ID, *it.Weight)
			}
		}
		for _, id := range friends {
			if _, err := in.as(fanTok).Like(ctx, mustID(t, id)); err != nil {
				t.Fatal(err)
			}
		}
		gone := want[3]
		if err := in.as(starTok).DeletePost(ctx, mustID(t, gone)); err != nil {
			t.Fatal(err)
		}
		if err := in.as(readerTok).Mute(ctx, mustID(t, friend)); err != nil {
			t.Fatal(err)
		}
		var rest []string
		p := client.PageParams{Limit: 3, Cursor: first.NextCursor}
		for {
			page, err := in.as(readerTok).RankedFeedPage(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, idsOf(page.Items)...)
			if page.NextCursor == "" {
				break
			}
			if len(page.Items) != 3 {
				t.Fatalf("a page of %d with a next cursor; want full pages", len(page.Items))
			}
			p.Cursor = page.NextCursor
		}
		if wantRest := want[4 : 4+len(stars)-3]; !slices.Equal(rest, wantRest) {
			t.Fatalf("the snapshot's later pages = %v; want %v (star's, without the deleted %s, none of muted friend's)", rest, wantRest, gone)
		}
		if err := in.as(readerTok).Unmute(ctx, mustID(t, friend)); err != nil {
			t.Fatal(err)
		}

		// A weight is its author's to see and change; a change of weight
		// alone does not mark the post edited.
		mine, err := in.as(friendTok).GetPost(ctx, mustID(t, boosted))
		if err != nil || mine.Weight == nil || *mine.Weight != 50 {
			t.Fatalf("the author's view of the boosted post: %+v, %v; want weight 50", mine, err)
		}
		theirs, err := in.as(readerTok).GetPost(ctx, mustID(t, boosted))
		if err != nil || theirs.Weight != nil {
			t.Fatalf("a reader's view of the boosted post: %+v, %v; want no weight", theirs, err)
		}
		edited, err := in.as(friendTok).EditPost(ctx, mustID(t, unranked), client.EditPostParams{Weight: weight(100)})
		if err != nil || edited.Weight == nil || *edited.Weight != 100 || edited.EditedAt != nil {
			t.Fatalf("weight edit = %+v, %v; want weight 100 and no edited_at", edited, err)
		}
		// A post published since joins the reader's gathered candidates
		// at once; a weight changed since counts once they are gathered
		// anew (FEEDD_RANK_REGATHER).
		newest := post(friendTok, "after the first ranking", weight(60))
		live := slices.DeleteFunc(slices.Clone(latest), func(id string) bool { return id == gone })
		in.feedEventually(readerTok, 20, append([]string{newest}, live...))
		if got := in.rankedAll(readerTok, 20); len(got) == 0 || got[0] != newest || slices.Contains(got, unranked) {
			t.Fatalf("ranked feed before the candidates are gathered anew = %v; want %s first and not %s", got, newest, unranked)
		}
		testenv.Eventually(t, 3*regather, "the reweighted post first once the candidates are gathered anew", func() bool {
			time.Sleep(250 * time.Millisecond) // within the user's read rate
			page, err := in.as(readerTok).RankedFeedPage(ctx, client.PageParams{Limit: 1})
			return err == nil && len(page.Items) == 1 && page.Items[0].ID.String() == unranked
		})
		page, err := in.as(readerTok).RankedFeedPage(ctx, client.PageParams{Limit: 1})
		if err != nil || len(page.Items) != 1 || page.Items[0].ID.String() != unranked {
			t.Fatalf("after the reweight the ranked feed starts with %v, %v; want %s", idsOf(page.Items), err, unranked)
		}

		// An unfollow takes the author's posts out of the next ranking at
		// once, and a follow brings them back.
		in.must(204, "DELETE", "/v1/me/following/"+friend, readerTok, nil)
		for _, id := range in.rankedAll(readerTok, 20) {
			if slices.Contains(friends, id) || id == boosted || id == unranked || id == newest {
				t.Fatalf("after the unfollow the ranked feed still has friend's post %s", id)
			}
		}
		in.follow(readerTok, friend)
		in.feedEventually(readerTok, 20, append([]string{newest}, live...))

		// A snapshot the cache does not hold (it expired, or the cache was
		// lost) is 410 cursor_expired; the first page ranks anew.
		expired := feed.EncodeCursor(feed.CursorRanked, 12345<<16|3)
		_, err = in.as(readerTok).RankedFeedPage(ctx, client.PageParams{Limit: 3, Cursor: expired})
		if client.ErrorCode(err) != client.CodeCursorExpired {
			t.Fatalf("an unknown snapshot: %v; want %s", err, client.CodeCursorExpired)
		}
		if env["FEEDD_REDIS_URL"] != "" {
			flushRedis(t, env)
			_, err = in.as(readerTok).RankedFeedPage(ctx, client.PageParams{Limit: 3, Cursor: page.NextCursor})
			if client.ErrorCode(err) != client.CodeCursorExpired {
				t.Fatalf("a cursor after Redis was lost: %v; want %s", err, client.CodeCursorExpired)
			}
		}
		if got := in.rankedAll(readerTok, 5); len(got) != len(live)+1 || got[0] != unranked {
			t.Fatalf("ranked feed after all that = %v; want %d posts, %s first", got, len(live)+1, unranked)
		}

		for _, q := range []string{"order=oldest", "order=ranked&cursor=" + feed.EncodeCursor(feed.CursorFeed, 5)} {
			if r := in.do("GET", "/v1/me/feed?"+q, readerTok, nil); r.status != 400 || r.errCode() != "invalid" {
				t.Errorf("GET /v1/me/feed?%s: %d %s; want 400 invalid", q, r.status, r.raw)
			}
		}
	}
}

func mustID(t *testing.T, s string) client.ID {
	t.Helper()
	id, err := client.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func idsOf(posts []client.Post) []string {
	out := make([]string, len(posts))
	for i, p := range posts {
		out[i] = p.ID.String()
	}
	return out
}
