package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// repost reposts (or, with method DELETE, unreposts) post id as token's
// user and checks the answer's count and state.
func (in *instance) repost(method, token, id string, count float64, mine bool) {
	in.t.Helper()
	r := in.must(200, method, "/v1/posts/"+id+"/repost", token, nil)
	if r.body["repost_count"] != count || r.body["reposted_by_me"] != mine || len(r.body) != 2 {
		in.t.Fatalf("%s repost of %s: %s; want repost_count %v, reposted_by_me %v", method, id, r.raw, count, mine)
	}
}

// repostState is a post's repost_count and reposted_by_me as token's user
// reads it.
func (in *instance) repostState(token, id string) (float64, bool) {
	in.t.Helper()
	r := in.must(200, "GET", "/v1/posts/"+id, token, nil)
	n, _ := r.body["repost_count"].(float64)
	mine, _ := r.body["reposted_by_me"].(bool)
	return n, mine
}

// checkRepostItem checks that it is a repost item of original by
// reposter, as the contract shapes it, and returns its repost_of.
func checkRepostItem(t *testing.T, it map[string]any, reposter, original, originalAuthor string) map[string]any {
	t.Helper()
	of, _ := it["repost_of"].(map[string]any)
	_, hasContent := it["content"]
	if it["author_id"] != reposter || it["id"] == original || hasContent || of == nil ||
		of["id"] != original || of["author_id"] != originalAuthor || of["content"] == nil {
		t.Fatalf("repost item %v; want author %s, its own id, no content, repost_of %s by %s", it, reposter, original, originalAuthor)
	}
	for _, k := range []string{"like_count", "liked_by_me", "reply_count", "repost_count", "reposted_by_me"} {
		if _, ok := of[k]; !ok {
			t.Fatalf("repost_of %v has no %s", of, k)
		}
	}
	return of
}

// TestReposts: PUT and DELETE /v1/posts/{id}/repost are idempotent and
// answer exact counts; every post carries repost_count and
// reposted_by_me; a user's posts show its reposts with repost_of and the
// reader's states; reposting a repost reposts its original; unknown and
// deleted posts are 404; the counts survive the loss of Redis; deleting
// the original takes its reposts away; a purge takes the user's reposts
// out of the counts. The four users live on four shards of the sharded
// stacks, so every repost crosses shards.
func TestReposts(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_RATE_USER_READ", "0", "FEEDD_RATE_USER_WRITE", "0")
		const alice, bob, carol, dave = "9301", "9302", "9303", "9304"
		ta, tb, tc, td := in.userWithID("alice", alice), in.userWithID("bob", bob), in.userWithID("carol", carol), in.userWithID("dave", dave)

		orig := in.post(ta, "the original")
		in.repost("PUT", tb, orig, 1, true)
		in.repost("PUT", tb, orig, 1, true) // idempotent
		in.repost("PUT", tc, orig, 2, true)
		if n, mine := in.repostState(tb, orig); n != 2 || !mine {
			t.Fatalf("bob reads the original: %v, %v; want 2, true", n, mine)
		}
		if n, mine := in.repostState(td, orig); n != 2 || mine {
			t.Fatalf("dave reads the original: %v, %v; want 2, false", n, mine)
		}
		in.repost("DELETE", tc, orig, 1, false)
		in.repost("DELETE", tc, orig, 1, false) // idempotent

		// Bob's posts show his repost, with the original's states as the
		// reader has them.
		items := in.must(200, "GET", "/v1/users/"+bob+"/posts", tb, nil).items()
		if len(items) != 1 {
			t.Fatalf("bob's posts: %v; want his repost", items)
		}
		of := checkRepostItem(t, items[0], bob, orig, alice)
		if of["repost_count"] != float64(1) || of["reposted_by_me"] != true {
			t.Fatalf("bob's repost's original: %v; want repost_count 1, reposted_by_me true", of)
		}
		bobsRepost := items[0]["id"].(string)
		if r := in.must(400, "PATCH", "/v1/posts/"+bobsRepost, tb, map[string]any{"content": "x"}); r.errCode() != "invalid" {
			t.Fatalf("an edit of a repost: %s; want invalid", r.raw)
		}
		// Reposting a repost reposts its original.
		in.repost("PUT", tc, bobsRepost, 2, true)

		// Unknown, deleted and malformed posts.
		in.must(404, "PUT", "/v1/posts/123456789/repost", tb, nil)
		in.must(404, "DELETE", "/v1/posts/123456789/repost", tb, nil)
		in.must(400, "PUT", "/v1/posts/abc/repost", tb, nil)
		gone := in.post(tc, "soon deleted")
		in.must(204, "DELETE", "/v1/posts/"+gone, tc, nil)
		in.must(404, "PUT", "/v1/posts/"+gone+"/repost", tb, nil)

		// Redis lost: the counts and the reposts' fields are SQL's.
		flushRedis(t, env)
		if n, mine := in.repostState(tc, orig); n != 2 || !mine {
			t.Fatalf("after Redis was lost, carol reads the original: %v, %v; want 2, true", n, mine)
		}
		items = in.must(200, "GET", "/v1/users/"+bob+"/posts", td, nil).items()
		if len(items) != 1 || checkRepostItem(t, items[0], bob, orig, alice)["repost_count"] != float64(2) {
			t.Fatalf("after Redis was lost, bob's posts: %v; want his repost of a post reposted twice", items)
		}

		// A purge takes dave's repost out of the count.
		second := in.post(ta, "the second")
		in.repost("PUT", td, second, 1, true)
		in.must(202, "DELETE", "/v1/users/"+dave, in.admin, nil)
		in.purged(dave)
		testenv.Eventually(t, 10*time.Second, "the second's count without dave's repost", func() bool {
			n, _ := in.repostState(ta, second)
			return n == 0
		})

		// Deleting the original takes its reposts away everywhere.
		in.must(204, "DELETE", "/v1/posts/"+orig, ta, nil)
		testenv.Eventually(t, 10*time.Second, "bob's repost gone with its original", func() bool {
			return len(in.must(200, "GET", "/v1/users/"+bob+"/posts", tb, nil).items()) == 0
		})
		in.must(404, "PUT", "/v1/posts/"+orig+"/repost", tb, nil)
	})
}

