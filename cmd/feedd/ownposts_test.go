package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestOwnPosts: on every model and stack a reader's own posts are on its
// home feed, in time order with its followees' and behind the one cursor:
// delivered into its inbox by the fan-out, on every page, past the end of
// the inbox (paging on from SQL), after a delete (skipped), and after the
// cache is lost (rebuilt from SQL). A pulled author reads its own posts
// too (merged from its author list in hybrid mode, never copied into its
// inbox). The unread count counts them as the feed holds them, the stream
// sends them, and the follow counts do not count the reader as its own
// follower.
func TestOwnPosts(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for _, mode := range []string{"push", "pull", "hybrid"} {
			t.Run(mode, func(t *testing.T) {
				// Paging a post at a time reads more than a user's read
				// budget allows: no read limit here.
				opts := []string{"FEEDD_FANOUT_MODE", mode, "FEEDD_PULL_THRESHOLD", "5", "FEEDD_INBOX_MAX", "8", "FEEDD_RATE_USER_READ", "0"}
				in := startFeedd(t, env, nil, opts...)
				star, starTok := in.user("star")
				friend, friendTok := in.user("friend")
				readerID, readerTok := in.user("reader")
				starID, _ := feed.ParseID(star)
				rid, _ := feed.ParseID(readerID)
				bulkFollowers(t, in, starID, 6)
				in.follow(readerTok, star)
				in.follow(readerTok, friend)
				wantMode := map[string]string{"push": "push", "pull": "pull", "hybrid": "pull"}[mode]
				if got := in.must(200, "GET", "/v1/users/"+star, readerTok, nil).str("delivery_mode"); got != wantMode {
					t.Fatalf("star delivery_mode = %q; want %s", got, wantMode)
				}
				// Inboxes that exist, so that the fan-out writes them.
				in.feedAll(readerTok, 10)
				in.feedAll(starTok, 10)

				var all, own, stars []string // oldest first
				for i := range 21 {
					tok, who := []string{readerTok, friendTok, starTok}[i%3], []*[]string{&own, nil, &stars}[i%3]
					id := in.post(tok, "post "+strconv.Itoa(i))
					all = append(all, id)
					if who != nil {
						*who = append(*who, id)
					}
				}
				want, wantStar := reversed(all), reversed(stars)

				// The fan-out puts the reader's own post into its inbox,
				// as a follower's; a pulled author's stays in its list.
				lastOwn, _ := feed.ParseID(own[len(own)-1])
				lastStar, _ := feed.ParseID(stars[len(stars)-1])
				if mode != "pull" {
					waitInboxes(t, in, []int64{rid}, lastOwn, 10*time.Second)
				}
				if mode == "push" {
					waitInboxes(t, in, []int64{starID}, lastStar, 10*time.Second)
				}
				in.feedEventually(readerTok, 3, want)
				in.feedEventually(starTok, 3, wantStar)
				if mode == "hybrid" {
					pg, err := in.d.cache.InboxPage(context.Background(), starID, 0, 100)
					if err != nil || slices.Contains(pg.IDs, lastStar) {
						t.Fatalf("the pulled star's inbox %v (%v) holds its own post %d; want it only in its author list", pg.IDs, err, lastStar)
					}
				}
				// 21 posts, an inbox of 8: every page size pages past it.
				for _, limit := range []int{1, 5, 7, 50} {
					if got := in.feedAll(readerTok, limit); !slices.Equal(got, want) {
						t.Fatalf("limit %d: feed %v; want %v", limit, got, want)
					}
				}

				const markers = "/v1/me/markers/home"
				unread := func(tok string) int {
					t.Helper()
					n, _ := in.must(200, "GET", markers, tok, nil).body["unread_count"].(float64)
					return int(n)
				}
				if n := unread(readerTok); n != len(want) {
					t.Fatalf("unread with no marker: %d; want %d, the feed's posts, own ones too", n, len(want))
				}
				in.must(200, "PUT", markers, readerTok, map[string]any{"last_read_id": want[5]})
				if n := unread(readerTok); n != 5 {
					t.Fatalf("unread above the feed's sixth post: %d; want 5", n)
				}

				// A new post of the reader's own: on the stream, on the
				// first page, and unread, like a followee's.
				// From the newest post the client has: a late event of an
				// older one is not sent again.
				s := in.openStream("/v1/me/feed/stream", readerTok, "Last-Event-ID", want[0])
				mine := in.post(readerTok, "new and mine")
				if ev := s.expectPost(mine); ev.Data != in.feedItem(readerTok, mine) {
					t.Errorf("stream data of the reader's own post:\n%s\nwant the feed page's item", ev.Data)
				}
				s.Close()
				own = append(own, mine)
				want = append([]string{mine}, want...)
				in.feedEventually(readerTok, 4, want)
				if n := unread(readerTok); n != 6 {
					t.Fatalf("unread after the reader's own new post: %d; want 6", n)
				}

				// A deleted own post leaves the feed (and the count).
				gone := own[2]
				in.must(204, "DELETE", "/v1/posts/"+gone, readerTok, nil)
				want = slices.DeleteFunc(want, func(id string) bool { return id == gone })
				in.feedEventually(readerTok, 4, want)

				// The cache is lost: inboxes and author lists are rebuilt
				// from SQL, with the reader's own posts.
				if _, ok := env["FEEDD_REDIS_URL"]; ok {
					flushRedis(t, env)
				} else {
					in.stop()
					in = startFeedd(t, env, nil, opts...)
				}
				for _, limit := range []int{3, 8} {
					if got := in.feedAll(readerTok, limit); !slices.Equal(got, want) {
						t.Fatalf("after the cache's loss, limit %d: feed %v; want %v", limit, got, want)
					}
				}
				if got := in.feedAll(starTok, 4); !slices.Equal(got, wantStar) {
					t.Fatalf("the star's own feed after the cache's loss: %v; want %v", got, wantStar)
				}
				if n := unread(readerTok); n != 6 {
					t.Fatalf("unread after the cache's loss: %d; want 6", n)
				}

				// Nobody is their own follower.
				for _, u := range []struct {
					id                   string
					followers, following float64
				}{{readerID, 0, 2}, {star, 7, 0}, {friend, 1, 0}} {
					r := in.must(200, "GET", "/v1/users/"+u.id, readerTok, nil)
					if r.body["follower_count"] != u.followers || r.body["following_count"] != u.following {
						t.Fatalf("user %s: %s; want %v followers, %v following", u.id, r.raw, u.followers, u.following)
					}
				}
				if items := in.must(200, "GET", "/v1/users/"+readerID+"/followers", readerTok, nil).items(); len(items) != 0 {
					t.Fatalf("the reader's followers: %v; want none", items)
				}
				if items := in.must(200, "GET", "/v1/users/"+readerID+"/following", readerTok, nil).items(); len(items) != 2 {
					t.Fatalf("whom the reader follows: %v; want star and friend", items)
				}
				in.must(400, "PUT", "/v1/me/mutes/"+readerID, readerTok, nil)
				in.must(400, "PUT", "/v1/me/blocks/"+readerID, readerTok, nil)
			})
		}
	})
}

