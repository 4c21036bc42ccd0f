package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/feedd/feedd/internal/feed"
)

// fuzzServer is a fresh server over a fresh fake service, so that every
// fuzz input runs alone and a failure reproduces from its input.
func fuzzServer() (http.Handler, *fakeService) {
	svc := newFakeService(testNow)
	svc.seedUser(alice, "alice")
	svc.seedUser(bob, "bob")
	svc.seedPost(bob, "bob's post")
	svc.seedFollow(alice, bob)
	reg := prometheus.NewRegistry()
	cfg := Config{AdminToken: testAdmin, JWTSecret: []byte(testSecret), Now: func() time.Time { return testNow }}
	h := NewServer(slog.New(slog.DiscardHandler), cfg, svc, svc, reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return h, svc
}

// serveFuzz runs one request through h and checks what every answer
// holds, whatever the input: no 5xx, a JSON body, and for a 4xx the
// standard error body.
func serveFuzz(t *testing.T, h http.Handler, r *http.Request) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code >= 500 {
		t.Fatalf("%s %s: status %d; want no 5xx for bad input; body %s", r.Method, r.URL, rec.Code, rec.Body)
	}
	var body map[string]any
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s %s: status %d, body %q is not a JSON object: %v", r.Method, r.URL, rec.Code, rec.Body, err)
		}
	}
	if rec.Code >= 400 {
		e, _ := body["error"].(map[string]any)
		if code, _ := e["code"].(string); code == "" {
			t.Fatalf("%s %s: status %d with body %s; want {\"error\":{\"code\",…}}", r.Method, r.URL, rec.Code, rec.Body)
		}
	}
	return rec.Code, body
}

func fuzzRequest(method, target, token string, body []byte, hdr ...string) *http.Request {
	r := httptest.NewRequest(method, "http://feedd.test/", bytes.NewReader(body))
	// Set the target after NewRequest, which panics on a malformed one;
	// the mux sees what a server would after parsing the request line.
	u, err := url.ParseRequestURI(target)
	if err != nil {
		u = &url.URL{Path: "/"}
	}
	r.URL, r.RequestURI = u, target
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return r
}

