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

// TestHybridMergesPulledAuthors: an author at the pull threshold is not
// fanned out; readers get its posts merged from its author list, in
// order, with one cursor, past the list's trimmed end too.
func TestHybridMergesPulledAuthors(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", "hybrid", "FEEDD_PULL_THRESHOLD", "50")
		star, starTok := in.user("star")
		friend, friendTok := in.user("friend")
		readerID, readerTok := in.user("reader")
		starID, _ := feed.ParseID(star)
		bulkFollowers(t, in, starID, 60)
		in.follow(readerTok, star)
		in.follow(readerTok, friend)
		if got := in.must(200, "GET", "/v1/users/"+star, readerTok, nil).str("delivery_mode"); got != "pull" {
			t.Fatalf("star delivery_mode = %q; want pull", got)
		}
		if got := in.must(200, "GET", "/v1/users/"+friend, readerTok, nil).str("delivery_mode"); got != "push" {
			t.Fatalf("friend delivery_mode = %q; want push", got)
		}
		in.feedAll(readerTok, 10) // materialize the inbox
		var want []string
		for i := range 130 { // more than the author list keeps (100)
			want = append(want, in.post(starTok, "star "+strconv.Itoa(i)))
			if i%3 == 0 {
				want = append(want, in.post(friendTok, "friend "+strconv.Itoa(i)))
			}
		}
		slices.SortFunc(want, func(a, b string) int { return cmpID(b, a) })
		rid, _ := feed.ParseID(readerID)
		lastFriend, _ := feed.ParseID(in.must(200, "GET", "/v1/users/"+friend+"/posts?limit=1", readerTok, nil).items()[0]["id"].(string))
		waitInboxes(t, in, []int64{rid}, lastFriend, 10*time.Second)
		// requireNoStarPosts: the pulled author's posts live in its list,
		// never in an inbox: not pushed, not rebuilt, not refreshed, not
		// backfilled.
		requireNoStarPosts := func(how string, reader int64) {
			t.Helper()
			pg, err := in.d.cache.InboxPage(context.Background(), reader, 0, 500)
			if err != nil || !pg.Exists {
				t.Fatalf("%s: inbox of %d: exists %v, %v; want it to exist", how, reader, pg.Exists, err)
			}
			for _, id := range pg.IDs {
				if s := strconv.FormatInt(id, 10); slices.Contains(want, s) {
					// As the admin: a check of hundreds of posts, not a
					// reader's pace, and the admin has no read budget.
					p := in.must(200, "GET", "/v1/posts/"+s, in.admin, nil)
					if p.str("author_id") == star {
						t.Fatalf("%s: the pulled author's post %s is in the inbox of %d", how, s, reader)
					}
				}
			}
		}
		requireNoStarPosts("pushed", rid)
		in.feedEventually(readerTok, 50, want)
		for _, limit := range []int{3, 20, 100} {
			if got := in.feedAll(readerTok, limit); !slices.Equal(got, want) {
				t.Fatalf("limit %d: merged feed has %d posts; want %d in order", limit, len(got), len(want))
			}
		}
		if err := in.d.cache.DropInbox(context.Background(), rid); err != nil {
			t.Fatal(err)
		}
		if got := in.feedAll(readerTok, 20); !slices.Equal(got, want) {
			t.Fatalf("after a rebuild: merged feed has %d posts; want %d in order", len(got), len(want))
		}
		requireNoStarPosts("rebuilt", rid)

		// A reader with an inbox who starts following the pulled author
		// gets its posts merged in, not copied into the inbox.
		lateID, lateTok := in.user("late")
		late, _ := feed.ParseID(lateID)
		in.follow(lateTok, friend)
		in.feedAll(lateTok, 10) // materialize the inbox
		in.follow(lateTok, star)
		requireNoStarPosts("backfilled", late)
		if got := in.feedAll(lateTok, 50); !slices.Equal(got, want) {
			t.Fatalf("after following the pulled author: feed has %d posts; want %d in order", len(got), len(want))
		}
		if m := in.do("GET", "/metrics", "", nil); !strings.Contains(string(m.raw), `feedd_feed_reads_total{path="merged"}`) {
			t.Fatalf("metrics do not count merged reads")
		}
	})
}

