package main

import (
	"context"
	"slices"
	"testing"

	"github.com/feedd/feedd/client"
)

// TestHomeReplies: the home feed's rule for replies (Mastodon's). Under
// the default, "following", a reply of someone the reader follows shows
// when it answers the reader, its own author or someone else the reader
// follows, not when it answers a stranger; "all" shows every reply, "none"
// only threads; the reader's own replies always show. Pages stay full
// around what the rule leaves out, the unread count counts what the feed
// shows, a change of the rule applies from the next page, the live stream
// applies it too, and it survives the loss of Redis. A list applies its own
// rule (its replies setting), in its pages and its stream. On push, hybrid
// (alice, with two followers, pulled) and pull.
func TestHomeReplies(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for _, mode := range []string{"push", "hybrid", "pull"} {
			t.Run(mode, func(t *testing.T) { testHomeReplies(t, env, mode) })
		}
	})
}

func testHomeReplies(t *testing.T, env map[string]string, mode string) {
	in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", mode, "FEEDD_PULL_THRESHOLD", "2", "FEEDD_RATE_USER_READ", "0")
	_, readerTok := in.user("reader")
	alice, aliceTok := in.user("alice")
	bob, bobTok := in.user("bob")
	_, carolTok := in.user("carol")
	_, fanTok := in.user("fan") // alice's second follower: pulled on hybrid
	in.follow(readerTok, alice)
	in.follow(readerTok, bob)
	in.follow(fanTok, alice)

	reply := func(tok, to, content string) string {
		t.Helper()
		r := in.must(201, "POST", "/v1/posts", tok, map[string]any{"content": content, "in_reply_to_id": to})
		return r.str("id")
	}
	carol0 := in.post(carolTok, "carol's root")
	bob0 := in.post(bobTok, "bob's root")
	alice0 := in.post(aliceTok, "alice's root")
	thread := reply(aliceTok, alice0, "alice, 2/2") // a thread: always
	toBob := reply(aliceTok, bob0, "alice to bob")  // to a followee
	toCarol := reply(aliceTok, carol0, "alice to carol")
	mine := in.post(readerTok, "the reader's own")
	toReader := reply(aliceTok, mine, "alice to the reader")
	ownReply := reply(readerTok, carol0, "the reader to carol") // own: always
	tail := in.post(bobTok, "bob, after")
	newestFirst := func(ids ...string) []string { slices.Reverse(ids); return ids }

	byRule := map[string][]string{
		"following": newestFirst(bob0, alice0, thread, toBob, mine, toReader, ownReply, tail),
		"all":       newestFirst(bob0, alice0, thread, toBob, toCarol, mine, toReader, ownReply, tail),
		"none":      newestFirst(bob0, alice0, thread, mine, ownReply, tail),
	}
	check := func(rule string) {
		t.Helper()
		want := byRule[rule]
		for _, limit := range []int{2, 3, 20} { // full pages around what is left out
			in.feedEventually(readerTok, limit, want)
		}
		if m := in.must(200, "GET", "/v1/me/markers/home", readerTok, nil); m.body["unread_count"] != float64(len(want)) {
			t.Errorf("rule %s: unread_count = %v; want %d, what the feed shows", rule, m.body["unread_count"], len(want))
		}
	}
	check("following")
	if r := in.must(200, "GET", "/v1/me/settings", readerTok, nil); r.str("home_replies") != "following" {
		t.Fatalf("settings never set: %s; want home_replies following", r.raw)
	}
	for _, rule := range []string{"all", "none", "following"} {
		if r := in.must(200, "PUT", "/v1/me/settings", readerTok, map[string]any{"home_replies": rule}); r.str("home_replies") != rule {
			t.Fatalf("PUT settings %s: %s", rule, r.raw)
		}
		check(rule)
	}
	if r := in.must(400, "PUT", "/v1/me/settings", readerTok, map[string]any{"home_replies": "some"}); r.errCode() != "invalid" {
		t.Fatalf("PUT settings some: %s; want invalid", r.raw)
	}
	// Another reader's rule is its own: alice's fan sees alice's reply to
	// a stranger under "all" while the reader keeps "following".
	in.must(200, "PUT", "/v1/me/settings", fanTok, map[string]any{"home_replies": "all"})
	if got := in.feedAll(fanTok, 20); !slices.Contains(got, toCarol) {
		t.Errorf("fan's feed under all = %v; want alice's reply to carol %s", got, toCarol)
	}
	check("following")

	// A list's rule for replies (its replies setting): under "list" only
	// answers to members, threads and answers to the owner; "none" the
	// last two; "followed" answers to members and to whom the owner
	// follows too. The reader's list of alice, then of alice and bob.
	ctx := context.Background()
	list, err := in.as(readerTok).CreateList(ctx, client.CreateListParams{Name: "replies", Replies: "list"})
	if err != nil {
		t.Fatal(err)
	}
	lpath := "/v1/lists/" + list.ID.String()
	in.must(204, "PUT", lpath+"/members/"+alice, readerTok, nil)
	listIs := func(what string, want ...string) {
		t.Helper()
		want = newestFirst(want...)
		for _, limit := range []int{2, 20} {
			got := in.pageAll("list", limit, func(p client.PageParams) (client.Page[client.Post], error) {
				return in.as(readerTok).ListFeedPage(ctx, list.ID, p)
			})
			if !slices.Equal(got, want) {
				t.Fatalf("%s, limit %d: list = %v; want %v", what, limit, got, want)
			}
		}
	}
	listIs("list of alice, replies list", alice0, thread, toReader)
	in.must(204, "PUT", lpath+"/members/"+bob, readerTok, nil)
	listIs("list of alice and bob, replies list", bob0, alice0, thread, toBob, toReader, tail)
	in.must(200, "PATCH", lpath, readerTok, map[string]any{"replies": "none"})
	listIs("replies none", bob0, alice0, thread, toReader, tail)
	in.must(200, "PATCH", lpath, readerTok, map[string]any{"replies": "followed"})
	in.must(204, "DELETE", lpath+"/members/"+bob, readerTok, nil)
	listIs("list of alice, replies followed", alice0, thread, toBob, toReader)

	// The live stream applies the rule: the reply to a stranger is not
	// sent, the one to a followee is.
	s := in.openStream("/v1/me/feed/stream", readerTok)
	ls := in.openStream("/v1/me/feed/stream?list="+list.ID.String(), readerTok)
	reply(aliceTok, carol0, "alice to carol, live")
	live := reply(aliceTok, bob0, "alice to bob, live")
	s.expectPost(live)
	ls.expectPost(live) // and not the one to carol before it
	s.Close()
	ls.Close()

	// Redis lost: the rule comes back from SQL with the hidden set.
	in.must(200, "PUT", "/v1/me/settings", readerTok, map[string]any{"home_replies": "none"})
	flushRedis(t, env)
	got := in.feedAll(readerTok, 20)
	for _, id := range got {
		if id == toBob || id == toReader || id == toCarol {
			t.Fatalf("after a Redis flush, rule none: feed %v holds the reply %s", got, id)
		}
	}
	if !slices.Contains(got, thread) || !slices.Contains(got, ownReply) {
		t.Fatalf("after a Redis flush, rule none: feed %v; want the thread %s and the reader's own reply %s", got, thread, ownReply)
	}
}
