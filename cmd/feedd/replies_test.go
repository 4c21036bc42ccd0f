package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// userWithID creates a user with the given id (so that a sharded stack
// places users on the shards a test wants) and returns a token for it.
func (in *instance) userWithID(name, id string) string {
	in.t.Helper()
	in.must(201, "POST", "/v1/users", in.admin, map[string]any{"name": name, "id": id})
	return in.must(201, "POST", "/v1/users/"+id+"/tokens", in.admin, nil).str("token")
}

// reply posts a reply to parent and returns its id, checking the fields
// a reply carries.
func (in *instance) reply(token, parent, parentAuthor, content string) string {
	in.t.Helper()
	r := in.must(201, "POST", "/v1/posts", token, map[string]any{"content": content, "in_reply_to_id": parent})
	if r.str("in_reply_to_id") != parent || r.str("in_reply_to_author_id") != parentAuthor || r.body["reply_count"] != float64(0) {
		in.t.Fatalf("reply to %s: %s; want in_reply_to_id %s, in_reply_to_author_id %s, reply_count 0", parent, r.raw, parent, parentAuthor)
	}
	return r.str("id")
}

// replyCount is a post's reply_count as GET /v1/posts/{id} shows it.
func (in *instance) replyCount(token, id string) float64 {
	in.t.Helper()
	n, ok := in.must(200, "GET", "/v1/posts/"+id, token, nil).body["reply_count"].(float64)
	if !ok {
		in.t.Fatalf("post %s has no reply_count", id)
	}
	return n
}

// repliesAll pages through a post's replies with the given page size,
// checking that every page but the last is full.
func (in *instance) repliesAll(token, id string, limit int) []string {
	in.t.Helper()
	var ids []string
	cursor := ""
	for range 100 {
		r := in.must(200, "GET", fmt.Sprintf("/v1/posts/%s/replies?limit=%d&cursor=%s", id, limit, cursor), token, nil)
		items := r.items()
		for _, it := range items {
			ids = append(ids, it["id"].(string))
			if _, ok := it["reply_count"].(float64); !ok {
				in.t.Fatalf("replies of %s: item %v has no reply_count", id, it)
			}
		}
		next, _ := r.body["next_cursor"].(string)
		if next == "" {
			return ids
		}
		if len(items) != limit {
			in.t.Fatalf("replies of %s: a page of %d of %d before the end: %s", id, len(items), limit, r.raw)
		}
		cursor = next
	}
	in.t.Fatalf("replies of %s: no end", id)
	return nil
}

// thread returns the ids of a post's context.
func (in *instance) thread(token, id string) (ancestors, descendants []string) {
	in.t.Helper()
	r := in.must(200, "GET", "/v1/posts/"+id+"/context", token, nil)
	for _, k := range []struct {
		key string
		out *[]string
	}{{"ancestors", &ancestors}, {"descendants", &descendants}} {
		raw, ok := r.body[k.key].([]any)
		if !ok {
			in.t.Fatalf("context of %s: no %s: %s", id, k.key, r.raw)
		}
		*k.out = []string{}
		for _, it := range raw {
			*k.out = append(*k.out, it.(map[string]any)["id"].(string))
		}
	}
	return ancestors, descendants
}

