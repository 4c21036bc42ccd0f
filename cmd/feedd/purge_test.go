package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/social"
	"github.com/feedd/feedd/internal/testenv"
)

// heldPurges keeps the purger from claiming any purge until release is
// called, so that a test can look at a deletion before its purge runs.
type heldPurges struct {
	social.PurgeStore
	once sync.Once
	held chan struct{}
}

func holdPurges(d *deps) *heldPurges {
	h := &heldPurges{PurgeStore: d.workStore, held: make(chan struct{})}
	d.purges = h
	return h
}

func (h *heldPurges) release() { h.once.Do(func() { close(h.held) }) }

func (h *heldPurges) ClaimPurge(ctx context.Context, owner string, lease time.Duration) (int64, bool, error) {
	select {
	case <-h.held:
		return h.PurgeStore.ClaimPurge(ctx, owner, lease)
	default:
		return 0, false, nil
	}
}

// contains reports whether a response mentions any of ids.
func contains(r resp, ids ...string) bool {
	for _, id := range ids {
		if strings.Contains(string(r.raw), `"`+id+`"`) {
			return true
		}
	}
	return false
}

// TestAccountDeletion: DELETE /v1/users/{id} answers 202 and the user is
// gone at once on every process (404, their tokens 401, none of their
// posts on a feed page, post page, user page, likes list or top list, and
// pages stay full); the id cannot be created again while the purge runs
// (409 user_being_deleted); the purge then removes the follow edges and
// likes with every count exact, and the id can be created again, without
// the old tokens working for the new user.
func TestAccountDeletion(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		var held *heldPurges
		in := startFeedd(t, env, func(d *deps) { held = holdPurges(d) })
		procs := []*instance{in}
		if env["FEEDD_REDIS_URL"] != "" {
			procs = append(procs, startRole(t, "serve", env, nil))
		}
		alice, aliceTok := in.user("alice")
		bob, bobTok := in.user("bob")
		carol, carolTok := in.user("carol")
		in.follow(bobTok, alice)
		in.follow(bobTok, carol)
		in.follow(aliceTok, bob)
		in.follow(aliceTok, carol)
		var carolPosts []string
		for i := range 3 {
			carolPosts = append(carolPosts, in.post(carolTok, "carol "+string(rune('a'+i))))
		}
		var alicePosts []string
		for i := range 3 {
			alicePosts = append(alicePosts, in.post(aliceTok, "alice "+string(rune('a'+i))))
		}
		bobPost := in.post(bobTok, "bob's")
		// alice is in one of bob's lists; the purge takes her out.
		bobList := in.must(201, "POST", "/v1/lists", bobTok, map[string]any{"name": "friends"}).str("id")
		in.must(204, "PUT", "/v1/lists/"+bobList+"/members/"+alice, bobTok, nil)
		in.must(204, "PUT", "/v1/lists/"+bobList+"/members/"+carol, bobTok, nil)
		in.must(200, "PUT", "/v1/posts/"+bobPost+"/like", aliceTok, nil)
		in.must(200, "PUT", "/v1/posts/"+alicePosts[0]+"/like", bobTok, nil)
		in.must(200, "PUT", "/v1/posts/"+alicePosts[0]+"/like", carolTok, nil)
		// Before: alice's posts are everywhere.
		testenv.Eventually(t, 20*time.Second, "alice's posts reach bob's feed and the top list", func() bool {
			return contains(in.do("GET", "/v1/me/feed?limit=3", bobTok, nil), alicePosts...) &&
				contains(in.do("GET", "/v1/posts/top?window=1h", bobTok, nil), alicePosts[0])
		})
		for _, p := range procs {
			p.must(200, "GET", "/v1/posts/"+alicePosts[1], bobTok, nil) // the post is in its caches
		}

		r := in.must(202, "DELETE", "/v1/users/"+alice, in.admin, nil)
		if r.str("id") != alice || r.str("status") != "deleting" {
			t.Fatalf("DELETE /v1/users/%s: %s; want id and status deleting", alice, r.raw)
		}
		in.must(202, "DELETE", "/v1/users/"+alice, in.admin, nil)
		in.must(404, "DELETE", "/v1/users/987654321", in.admin, nil)
		in.must(403, "DELETE", "/v1/users/"+bob, bobTok, nil)

		// At once, on every process: the contract is a second; the test
		// allows more for a loaded machine.
		for _, p := range procs {
			testenv.Eventually(t, 3*time.Second, "alice is gone through "+p.url, func() bool {
				u := p.do("GET", "/v1/users/"+alice, bobTok, nil)
				purge, _ := u.body["error"].(map[string]any)["purge"].(map[string]any)
				return u.status == 404 && u.errCode() == "not_found" && purge["status"] == "running" &&
					p.do("GET", "/v1/me/feed", aliceTok, nil).status == 401 &&
					p.do("GET", "/v1/posts/"+alicePosts[1], bobTok, nil).status == 404
			})
			// A full page of what is left, without alice's posts.
			feed := p.must(200, "GET", "/v1/me/feed?limit=3", bobTok, nil)
			if got := feed.items(); len(got) != 3 || contains(feed, alicePosts...) {
				t.Errorf("bob's feed through %s after the deletion: %s; want 3 posts, none of alice's", p.url, feed.raw)
			}
			p.must(404, "GET", "/v1/users/"+alice+"/posts", bobTok, nil)
			if l := p.must(200, "GET", "/v1/users/"+bob+"/likes", bobTok, nil); contains(l, alicePosts...) {
				t.Errorf("bob's likes through %s show alice's post: %s", p.url, l.raw)
			}
			if top := p.must(200, "GET", "/v1/posts/top?window=1h", bobTok, nil); contains(top, alicePosts...) {
				t.Errorf("top posts through %s show alice's post: %s", p.url, top.raw)
			}
		}
		if r := in.do("POST", "/v1/users", in.admin, map[string]any{"id": alice, "name": "alice again"}); r.status != 409 || r.errCode() != feed.EDELETING {
			t.Fatalf("create alice's id while her purge runs: %d %s; want 409 user_being_deleted", r.status, r.raw)
		}
		if j := in.must(200, "GET", "/v1/admin/jobs/"+alice, in.admin, nil); j.str("status") != "running" || j.str("kind") != "user_purge" {
			t.Fatalf("job while held: %s; want a running user_purge", j.raw)
		}
		in.must(404, "GET", "/v1/admin/jobs/"+bob, in.admin, nil)

		held.release()
		testenv.Eventually(t, 30*time.Second, "the purge finishes", func() bool {
			return in.must(200, "GET", "/v1/admin/jobs/"+alice, in.admin, nil).str("status") == "done"
		})
		u := in.do("GET", "/v1/users/"+alice, bobTok, nil)
		if purge, _ := u.body["error"].(map[string]any)["purge"].(map[string]any); u.status != 404 || purge["status"] != "done" {
			t.Errorf("alice after the purge: %d %s; want 404 with purge done", u.status, u.raw)
		}
		// Every count exact again.
		wantCounts := func(id string, followers, following float64) {
			t.Helper()
			u := in.must(200, "GET", "/v1/users/"+id, bobTok, nil)
			if u.body["follower_count"] != followers || u.body["following_count"] != following {
				t.Errorf("user %s after the purge: %s; want %v followers, %v following", id, u.raw, followers, following)
			}
		}
		wantCounts(bob, 0, 1)
		wantCounts(carol, 1, 0)
		if l := in.must(200, "GET", "/v1/lists/"+bobList, bobTok, nil); l.body["member_count"] != float64(1) {
			t.Errorf("bob's list after alice's purge: %s; want member_count 1", l.raw)
		}
		if m := in.must(200, "GET", "/v1/lists/"+bobList+"/members", bobTok, nil).items(); len(m) != 1 {
			t.Errorf("bob's list's members after alice's purge: %v; want carol alone", m)
		}
		testenv.Eventually(t, 10*time.Second, "bob's post loses alice's like", func() bool {
			n, _ := in.likeState(bobTok, bobPost)
			stats, rows := in.sqlLikes(bobPost)
			return n == 0 && stats == 0 && rows == 0
		})
		if left, err := in.sqlCount(`SELECT (SELECT COUNT(*) FROM follows WHERE follower_id = ? OR followee_id = ?)
			+ (SELECT COUNT(*) FROM likes WHERE user_id = ?) + (SELECT COUNT(*) FROM posts WHERE author_id = ?)
			+ (SELECT COUNT(*) FROM list_members WHERE member_id = ?)`,
			alice, alice, alice, alice, alice); err != nil || left != 0 {
			t.Errorf("alice's rows left after the purge: %d, %v; want 0", left, err)
		}

		// The id is free again; alice's old token does not work for the
		// new user, a new one does.
		in.must(201, "POST", "/v1/users", in.admin, map[string]any{"id": alice, "name": "new alice"})
		tok := in.must(201, "POST", "/v1/users/"+alice+"/tokens", in.admin, nil).str("token")
		for _, p := range procs {
			testenv.Eventually(t, 3*time.Second, "the new alice's token works through "+p.url, func() bool {
				return p.do("GET", "/v1/me/feed", tok, nil).status == 200
			})
			if r := p.do("GET", "/v1/me/feed", aliceTok, nil); r.status != 401 {
				t.Errorf("the deleted alice's token for the new alice through %s: %d; want 401", p.url, r.status)
			}
		}
		if r := in.must(200, "GET", "/v1/users/"+alice+"/posts", bobTok, nil); len(r.items()) != 0 {
			t.Errorf("the new alice's posts: %s; want none", r.raw)
		}
		// DELETE /v1/me: the user deletes themselves.
		r = in.must(202, "DELETE", "/v1/me", tok, nil)
		if r.str("id") != alice || r.str("status") != "deleting" {
			t.Errorf("DELETE /v1/me: %s", r.raw)
		}
		testenv.Eventually(t, 3*time.Second, "the token of a user deleted by themselves is refused", func() bool {
			return in.do("GET", "/v1/me/feed", tok, nil).status == 401
		})
	})
}