// TestHomeReposts: a repost is an item of the reposter's followers' home
// feeds with repost_of; a repost of the reader's own post never enters
// it; one whose original, or another repost of it, is among the 40
// items below is left out (beyond 40 it shows); {"reposts": false} on a
// follow takes that followee's reposts out and the relationship says so,
// true brings them back; unreposting and deleting the original take the
// item away; the unread count counts what the feed shows. On push,
// hybrid (alice, with two followers, pulled) and pull.
func TestHomeReposts(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for _, mode := range []string{"push", "hybrid", "pull"} {
			t.Run(mode, func(t *testing.T) { testHomeReposts(t, env, mode) })
		}
	})
}

func testHomeReposts(t *testing.T, env map[string]string, mode string) {
	in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", mode, "FEEDD_PULL_THRESHOLD", "2", "FEEDD_RATE_USER_READ", "0", "FEEDD_RATE_USER_WRITE", "0")
	_, readerTok := in.user("reader")
	alice, aliceTok := in.user("alice")
	bob, bobTok := in.user("bob")
	carol, carolTok := in.user("carol") // followed by nobody
	dave, daveTok := in.user("dave")
	_, fanTok := in.user("fan") // alice's second follower: pulled on hybrid
	in.follow(readerTok, alice)
	in.follow(readerTok, bob)
	in.follow(readerTok, dave)
	in.follow(fanTok, alice)

	repostID := func(tok, user, original string) string {
		t.Helper()
		in.must(200, "PUT", "/v1/posts/"+original+"/repost", tok, nil)
		for _, it := range in.must(200, "GET", "/v1/users/"+user+"/posts", tok, nil).items() {
			if of, _ := it["repost_of"].(map[string]any); of != nil && of["id"] == original {
				return it["id"].(string)
			}
		}
		t.Fatalf("%s's repost of %s not among its posts", user, original)
		return ""
	}
	c0 := in.post(carolTok, "carol's")
	mine := in.post(readerTok, "the reader's own")
	a0 := in.post(aliceTok, "alice's a0")
	bc0 := repostID(bobTok, bob, c0) // shows
	repostID(bobTok, bob, mine)      // the reader's own: never
	repostID(bobTok, bob, a0)        // a0 is right below: left out
	dc0 := repostID(daveTok, dave, c0)
	a1 := in.post(aliceTok, "alice's a1")
	var fill []string
	for i := range 40 {
		fill = append(fill, in.post(aliceTok, fmt.Sprintf("alice's filler %d", i)))
	}
	ba1 := repostID(bobTok, bob, a1) // a1 is 41 items below: shows
	newestFirst := func(ids ...string) []string { slices.Reverse(ids); return ids }
	want := newestFirst(append(append([]string{mine, a0, bc0, a1}, fill...), ba1)...)
	check := func(what string, want []string) {
		t.Helper()
		for _, limit := range []int{7, 20} {
			in.feedEventually(readerTok, limit, want)
		}
		if m := in.must(200, "GET", "/v1/me/markers/home", readerTok, nil); m.body["unread_count"] != float64(len(want)) {
			t.Errorf("%s: unread_count = %v; want %d, what the feed shows", what, m.body["unread_count"], len(want))
		}
	}
	check("reposts", want)

	// The item: the repost's own id, author and time, the original with
	// its counts and the reader's states.
	items := in.must(200, "GET", "/v1/me/feed?limit=1", readerTok, nil).items()
	of := checkRepostItem(t, items[0], bob, a1, alice)
	if of["repost_count"] != float64(1) || of["reposted_by_me"] != false || of["content"] != "alice's a1" {
		t.Fatalf("the repost's original in the reader's feed: %v", of)
	}
	// The reader reposts a1 too: bob's repost shows it. The reader's own
	// repost has bob's below it, so the reader's feed leaves it out.
	in.must(200, "PUT", "/v1/posts/"+a1+"/repost", readerTok, nil)
	items = in.must(200, "GET", "/v1/users/"+bob+"/posts?limit=1", readerTok, nil).items()
	if of := checkRepostItem(t, items[0], bob, a1, alice); of["repost_count"] != float64(2) || of["reposted_by_me"] != true {
		t.Fatalf("the reader reposted a1 too: %v; want repost_count 2, reposted_by_me true", of)
	}
	check("the reader's own repost below bob's", want)
	in.must(200, "DELETE", "/v1/posts/"+a1+"/repost", readerTok, nil)

	// Bob's reposts off, and on again; the relationship says which.
	relation := func(want bool) {
		t.Helper()
		if r := in.must(200, "GET", "/v1/me/relationships/"+bob, readerTok, nil); r.body["reposts"] != want || r.body["following"] != true {
			t.Fatalf("relationship with bob: %s; want following, reposts %v", r.raw, want)
		}
	}
	relation(true)
	in.must(204, "PUT", "/v1/me/following/"+bob, readerTok, map[string]any{"reposts": false})
	relation(false)
	check("bob's reposts off", newestFirst(append([]string{mine, a0, a1}, fill...)...))
	in.must(204, "PUT", "/v1/me/following/"+bob, readerTok, nil) // no body: keeps the choice
	relation(false)
	in.must(204, "PUT", "/v1/me/following/"+bob, readerTok, map[string]any{"reposts": true})
	relation(true)
	check("bob's reposts on again", want)

	// Unreposting takes the item away; dave's repost of c0 had bob's
	// below it, and now shows.
	in.must(200, "DELETE", "/v1/posts/"+c0+"/repost", bobTok, nil)
	want = newestFirst(append(append([]string{mine, a0, dc0, a1}, fill...), ba1)...)
	check("bob's repost of c0 undone", want)
	// Deleting the original takes its reposts away.
	in.must(204, "DELETE", "/v1/posts/"+a1, aliceTok, nil)
	check("a1 deleted", newestFirst(append([]string{mine, a0, dc0}, fill...)...))

	// The live stream sends a repost with repost_of, and not one of the
	// reader's own post.
	s := in.openStream("/v1/me/feed/stream", readerTok)
	mine2 := in.post(readerTok, "the reader's second")
	s.expectPost(mine2)
	repostID(bobTok, bob, mine2)
	c1 := in.post(carolTok, "carol's second")
	ev := s.expectPost(repostID(bobTok, bob, c1))
	var item map[string]any
	if err := json.Unmarshal([]byte(ev.Data), &item); err != nil {
		t.Fatalf("stream event %q: %v", ev.Raw, err)
	}
	checkRepostItem(t, item, bob, c1, carol)
	s.Close()
}