// TestReplies: a reply carries its parent and the parent's author, every
// post carries reply_count, exact after replies and deletes (of a reply:
// the count drops; of a parent: its replies stay) and after Redis is
// lost; replies page oldest first in full pages past deleted replies and
// leave out muted and blocked authors; a thread lists its ancestors from
// the root (at most 40) and its descendants depth first; bad, unknown,
// deleted and blocked parents are refused; a purge takes the deleted
// user's replies out of the counts. The four users live on four shards
// of the sharded stacks, so every reply crosses shards.
func TestReplies(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_RATE_USER_READ", "0", "FEEDD_RATE_USER_WRITE", "0")
		const alice, bob, carol, dave = "9201", "9202", "9203", "9204"
		ta, tb, tc, td := in.userWithID("alice", alice), in.userWithID("bob", bob), in.userWithID("carol", carol), in.userWithID("dave", dave)

		root := in.post(ta, "root")
		r1 := in.reply(tb, root, alice, "r1 by bob")
		r2 := in.reply(tc, root, alice, "r2 by carol")
		r3 := in.reply(ta, r1, bob, "r3 by alice, under r1")
		r4 := in.reply(td, r3, alice, "r4 by dave, under r3")
		// The replier sees the count at once.
		if n := in.replyCount(tb, root); n != 2 {
			t.Fatalf("root's reply_count %v; want 2", n)
		}
		// Every post object carries reply_count: the author's posts here.
		posts := in.must(200, "GET", "/v1/users/"+alice+"/posts", ta, nil).items()
		counts := map[string]any{}
		for _, p := range posts {
			counts[p["id"].(string)] = p["reply_count"]
		}
		if counts[root] != float64(2) || counts[r3] != float64(1) {
			t.Fatalf("alice's posts' reply counts %v; want root 2, r3 1", counts)
		}
		// A reply's fields survive the caches: read back, and after
		// Redis is lost.
		for round := range 2 {
			got := in.must(200, "GET", "/v1/posts/"+r4, ta, nil)
			if got.str("in_reply_to_id") != r3 || got.str("in_reply_to_author_id") != alice {
				t.Fatalf("round %d: r4 read back: %s", round, got.raw)
			}
			flushRedis(t, env)
		}

		// Bad, unknown and deleted parents.
		for _, bad := range []any{"abc", "-", 12.5, true} {
			if r := in.must(400, "POST", "/v1/posts", tb, map[string]any{"content": "x", "in_reply_to_id": bad}); r.errCode() != "invalid" {
				t.Fatalf("in_reply_to_id %v: %s; want invalid", bad, r.raw)
			}
		}
		if r := in.must(404, "POST", "/v1/posts", tb, map[string]any{"content": "x", "in_reply_to_id": "123456789"}); r.errCode() != "not_found" {
			t.Fatalf("a reply to an unknown post: %s; want not_found", r.raw)
		}
		gone := in.post(tc, "soon deleted")
		in.must(204, "DELETE", "/v1/posts/"+gone, tc, nil)
		in.must(404, "POST", "/v1/posts", tb, map[string]any{"content": "x", "in_reply_to_id": gone})
		in.must(404, "GET", "/v1/posts/"+gone+"/replies", tb, nil)
		in.must(404, "GET", "/v1/posts/"+gone+"/context", tb, nil)
		in.must(404, "GET", "/v1/posts/123456789/replies", tb, nil)
		in.must(400, "GET", "/v1/posts/abc/context", tb, nil)

		// Full pages past deleted replies, oldest first.
		var more []string
		for i := range 6 {
			more = append(more, in.reply(tb, root, alice, fmt.Sprintf("more %d", i)))
		}
		in.must(204, "DELETE", "/v1/posts/"+more[1], tb, nil)
		in.must(204, "DELETE", "/v1/posts/"+more[2], tb, nil)
		in.must(204, "DELETE", "/v1/posts/"+more[4], tb, nil)
		want := []string{r1, r2, more[0], more[3], more[5]}
		for _, limit := range []int{1, 2, 3, 20} {
			if got := in.repliesAll(ta, root, limit); !slices.Equal(got, want) {
				t.Fatalf("replies of root by %d: %v; want %v", limit, got, want)
			}
		}
		if n := in.replyCount(ta, root); n != 5 {
			t.Fatalf("root's reply_count after 3 deletes: %v; want 5", n)
		}

		// The thread: ancestors from the root, descendants depth first.
		up, down := in.thread(tc, r3)
		if !slices.Equal(up, []string{root, r1}) || !slices.Equal(down, []string{r4}) {
			t.Fatalf("context of r3: %v / %v; want [root r1] / [r4]", up, down)
		}
		up, down = in.thread(tc, root)
		if wantDown := []string{r1, r3, r4, r2, more[0], more[3], more[5]}; len(up) != 0 || !slices.Equal(down, wantDown) {
			t.Fatalf("context of root: %v / %v; want [] / %v", up, down, wantDown)
		}

		// Muted and blocked authors are left out; a deleted parent keeps
		// its replies, and a deleted reply's own replies stay in the thread.
		in.must(204, "PUT", "/v1/me/mutes/"+dave, ta, nil)
		if _, down := in.thread(ta, root); slices.Contains(down, r4) {
			t.Fatalf("alice muted dave, yet the thread shows r4: %v", down)
		}
		in.must(204, "PUT", "/v1/me/blocks/"+bob, tc, nil)
		if got := in.repliesAll(tc, root, 2); !slices.Equal(got, []string{r2}) {
			t.Fatalf("carol blocks bob: replies of root %v; want [r2]", got)
		}
		if r := in.must(403, "POST", "/v1/posts", tb, map[string]any{"content": "x", "in_reply_to_id": r2}); r.errCode() != "blocked" {
			t.Fatalf("bob replies to carol, who blocks him: %s; want blocked", r.raw)
		}
		bobs := in.post(tb, "bob's")
		in.must(403, "POST", "/v1/posts", tc, map[string]any{"content": "x", "in_reply_to_id": bobs})
		in.must(204, "DELETE", "/v1/posts/"+r3, ta, nil)
		if n := in.replyCount(ta, r1); n != 0 {
			t.Fatalf("r1's reply_count after r3's delete: %v; want 0", n)
		}
		if up, down := in.thread(tb, r4); !slices.Equal(up, []string{root, r1}) || len(down) != 0 {
			t.Fatalf("context of r4 under deleted r3: %v / %v; want [root r1] / []", up, down)
		}
		in.must(204, "DELETE", "/v1/posts/"+r1, tb, nil)
		if n := in.replyCount(ta, root); n != 4 {
			t.Fatalf("root's reply_count after r1's delete: %v; want 4", n)
		}

		// At most 40 ancestors, the nearest.
		chain := []string{in.post(td, "chain 0")}
		for i := 1; i <= 41; i++ {
			chain = append(chain, in.reply(td, chain[i-1], dave, fmt.Sprintf("chain %d", i)))
		}
		if up, _ := in.thread(td, chain[41]); !slices.Equal(up, chain[1:41]) {
			t.Fatalf("ancestors of a 42-post chain's end: %d, from %v; want the 40 nearest", len(up), up[:min(len(up), 2)])
		}

		// Redis lost: the counts are SQL's.
		flushRedis(t, env)
		if n := in.replyCount(ta, root); n != 4 {
			t.Fatalf("root's reply_count after Redis was lost: %v; want 4", n)
		}

		// A purge takes bob's replies out of the counts: root keeps
		// carol's r2.
		in.must(202, "DELETE", "/v1/users/"+bob, in.admin, nil)
		in.purged(bob)
		testenv.Eventually(t, 10*time.Second, "root's count without bob's replies", func() bool {
			return in.replyCount(ta, root) == 1
		})
		if got := in.repliesAll(ta, root, 5); !slices.Equal(got, []string{r2}) {
			t.Fatalf("replies of root after bob's purge: %v; want [r2]", got)
		}
	})
}
