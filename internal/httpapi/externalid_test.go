package httpapi

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// TestPostExternalID: a post created with an external id shows it; the
// same external id again is 409 external_id_exists with the existing
// post's id; a bad one is 400 and reaches no service.
func TestPostExternalID(t *testing.T) {
	e := newEnv(t)
	alices, bobs := userToken(t, alice), userToken(t, bob)

	r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"imported","external_id":"blog-9913"}`})
	wantStatus(t, r, http.StatusCreated)
	p := checkPost(t, r.json(t))
	id := p["id"].(string)
	if p["external_id"] != "blog-9913" {
		t.Errorf("created post: external_id = %#v; want blog-9913", p["external_id"])
	}
	wantCalls(t, e.svc, "Publish[1 imported  external_id=blog-9913]")
	for _, rq := range []req{
		{method: "GET", path: "/v1/posts/" + id, token: bobs},
		{method: "GET", path: "/v1/users/1/posts", token: bobs},
	} {
		r := e.do(rq)
		wantStatus(t, r, http.StatusOK)
		if !bytes.Contains(r.body, []byte(`"external_id":"blog-9913"`)) {
			t.Errorf("%s %s: body %s; want external_id blog-9913", rq.method, rq.path, r.body)
		}
	}
	e.svc.calls()

	// Used again: the error names the post that has it.
	r = e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"again","external_id":"blog-9913"}`})
	wantStatus(t, r, http.StatusConflict)
	errBody := r.json(t)["error"].(map[string]any)
	if errBody["code"] != "external_id_exists" || errBody["post_id"] != id || errBody["message"] == "" {
		t.Errorf("409 body %s; want code external_id_exists and post_id %s", r.body, id)
	}
	e.svc.calls()

	// Another author may use it; without one, or with null, a post has none.
	r = e.do(req{method: "POST", path: "/v1/posts", token: bobs, body: `{"content":"mine","external_id":"blog-9913"}`})
	wantStatus(t, r, http.StatusCreated)
	for _, body := range []string{`{"content":"plain"}`, `{"content":"plain","external_id":null}`} {
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: body})
		wantStatus(t, r, http.StatusCreated)
		if _, ok := checkPost(t, r.json(t))["external_id"]; ok {
			t.Errorf("%s: body %s; want no external_id", body, r.body)
		}
	}
	e.svc.calls()

	// Bad external ids: refused before any service call.
	for _, bad := range []string{`""`, `" "`, `"a\u0000b"`, `"line\nbreak"`, `"\u0085"`, `42`, `["x"]`,
		`"` + strings.Repeat("x", 256) + `"`, `"` + strings.Repeat("é", 128) + `"`} {
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"x","external_id":` + bad + `}`})
		wantStatus(t, r, http.StatusBadRequest)
		if code := r.json(t)["error"].(map[string]any)["code"]; code != "invalid" {
			t.Errorf("external_id %s: code %v; want invalid", bad, code)
		}
	}
	wantCalls(t, e.svc)
	// At the bound: 255 bytes of UTF-8.
	r = e.do(req{method: "POST", path: "/v1/posts", token: alices,
		body: `{"content":"x","external_id":"` + strings.Repeat("é", 127) + `x"}`})
	wantStatus(t, r, http.StatusCreated)
	e.svc.calls()

	// With an idempotency key: a repeat is the first post (201), the same
	// key with another external id is another request (422), and another
	// key with a used external id is 409.
	key := func(k string) map[string]string { return map[string]string{"Idempotency-Key": k} }
	first := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"k","external_id":"k-1"}`, header: key("key-1")})
	wantStatus(t, first, http.StatusCreated)
	again := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"external_id":"k-1", "content":"k"}`, header: key("key-1")})
	wantStatus(t, again, http.StatusCreated)
	if a, b := checkPost(t, first.json(t))["id"], checkPost(t, again.json(t))["id"]; a != b {
		t.Errorf("repeat with the same key: post %v; want the first, %v", b, a)
	}
	r = e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"k","external_id":"k-2"}`, header: key("key-1")})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	r = e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"k","external_id":"k-1"}`, header: key("key-2")})
	wantStatus(t, r, http.StatusConflict)
	if got := r.json(t)["error"].(map[string]any)["post_id"]; got != checkPost(t, first.json(t))["id"] {
		t.Errorf("409 post_id %v; want the first post's", got)
	}
}

// TestHistoryPostIDs: a post id may be negative (a post from before
// 2025), down to feed.MinID; user ids stay positive.
func TestHistoryPostIDs(t *testing.T) {
	e := newEnv(t)
	alices := userToken(t, alice)
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/v1/posts/-4096", http.StatusNotFound},
		{"GET", "/v1/posts/-2456027136000000", http.StatusNotFound},
		{"PUT", "/v1/posts/-4096/like", http.StatusNotFound},
		{"GET", "/v1/posts/-2456027136000001", http.StatusBadRequest},
		{"GET", "/v1/posts/-0", http.StatusBadRequest},
		{"GET", "/v1/posts/+5", http.StatusBadRequest},
		{"GET", "/v1/users/-5", http.StatusBadRequest},
		{"PUT", "/v1/me/following/-5", http.StatusBadRequest},
	} {
		r := e.do(req{method: c.method, path: c.path, token: alices})
		if r.status != c.want {
			t.Errorf("%s %s: status %d; want %d (body %s)", c.method, c.path, r.status, c.want, r.body)
		}
	}
	e.svc.calls()
	// The cursor of a page that ends on a post from before 2025 pages on.
	r := e.do(req{method: "GET", path: "/v1/users/1/posts?cursor=" + feed.EncodeCursor(feed.CursorFeed, -4096), token: alices})
	wantStatus(t, r, http.StatusOK)
	if got := e.svc.calls(); len(got) != 1 || !strings.Contains(got[0].String(), "-4096") {
		t.Errorf("service calls %v; want one author page below -4096", got)
	}
}
