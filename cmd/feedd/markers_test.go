package main

import (
	"fmt"
	"slices"
	"testing"
)

// TestMarkers: the home marker moves only forward, takes any post (a
// deleted one too) and refuses the rest; its unread count is exact over
// pushed and pulled authors with deletes left out, stops at the cap, and
// everything survives the loss of the cache.
func TestMarkers(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		opts := []string{"FEEDD_FANOUT_MODE", "hybrid", "FEEDD_PULL_THRESHOLD", "2", "FEEDD_UNREAD_CAP", "8"}
		in := startFeedd(t, env, nil, opts...)
		star, starTok := in.user("star")
		friend, friendTok := in.user("friend")
		_, readerTok := in.user("reader")
		_, fanTok := in.user("fan")
		in.follow(fanTok, star)
		in.follow(readerTok, star)
		in.follow(readerTok, friend)
		if got := in.must(200, "GET", "/v1/users/"+star, readerTok, nil).str("delivery_mode"); got != "pull" {
			t.Fatalf("star delivery_mode = %q; want pull", got)
		}
		const path = "/v1/me/markers/home"
		marker := func(r resp) (string, int, bool) {
			t.Helper()
			last, _ := r.body["last_read_id"].(string)
			n, _ := r.body["unread_count"].(float64)
			capped, _ := r.body["unread_capped"].(bool)
			if (last == "") != (r.body["updated_at"] == nil) {
				t.Fatalf("marker %s: last_read_id and updated_at must be both set or both null", r.raw)
			}
			return last, int(n), capped
		}
		want := func(what string, r resp, wantLast string, wantN int, wantCapped bool) {
			t.Helper()
			if last, n, capped := marker(r); last != wantLast || n != wantN || capped != wantCapped {
				t.Fatalf("%s: %s; want last_read_id %q, unread_count %d, unread_capped %v", what, r.raw, wantLast, wantN, wantCapped)
			}
		}

		// The reader's own post is on its home feed and counts as unread,
		// as the stream sends it: the count is of what the feed holds.
		posts := []string{in.post(readerTok, "my own, on my home feed too")} // newest first
		for i := range 3 {
			posts = append([]string{in.post(starTok, fmt.Sprint("star ", i))}, posts...)
			posts = append([]string{in.post(friendTok, fmt.Sprint("friend ", i))}, posts...)
		}
		in.feedEventually(readerTok, 10, posts)
		want("no marker", in.must(200, "GET", path, readerTok, nil), "", 7, false)

		// Deleted posts, one pulled and one pushed, are not counted.
		deleted := []string{posts[1], posts[4]} // star 2, friend 0
		in.must(204, "DELETE", "/v1/posts/"+posts[1], starTok, nil)
		in.must(204, "DELETE", "/v1/posts/"+posts[4], friendTok, nil)
		live := slices.DeleteFunc(slices.Clone(posts), func(id string) bool { return slices.Contains(deleted, id) })
		in.feedEventually(readerTok, 10, live)
		want("after deletes", in.must(200, "GET", path, readerTok, nil), "", 5, false)

		set := func(id string) resp { return in.must(200, "PUT", path, readerTok, map[string]any{"last_read_id": id}) }
		want("set to the third live post", set(live[2]), live[2], 2, false)
		want("set back", set(live[3]), live[2], 2, false)
		want("set back to a deleted post", set(posts[4]), live[2], 2, false)
		want("get", in.must(200, "GET", path, readerTok, nil), live[2], 2, false)
		want("set to a deleted post above", set(posts[1]), posts[1], 1, false)
		for _, body := range []any{map[string]any{"last_read_id": "1"}, map[string]any{"last_read_id": "x"}, map[string]any{}, "{"} {
			if r := in.do("PUT", path, readerTok, body); r.status != 400 {
				t.Fatalf("PUT %v: status %d; want 400; body %s", body, r.status, r.raw)
			}
		}
		// A marker of one reader is its own.
		want("another reader", in.must(200, "GET", path, fanTok, nil), "", 2, false)

		// The cap.
		for i := range 9 {
			live = append([]string{in.post(friendTok, fmt.Sprint("more ", i))}, live...)
		}
		in.feedEventually(readerTok, 10, live)
		want("past the cap", in.must(200, "GET", path, readerTok, nil), posts[1], 8, true)
		want("at the cap", set(live[8]), live[8], 8, false)

		// Losing the cache loses nothing.
		if _, ok := env["FEEDD_REDIS_URL"]; ok {
			flushRedis(t, env)
		} else {
			in.stop()
			in = startFeedd(t, env, nil, opts...)
		}
		want("after the cache's loss", in.must(200, "GET", path, readerTok, nil), live[8], 8, false)
		want("set back after the cache's loss", set(live[9]), live[8], 8, false)
	})
}