// TestStreamUpdate: an edit of a post a stream sent, pushed or pulled,
// is sent again as event: update with the post as the feed page shows it
// (with edited_at) and no id: line, so a resume from the last post id
// replays nothing; an edit of a post the stream never sent sends nothing.
func TestStreamUpdate(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", "hybrid", "FEEDD_PULL_THRESHOLD", "5")
		star, starTok := in.user("star")
		friend, friendTok := in.user("friend")
		_, readerTok := in.user("reader")
		starID, _ := feed.ParseID(star)
		bulkFollowers(t, in, starID, 6)
		in.follow(readerTok, star)
		in.follow(readerTok, friend)
		before := in.post(friendTok, "before the stream")
		in.feedItem(readerTok, before)

		// The client has the feed up to before: its stream starts there
		// (the post's own event may still be on its way).
		s := in.openStream("/v1/me/feed/stream", readerTok, "Last-Event-ID", before)
		pulled := in.post(starTok, "pulled")
		s.expectPost(pulled)
		pushed := in.post(friendTok, "pushed")
		s.expectPost(pushed)

		edit := func(tok, id, content string) {
			t.Helper()
			r := in.must(200, "PATCH", "/v1/posts/"+id, tok, map[string]any{"content": content})
			if r.str("edited_at") == "" {
				t.Fatalf("PATCH answer %s; want edited_at", r.raw)
			}
		}
		edit(friendTok, before, "never sent on this stream")
		for _, p := range []struct{ tok, id string }{{starTok, pulled}, {friendTok, pushed}} {
			edit(p.tok, p.id, "edited "+p.id)
			ev := s.event(10 * time.Second)
			want := in.feedItem(readerTok, p.id)
			if ev.Event != "update" || ev.ID != "" || ev.Data != want {
				t.Fatalf("after editing sent post %s: event %q; want event: update, no id, data %s", p.id, ev.Raw, want)
			}
			if !strings.Contains(ev.Data, `"content":"edited `+p.id+`"`) || !strings.Contains(ev.Data, `"edited_at":"`) {
				t.Fatalf("update data %s; want the edited content and edited_at", ev.Data)
			}
		}
		// A resume from the last post id sent replays nothing: the next
		// event is a new post.
		s.Close()
		s = in.openStream("/v1/me/feed/stream", readerTok, "Last-Event-ID", pushed)
		next := in.post(friendTok, "after the resume")
		s.expectPost(next)
		// An edited post is one post: the feed shows it once, edited.
		if got := in.feedAll(readerTok, 2); !slices.Equal(got, []string{next, pushed, pulled, before}) {
			t.Fatalf("feed %v; want each post once", got)
		}
		if !strings.Contains(in.feedItem(readerTok, before), fmt.Sprintf("%q", "never sent on this stream")) {
			t.Fatal("the feed does not show the edit of the post the stream never sent")
		}
	})
}
