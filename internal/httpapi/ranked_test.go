package httpapi

import (
	"net/http"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// TestPostWeight: a post takes a weight from 0 to 100 on create and edit,
// and shows it to its author and the admin only.
func TestPostWeight(t *testing.T) {
	e := newEnv(t)
	alices, bobs := userToken(t, alice), userToken(t, bob)

	r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"boosted","weight":2.5}`})
	wantStatus(t, r, http.StatusCreated)
	p := checkPost(t, r.json(t))
	if p["weight"] != 2.5 {
		t.Errorf("created post weight = %v; want 2.5", p["weight"])
	}
	id := p["id"].(string)
	wantCalls(t, e.svc, "Publish[1 boosted  weight=2.5]")

	// Its author and the admin see the weight, a reader does not.
	for _, tt := range []struct {
		token string
		want  any
	}{{alices, 2.5}, {testAdmin, 2.5}, {bobs, nil}} {
		p := checkPost(t, e.do(req{method: "GET", path: "/v1/posts/" + id, token: tt.token}).json(t))
		if p["weight"] != tt.want {
			t.Errorf("weight as seen with token %.8s… = %v; want %v", tt.token, p["weight"], tt.want)
		}
	}
	// A post made without one has the default, 1.
	r = e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"plain","weight":null}`})
	wantStatus(t, r, http.StatusCreated)
	if got := r.json(t)["weight"]; got != 1.0 {
		t.Errorf("default weight = %v; want 1", got)
	}

	r = e.do(req{method: "PATCH", path: "/v1/posts/" + id, token: alices, body: `{"weight":0}`})
	wantStatus(t, r, http.StatusOK)
	if got := r.json(t)["weight"]; got != 0.0 {
		t.Errorf("edited weight = %v; want 0", got)
	}
	e.svc.calls()

	for _, body := range []string{`{"content":"x","weight":-1}`, `{"content":"x","weight":100.5}`, `{"content":"x","weight":"5"}`, `{"content":"x","weight":1e400}`} {
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: body})
		wantStatus(t, r, http.StatusBadRequest)
		if code := r.errorCode(t); code != feed.EINVALID {
			t.Errorf("POST %s: code %q; want %q", body, code, feed.EINVALID)
		}
	}
	r = e.do(req{method: "PATCH", path: "/v1/posts/" + id, token: alices, body: `{"weight":101}`})
	wantStatus(t, r, http.StatusBadRequest)
	r = e.do(req{method: "PATCH", path: "/v1/posts/" + id, token: bobs, body: `{"weight":3}`})
	wantStatus(t, r, http.StatusForbidden)
	wantCalls(t, e.svc, "EditPost[2 "+id+" weight=3]")
}

// TestRankedOrder: ?order= picks the feed, a ranked cursor pages only the
// ranked feed, and an expired one is 410 cursor_expired.
func TestRankedOrder(t *testing.T) {
	e := newEnv(t)
	alices, bobs := userToken(t, alice), userToken(t, bob)
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/me/following/2", token: alices}), http.StatusNoContent)
	var posted []string
	for _, c := range []string{"one", "two", "three"} {
		r := e.do(req{method: "POST", path: "/v1/posts", token: bobs, body: `{"content":"` + c + `"}`})
		wantStatus(t, r, http.StatusCreated)
		posted = append(posted, r.json(t)["id"].(string))
	}
	// The oldest is the most liked: first in the ranked feed.
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/posts/" + posted[0] + "/like", token: alices}), http.StatusOK)

	items, latestNext := page(t, e.do(req{method: "GET", path: "/v1/me/feed?order=latest&limit=2", token: alices}))
	if got := ids(items); len(got) != 2 || got[0] != posted[2] {
		t.Errorf("latest = %v; want the newest first", got)
	}
	items, next := page(t, e.do(req{method: "GET", path: "/v1/me/feed?order=ranked&limit=2", token: alices}))
	if got := ids(items); len(got) != 2 || got[0] != posted[0] {
		t.Errorf("ranked = %v; want the liked post first", got)
	}
	for _, it := range items {
		if p := checkPost(t, it); p["weight"] != nil {
			t.Errorf("a reader sees the weight of another's post: %v", p)
		}
	}
	if next == "" {
		t.Fatal("ranked first page has no next_cursor")
	}
	items, last := page(t, e.do(req{method: "GET", path: "/v1/me/feed?order=ranked&limit=2&cursor=" + next, token: alices}))
	if len(items) != 1 || last != "" {
		t.Errorf("ranked second page = %v, next %q; want the last post and no cursor", ids(items), last)
	}

	for _, tt := range []struct{ query, code string }{
		{"order=newest", feed.EINVALID},
		{"order=ranked&order=latest", feed.EINVALID},
		{"order=ranked&cursor=" + latestNext, feed.EINVALID}, // a latest cursor in a ranked feed
		{"order=latest&cursor=" + next, feed.EINVALID},       // and the other way round
	} {
		r := e.do(req{method: "GET", path: "/v1/me/feed?" + tt.query, token: alices})
		wantStatus(t, r, http.StatusBadRequest)
		if code := r.errorCode(t); code != tt.code {
			t.Errorf("%s: code %q; want %q", tt.query, code, tt.code)
		}
	}
	expired := feed.EncodeCursor(feed.CursorRanked, 2<<16|2)
	r := e.do(req{method: "GET", path: "/v1/me/feed?order=ranked&cursor=" + expired, token: alices})
	wantStatus(t, r, http.StatusGone)
	if code := r.errorCode(t); code != feed.ECURSOREXPIRED {
		t.Errorf("expired cursor: code %q; want %q", code, feed.ECURSOREXPIRED)
	}
}
