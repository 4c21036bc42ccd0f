package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// noticeGroup is a notification group as a client reads it.
type noticeGroup struct {
	id, kind, post string
	actors         []string
	count          int
}

// notices reads one page of token's notifications (query: the query
// string) and its next cursor.
func (in *instance) notices(token, query string) ([]noticeGroup, string) {
	in.t.Helper()
	r := in.must(200, "GET", "/v1/me/notifications?"+query, token, nil)
	items, _ := r.body["items"].([]any)
	var out []noticeGroup
	for _, it := range items {
		m := it.(map[string]any)
		g := noticeGroup{id: m["id"].(string), kind: m["type"].(string), count: int(m["actor_count"].(float64))}
		if p, ok := m["post"].(map[string]any); ok {
			g.post = p["id"].(string)
			if _, ok := p["content"]; !ok {
				in.t.Fatalf("group %s: post %s shows no content: %s", g.id, g.post, r.raw)
			}
		}
		for _, a := range m["actors"].([]any) {
			g.actors = append(g.actors, a.(map[string]any)["id"].(string))
		}
		if _, err := time.Parse(time.RFC3339Nano, m["latest_at"].(string)); err != nil {
			in.t.Fatalf("group %s: latest_at: %v", g.id, err)
		}
		out = append(out, g)
	}
	next, _ := r.body["next_cursor"].(string)
	return out, next
}

