package httpapi

import (
	"net/http"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

func TestMuteRoutes(t *testing.T) {
	e := newEnv(t)
	alices := userToken(t, alice)

	for range 2 { // idempotent: the service is asked again and answers the same
		r := e.do(req{method: "PUT", path: "/v1/me/mutes/2", token: alices})
		wantStatus(t, r, http.StatusNoContent)
		if len(r.body) != 0 {
			t.Errorf("body = %q; want none", r.body)
		}
	}
	wantCalls(t, e.svc, "Mute[1 2]", "Mute[1 2]")
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/me/mutes/3", token: alices}), http.StatusNoContent)
	e.svc.calls()

	r := e.do(req{method: "GET", path: "/v1/me/mutes?limit=1", token: alices})
	wantStatus(t, r, http.StatusOK)
	page := r.json(t)
	items, _ := page["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["id"] != "2" || page["next_cursor"] == nil {
		t.Fatalf("first page of mutes = %s; want user 2 and a cursor", r.body)
	}
	wantCalls(t, e.svc, "Mutes[1 0 1]")
	r = e.do(req{method: "GET", path: "/v1/me/mutes?limit=1&cursor=" + page["next_cursor"].(string), token: alices})
	if items, _ := r.json(t)["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != "3" {
		t.Fatalf("second page of mutes = %s; want user 3", r.body)
	}
	e.svc.calls()

	wantStatus(t, e.do(req{method: "DELETE", path: "/v1/me/mutes/2", token: alices}), http.StatusNoContent)
	wantCalls(t, e.svc, "Unmute[1 2]")

	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"PUT", "/v1/me/mutes/1", http.StatusBadRequest, "invalid"},
		{"PUT", "/v1/me/mutes/999", http.StatusNotFound, "not_found"},
		{"PUT", "/v1/me/blocks/1", http.StatusBadRequest, "invalid"},
		{"DELETE", "/v1/me/blocks/999", http.StatusNotFound, "not_found"},
	} {
		r := e.do(req{method: c.method, path: c.path, token: alices})
		wantStatus(t, r, c.status)
		if got := r.errorCode(t); got != c.code {
			t.Errorf("%s %s: code %q; want %q", c.method, c.path, got, c.code)
		}
	}
	e.svc.calls()
	// A bad id never reaches the service, nor does the admin, who is no user.
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/me/mutes/abc", token: alices}), http.StatusBadRequest)
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/me/blocks/2", token: testAdmin}), http.StatusForbidden)
	wantCalls(t, e.svc)
}

func TestBlockHidesBothWays(t *testing.T) {
	e := newEnv(t)
	alices, bobs := userToken(t, alice), userToken(t, bob)
	e.svc.seedFollow(alice, bob)
	e.svc.seedFollow(bob, alice)
	pa := feed.FormatID(e.svc.seedPost(alice, "alice's").ID)
	pb := feed.FormatID(e.svc.seedPost(bob, "bob's").ID)

	wantStatus(t, e.do(req{method: "PUT", path: "/v1/me/blocks/2", token: alices}), http.StatusNoContent)
	wantCalls(t, e.svc, "Block[1 2]")

	r := e.do(req{method: "PUT", path: "/v1/me/following/1", token: bobs})
	wantStatus(t, r, http.StatusForbidden)
	if got := r.errorCode(t); got != "blocked" {
		t.Errorf("follow across a block: code %q; want blocked", got)
	}
	for _, v := range []struct{ tok, other, post string }{{alices, "2", pb}, {bobs, "1", pa}} {
		for _, c := range []struct{ method, path string }{
			{"GET", "/v1/users/" + v.other},
			{"GET", "/v1/users/" + v.other + "/posts"},
			{"GET", "/v1/users/" + v.other + "/likes"},
			{"GET", "/v1/users/" + v.other + "/followers"},
			{"GET", "/v1/users/" + v.other + "/following"},
			{"GET", "/v1/posts/" + v.post},
			{"GET", "/v1/posts/" + v.post + "/likes"},
			{"PUT", "/v1/posts/" + v.post + "/like"},
		} {
			r := e.do(req{method: c.method, path: c.path, token: v.tok})
			wantStatus(t, r, http.StatusNotFound)
		}
	}
	// Carol and the admin see both.
	for _, tok := range []string{userToken(t, carol), testAdmin} {
		wantStatus(t, e.do(req{method: "GET", path: "/v1/posts/" + pa, token: tok}), http.StatusOK)
		wantStatus(t, e.do(req{method: "GET", path: "/v1/users/2", token: tok}), http.StatusOK)
	}
	r = e.do(req{method: "GET", path: "/v1/me/blocks", token: alices})
	if items, _ := r.json(t)["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != "2" {
		t.Fatalf("alice's blocks = %s; want bob", r.body)
	}
	wantStatus(t, e.do(req{method: "DELETE", path: "/v1/me/blocks/2", token: alices}), http.StatusNoContent)
	wantStatus(t, e.do(req{method: "GET", path: "/v1/posts/" + pa, token: bobs}), http.StatusOK)
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/me/following/1", token: bobs}), http.StatusNoContent)
}

// TestFilteredFeedPageCursor: a feed page the service stopped short (its
// read rounds filtered out most of what they read) carries a cursor at
// where its reading stopped, even with no item.
func TestFilteredFeedPageCursor(t *testing.T) {
	e := newEnv(t)
	e.svc.feedNext = 4242
	r := e.do(req{method: "GET", path: "/v1/me/feed?limit=5", token: userToken(t, alice)})
	wantStatus(t, r, http.StatusOK)
	if got, want := r.json(t)["next_cursor"], feed.EncodeCursor(feed.CursorFeed, 4242); got != want {
		t.Fatalf("next_cursor = %v; want %q (body %s)", got, want, r.body)
	}
}
