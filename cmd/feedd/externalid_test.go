package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestExternalIDs checks external ids end to end on every stack: a post
// created with one shows it on every representation (feed, author page,
// post page, likes list, top posts, the live stream); the same external
// id again is 409 external_id_exists naming the post, with or without an
// idempotency key, and writes nothing; a repeat with the first key is the
// first post.
func TestExternalIDs(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		env["FEEDD_RATE_USER_READ"] = "0"
		in := startFeedd(t, env, nil)
		aliceID, alice := in.user("alice")
		bobID, bob := in.user("bob")
		in.follow(bob, aliceID)
		s := in.openStream("/v1/me/feed/stream", bob)

		const ext = `"external_id":"blog-9913"`
		created := in.must(201, "POST", "/v1/posts", alice, `{"content":"imported","external_id":"blog-9913"}`,
			"Idempotency-Key", "first")
		id := created.str("id")
		if created.str("external_id") != "blog-9913" {
			t.Fatalf("created post = %s; want external_id blog-9913", created.raw)
		}
		if ev := s.expectPost(id); !bytes.Contains([]byte(ev.Data), []byte(ext)) {
			t.Errorf("stream event of the post = %s; want %s", ev.Data, ext)
		}
		plain := in.post(alice, "no external id")
		s.expectPost(plain)
		in.must(200, "PUT", "/v1/posts/"+id+"/like", bob, nil)
		testenv.Eventually(t, 10*time.Second, "external_id on every representation of the post", func() bool {
			views := in.postViews(bob, id, aliceID, bobID)
			for _, where := range []string{"feed", "author page", "likes list", "top posts", "post page"} {
				if !bytes.Contains(views[where], []byte(ext)) {
					return false
				}
			}
			return true
		})
		if r := in.must(200, "GET", "/v1/posts/"+plain, bob, nil); bytes.Contains(r.raw, []byte(`"external_id"`)) {
			t.Errorf("a post without an external id = %s; want no external_id", r.raw)
		}

		conflict := func(r resp) {
			t.Helper()
			e, _ := r.body["error"].(map[string]any)
			if r.errCode() != "external_id_exists" || e["post_id"] != id {
				t.Fatalf("used external id: %d %s; want 409 external_id_exists with post_id %s", r.status, r.raw, id)
			}
		}
		conflict(in.must(409, "POST", "/v1/posts", alice, `{"content":"again","external_id":"blog-9913"}`))
		conflict(in.must(409, "POST", "/v1/posts", alice, `{"content":"again","external_id":"blog-9913"}`,
			"Idempotency-Key", "second"))
		// The first key's repeat is the first post; the first key with
		// another external id is another request.
		if r := in.must(201, "POST", "/v1/posts", alice, `{"external_id":"blog-9913","content":"imported"}`,
			"Idempotency-Key", "first"); r.str("id") != id {
			t.Errorf("repeat with the first key: post %s; want %s", r.str("id"), id)
		}
		in.must(422, "POST", "/v1/posts", alice, `{"content":"imported","external_id":"blog-9914"}`, "Idempotency-Key", "first")
		// Another author may use it.
		in.must(201, "POST", "/v1/posts", bob, `{"content":"bob's","external_id":"blog-9913"}`)

		// Nothing of the refused requests reached alice's posts.
		page := in.must(200, "GET", "/v1/users/"+aliceID+"/posts?limit=100", bob, nil).items()
		if len(page) != 2 || page[0]["id"] != plain || page[1]["id"] != id {
			t.Errorf("alice's posts = %v; want %s and %s", page, plain, id)
		}
		// Deleted, the external id stays taken.
		in.must(204, "DELETE", "/v1/posts/"+id, alice, nil)
		conflict(in.must(409, "POST", "/v1/posts", alice, `{"content":"again","external_id":"blog-9913"}`))
	})
}