// TestThresholdCrossingLosesNothing: an author crossing the pull threshold
// in either direction keeps every post in every follower's feed, and turning
// back to push fans out the posts of the pull period.
func TestThresholdCrossingLosesNothing(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", "hybrid", "FEEDD_PULL_THRESHOLD", "20")
		author, authorTok := in.user("author")
		authorID, _ := feed.ParseID(author)
		readerID, readerTok := in.user("reader")
		rid, _ := feed.ParseID(readerID)
		in.follow(readerTok, author)
		bulkFollowers(t, in, authorID, 16) // 17 followers: push (band is [18, 20))
		in.feedAll(readerTok, 10)
		mode := func() string { return in.must(200, "GET", "/v1/users/"+author, readerTok, nil).str("delivery_mode") }
		var want []string
		check := func() {
			t.Helper()
			exp := slices.Clone(want)
			slices.Reverse(exp)
			in.feedEventually(readerTok, 4, exp)
		}
		want = append(want, in.post(authorTok, "pushed"))
		check()
		var extra []string
		for i := range 4 { // 21 followers: pull
			_, tok := in.user("extra" + strconv.Itoa(i))
			in.follow(tok, author)
			extra = append(extra, tok)
		}
		if m := mode(); m != "pull" {
			t.Fatalf("after crossing up: mode %q; want pull", m)
		}
		pulled := in.post(authorTok, "pulled")
		want = append(want, pulled)
		check()
		in.must(204, "DELETE", "/v1/me/following/"+author, extra[0], nil) // 20: still pull
		in.must(204, "DELETE", "/v1/me/following/"+author, extra[1], nil) // 19: in the band, stays pull
		if m := mode(); m != "pull" {
			t.Fatalf("inside the band: mode %q; want pull (hysteresis)", m)
		}
		in.must(204, "DELETE", "/v1/me/following/"+author, extra[2], nil) // 18
		in.must(204, "DELETE", "/v1/me/following/"+author, extra[3], nil) // 17: push again
		if m := mode(); m != "push" {
			t.Fatalf("after crossing down: mode %q; want push", m)
		}
		pid, _ := feed.ParseID(pulled)
		waitInboxes(t, in, []int64{rid}, pid, 10*time.Second) // the catch-up fan-out
		want = append(want, in.post(authorTok, "pushed again"))
		check()
	})
}

func TestPullModeWritesNoInboxes(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", "pull")
		a, aTok := in.user("a")
		readerID, readerTok := in.user("reader")
		rid, _ := feed.ParseID(readerID)
		in.follow(readerTok, a)
		if err := in.d.cache.FillInbox(context.Background(), rid, nil, true, time.Hour); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range 25 {
			want = append(want, in.post(aTok, fmt.Sprint("p", i)))
		}
		slices.Reverse(want)
		in.feedEventually(readerTok, 7, want)
		time.Sleep(300 * time.Millisecond) // give a (wrong) fan-out time to happen
		if pg, _ := in.d.cache.InboxPage(context.Background(), rid, 0, 10); len(pg.IDs) != 0 {
			t.Fatalf("pull mode wrote %d ids into an inbox", len(pg.IDs))
		}
		if got := in.must(200, "GET", "/v1/users/"+a, readerTok, nil).str("delivery_mode"); got != "pull" {
			t.Fatalf("delivery_mode = %q; want pull", got)
		}
	})
}

// TestReturningReaderHasNoGap: an inactive reader's inbox is gone (expired
// after FEEDD_ACTIVE_DAYS); fan-out skips it; when the reader returns the
// feed is complete, including everything posted while they were away.
func TestReturningReaderHasNoGap(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		a, aTok := in.user("a")
		readerID, readerTok := in.user("reader")
		_, activeTok := in.user("active")
		rid, _ := feed.ParseID(readerID)
		in.follow(readerTok, a)
		in.follow(activeTok, a)
		var want []string
		want = append(want, in.post(aTok, "before"))
		in.feedAll(readerTok, 5)
		in.feedAll(activeTok, 5)
		if err := in.d.cache.DropInbox(context.Background(), rid); err != nil { // the inbox expired
			t.Fatal(err)
		}
		for i := range 12 {
			want = append(want, in.post(aTok, fmt.Sprint("while away ", i)))
		}
		// Once the fan-out of the last post has reached the active reader,
		// it is done for everyone: the absent inbox must have been skipped.
		in.feedEventually(activeTok, 20, reversed(want))
		time.Sleep(200 * time.Millisecond)
		if pg, _ := in.d.cache.InboxPage(context.Background(), rid, 0, 5); pg.Exists {
			t.Fatalf("fan-out created the inbox of an inactive reader: %v", pg.IDs)
		}
		if got := in.feedAll(readerTok, 5); !slices.Equal(got, reversed(want)) {
			t.Fatalf("returning reader's feed = %v; want %v", got, reversed(want))
		}
	})
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}