// noticesEventually waits until token's first page of notifications is
// want (groups as "kind post count actor,actor,…", newest first): likes
// reach SQL through the likes writer's batches.
func (in *instance) noticesEventually(token, query string, want ...string) []noticeGroup {
	in.t.Helper()
	var got []string
	var groups []noticeGroup
	for deadline := time.Now().Add(20 * time.Second); ; {
		groups, _ = in.notices(token, query)
		got = got[:0]
		for _, g := range groups {
			got = append(got, fmt.Sprintf("%s %s %d %s", g.kind, g.post, g.count, strings.Join(g.actors, ",")))
		}
		if slices.Equal(got, want) {
			return groups
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("notifications ?%s:\n got %q\nwant %q", query, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNotifications: likes of a post are one group with an exact count
// and its 3 newest actors, follows another; an unlike or unfollow takes
// its actor out and a like again puts it back once; one's own like, and
// muted and blocked users, notify nothing; the types filter, paging, the
// marker and its unread count; everything holds after the cache's loss
// and a restart; a group older than the window (FEEDD_NOTIFICATION_WINDOW,
// here made 1 ms) starts a new group; replies notify one by one, reposts
// of one post as a group.
func TestNotifications(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		author, authorTok := in.user("author")
		names := []string{"a", "b", "c", "d", "muted", "blocked", "e", "f"}
		ids, toks := map[string]string{}, map[string]string{}
		for _, n := range names {
			ids[n], toks[n] = in.user(n)
		}
		post := in.post(authorTok, "like me")
		like := func(who, id string, on bool) {
			t.Helper()
			method := "PUT"
			if !on {
				method = "DELETE"
			}
			in.must(200, method, "/v1/posts/"+id+"/like", toks[who], nil)
		}
		for _, n := range []string{"muted", "blocked", "a", "b", "c", "d"} {
			like(n, post, true)
		}
		in.must(200, "PUT", "/v1/posts/"+post+"/like", authorTok, nil) // one's own: nobody is told
		in.must(204, "PUT", "/v1/me/mutes/"+ids["muted"], authorTok, nil)
		in.must(204, "PUT", "/v1/me/blocks/"+ids["blocked"], authorTok, nil)
		in.follow(toks["a"], author)
		in.follow(toks["b"], author)
		ab := ids["b"] + "," + ids["a"]
		likes := func(n int, actors ...string) string {
			var as []string
			for _, a := range actors {
				as = append(as, ids[a])
			}
			return fmt.Sprintf("like %s %d %s", post, n, strings.Join(as, ","))
		}
		groups := in.noticesEventually(authorTok, "", "follow  2 "+ab, likes(4, "d", "c", "b"))
		in.noticesEventually(authorTok, "types=like", likes(4, "d", "c", "b"))
		in.noticesEventually(authorTok, "types=follow,repost", "follow  2 "+ab)
		if r := in.do("GET", "/v1/me/notifications?types=like,poke", authorTok, nil); r.status != 400 || !strings.Contains(string(r.raw), `"code":"invalid"`) {
			t.Fatalf("types=like,poke: %d %s; want 400 invalid", r.status, r.raw)
		}
		// Nobody else is told anything.
		if gs, _ := in.notices(toks["a"], ""); len(gs) != 0 {
			t.Fatalf("a's notifications: %+v; want none", gs)
		}

		// Paging, one group a page.
		first, next := in.notices(authorTok, "limit=1")
		second, last := in.notices(authorTok, "limit=1&cursor="+next)
		if len(first) != 1 || len(second) != 1 || first[0].id != groups[0].id || second[0].id != groups[1].id || last != "" {
			t.Fatalf("pages of 1: %+v then %+v (next %q); want the two groups, then no cursor", first, second, last)
		}

		// Undo takes the actor out; again puts it back, counted once.
		like("d", post, false)
		in.unfollowAs(toks["b"], author)
		in.noticesEventually(authorTok, "", "follow  1 "+ids["a"], likes(3, "c", "b", "a"))
		like("d", post, true)
		like("d", post, true)
		in.noticesEventually(authorTok, "types=like", likes(4, "d", "c", "b"))
		// Unmuted, the muted liker is back; unblocking does not bring a
		// block's removed follow back, but its like was never removed.
		in.must(204, "DELETE", "/v1/me/mutes/"+ids["muted"], authorTok, nil)
		in.noticesEventually(authorTok, "types=like", likes(5, "d", "c", "b"))
		in.must(204, "PUT", "/v1/me/mutes/"+ids["muted"], authorTok, nil)

		// The marker counts groups above it.
		const mpath = "/v1/me/markers/notifications"
		unread := func(r resp) int { n, _ := r.body["unread_count"].(float64); return int(n) }
		if r := in.must(200, "GET", mpath, authorTok, nil); unread(r) != 2 || r.body["last_read_id"] != nil {
			t.Fatalf("marker never set: %s; want 2 unread, no position", r.raw)
		}
		top, _ := in.notices(authorTok, "limit=1")
		if r := in.must(200, "PUT", mpath, authorTok, map[string]any{"last_read_id": top[0].id}); unread(r) != 0 || r.str("last_read_id") != top[0].id {
			t.Fatalf("marker set to the newest group: %s; want 0 unread", r.raw)
		}
		if r := in.do("PUT", mpath, authorTok, map[string]any{"last_read_id": "x"}); r.status != 400 {
			t.Fatalf("PUT marker x: %d; want 400", r.status)
		}
		other := in.post(authorTok, "another")
		like("e", other, true)
		in.noticesEventually(authorTok, "types=like", fmt.Sprintf("like %s 1 %s", other, ids["e"]), likes(4, "d", "c", "b"))
		if r := in.must(200, "GET", mpath, authorTok, nil); unread(r) != 1 {
			t.Fatalf("marker after a new like: %s; want 1 unread", r.raw)
		}

		// Reposts of one post group; an unrepost takes its actor out; one's
		// own repost tells nobody.
		repost := func(tok, method string) {
			t.Helper()
			in.must(200, method, "/v1/posts/"+post+"/repost", tok, nil)
		}
		repost(toks["a"], "PUT")
		repost(toks["b"], "PUT")
		repost(toks["b"], "PUT") // idempotent
		repost(authorTok, "PUT")
		in.noticesEventually(authorTok, "types=repost", fmt.Sprintf("repost %s 2 %s,%s", post, ids["b"], ids["a"]))
		repost(toks["a"], "DELETE")
		in.noticesEventually(authorTok, "types=repost", fmt.Sprintf("repost %s 1 %s", post, ids["b"]))

		// The counts are SQL's: the cache's loss and a restart change
		// nothing. Restarted with a window of 1 ms, a like starts a group.
		if _, ok := env["FEEDD_REDIS_URL"]; ok {
			flushRedis(t, env)
		}
		in.noticesEventually(authorTok, "types=like", fmt.Sprintf("like %s 1 %s", other, ids["e"]), likes(4, "d", "c", "b"))
		in.stop()
		in = startFeedd(t, env, nil, "FEEDD_NOTIFICATION_WINDOW", "1ms")
		like("f", other, true)
		in.noticesEventually(authorTok, "types=like",
			fmt.Sprintf("like %s 1 %s", other, ids["f"]), fmt.Sprintf("like %s 1 %s", other, ids["e"]), likes(4, "d", "c", "b"))
		// An unlike finds its actor in whichever group holds it.
		like("e", other, false)
		in.noticesEventually(authorTok, "types=like", fmt.Sprintf("like %s 1 %s", other, ids["f"]), likes(4, "d", "c", "b"))

		// Replies: a group each, never grouped, whose post is the reply;
		// not one's own, not a muted user's; a deleted reply takes its
		// notification with it.
		reply := func(tok, to string) string {
			t.Helper()
			return in.must(201, "POST", "/v1/posts", tok, map[string]any{"content": "a reply", "in_reply_to_id": to}).str("id")
		}
		r1, r2 := reply(toks["a"], post), reply(toks["b"], post)
		reply(authorTok, post)
		reply(toks["muted"], post)
		r3 := reply(toks["a"], other)
		replied := func(r, who string) string { return fmt.Sprintf("reply %s 1 %s", r, ids[who]) }
		in.noticesEventually(authorTok, "types=reply", replied(r3, "a"), replied(r2, "b"), replied(r1, "a"))
		in.must(204, "DELETE", "/v1/posts/"+r2, toks["b"], nil)
		in.noticesEventually(authorTok, "types=reply", replied(r3, "a"), replied(r1, "a"))

	})
}

func (in *instance) unfollowAs(token, id string) {
	in.t.Helper()
	in.must(204, "DELETE", "/v1/me/following/"+id, token, nil)
}