// FuzzRequestBodies sends arbitrary bodies to every route that reads one:
// POST /v1/users, POST /v1/users/{id}/tokens and POST /v1/posts (with an
// arbitrary Idempotency-Key). Bad input gets a 4xx and never reaches the
// service as a write; good input round-trips: what was created reads back
// as sent.
func FuzzRequestBodies(f *testing.F) {
	for _, b := range []string{
		`{"name":"carol"}`, `{"name":"dave","id":"77"}`, `{"name":"erin","id":78}`, `{"name":"x","id":null}`,
		`{"ttl_seconds":60}`, `{}`, ``, `{"content":"hello"}`, `{"content":"\u00e9\ud83d\ude00"}`,
		`{"name":" "}`, `{"name":"a","id":"-1"}`, `{"name":"a","id":"9223372036854775808"}`, `{"name":"a","id":1e3}`,
		`{"content":"x"} {}`, `[]`, `null`, `"str"`, `{"content":"x","extra":1}`, `{"ttl_seconds":0}`, `{"ttl_seconds":"60"}`,
		`{"name":"\xff"}`, `{"content":"` + strings.Repeat("é", 5001) + `"}`,
	} {
		for route := range uint8(3) {
			f.Add(route, []byte(b), "key-1")
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte, idemKey string) {
		h, svc := fuzzServer()
		aliceTok := userToken(t, alice)
		switch route % 3 {
		case 0:
			status, res := serveFuzz(t, h, fuzzRequest("POST", "/v1/users", testAdmin, body))
			if status == 400 || status == 413 {
				noWrites(t, svc, "CreateUser")
			}
			if status != 201 {
				return
			}
			var sent struct {
				Name string          `json:"name"`
				ID   json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(body, &sent)
			id, _ := res["id"].(string)
			if asked := idOf(sent.ID); asked != "" && asked != id {
				t.Fatalf("created user %s; the body asked for id %s", id, sent.ID)
			}
			_, got := serveFuzz(t, h, fuzzRequest("GET", "/v1/users/"+id, testAdmin, nil))
			if got["name"] != sent.Name || res["name"] != sent.Name {
				t.Fatalf("user created as %q reads back as %q (create answered %q)", sent.Name, got["name"], res["name"])
			}
		case 1:
			status, res := serveFuzz(t, h, fuzzRequest("POST", "/v1/users/1/tokens", testAdmin, body))
			if status != 201 {
				return
			}
			tok, _ := res["token"].(string)
			if s, _ := serveFuzz(t, h, fuzzRequest("GET", "/v1/me/feed", tok, nil)); s != 200 {
				t.Fatalf("a token minted from body %q does not read alice's feed: status %d", body, s)
			}
		case 2:
			status, res := serveFuzz(t, h, fuzzRequest("POST", "/v1/posts", aliceTok, body, "Idempotency-Key", idemKey))
			if status == 400 || status == 413 {
				noWrites(t, svc, "Publish")
			}
			if status != 201 {
				return
			}
			var sent struct {
				Content string `json:"content"`
			}
			_ = json.Unmarshal(body, &sent)
			id, _ := res["id"].(string)
			_, got := serveFuzz(t, h, fuzzRequest("GET", "/v1/posts/"+id, aliceTok, nil))
			if got["content"] != sent.Content || res["content"] != sent.Content || got["author_id"] != feed.FormatID(alice) {
				t.Fatalf("post sent as %q reads back as %v", sent.Content, got)
			}
		}
	})
}

// FuzzPathAndQuery sends arbitrary ids, cursors and limits to the routes
// that take them. Bad ones get a 4xx; a page answered 200 holds at most
// limit items and a next_cursor that decodes.
func FuzzPathAndQuery(f *testing.F) {
	feedCursor := feed.EncodeCursor(feed.CursorFeed, 5000)
	userCursor := feed.EncodeCursor(feed.CursorUsers, 1)
	for _, s := range [][3]string{
		{"2", "", ""}, {"2", feedCursor, "1"}, {"1", userCursor, "100"}, {"0", "", "0"}, {"-1", "x", "-1"},
		{"007", "AWa0A0", "101"}, {"9223372036854775807", feedCursor, "1e2"}, {"abc", userCursor, " 5"},
		{"1%2F2", "%00", "+5"}, {"", "", ""},
	} {
		for route := range uint8(4) {
			f.Add(route, s[0], s[1], s[2])
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, id, cursor, limit string) {
		h, _ := fuzzServer()
		q := url.Values{}
		q.Set("cursor", cursor)
		q.Set("limit", limit)
		paths := []string{
			"/v1/users/" + url.PathEscape(id) + "/posts",
			"/v1/users/" + url.PathEscape(id) + "/followers",
			"/v1/users/" + url.PathEscape(id) + "/following",
			"/v1/me/feed",
		}
		kinds := []byte{feed.CursorFeed, feed.CursorUsers, feed.CursorUsers, feed.CursorFeed}
		i := int(route) % len(paths)
		status, res := serveFuzz(t, h, fuzzRequest("GET", paths[i]+"?"+q.Encode(), userToken(t, alice), nil))
		if status != 200 {
			return
		}
		items, _ := res["items"].([]any)
		if len(items) > maxLimit {
			t.Fatalf("%d items for limit %q", len(items), limit)
		}
		if next, ok := res["next_cursor"].(string); ok {
			if _, err := feed.DecodeCursor(kinds[i], next); err != nil {
				t.Fatalf("next_cursor %q does not decode: %v", next, err)
			}
		}
	})
}

// idOf renders the id a request body asked for as responses carry it:
// "" for none (absent or null).
func idOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	if id, err := feed.ParseID(s); err == nil {
		return feed.FormatID(id)
	}
	return s
}

// noWrites fails the test if bad input reached the service's write.
func noWrites(t *testing.T, svc *fakeService, method string) {
	t.Helper()
	for _, c := range svc.calls() {
		if c.method == method {
			t.Fatalf("a rejected request still called %s", c)
		}
	}
}
