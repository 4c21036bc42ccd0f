package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

const (
	testAdmin  = "admin-token-for-tests"
	testSecret = "jwt-secret-for-tests"
)

// testNow is the pinned clock: tokens are issued and checked against it.
var testNow = time.Date(2026, 11, 22, 7, 33, 43, 120_000_000, time.UTC)

// The three users every env starts with.
const (
	alice int64 = 1
	bob   int64 = 2
	carol int64 = 3
)

// env is a server over real HTTP with a fake Timeline behind it.
type env struct {
	t    *testing.T
	url  string
	svc  *fakeService
	reg  *prometheus.Registry
	logs *testenv.SyncBuffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	svc := newFakeService(testNow)
	svc.seedUser(alice, "alice")
	svc.seedUser(bob, "bob")
	svc.seedUser(carol, "carol")
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	cfg := Config{
		AdminToken: testAdmin,
		JWTSecret:  []byte(testSecret),
		Now:        func() time.Time { return testNow },
	}
	srv := httptest.NewServer(NewServer(logger, cfg, svc, svc, reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	t.Cleanup(srv.Close)
	return &env{t: t, url: srv.URL, svc: svc, reg: reg, logs: logs}
}

// userToken signs a valid token for user, independently of the code under
// test.
func userToken(t testing.TB, user int64) string {
	t.Helper()
	return signToken(t, jwt.SigningMethodHS256, []byte(testSecret), jwt.MapClaims{
		"sub": feed.FormatID(user),
		"iat": testNow.Unix(),
		"exp": testNow.Add(time.Hour).Unix(),
	})
}

func signToken(t testing.TB, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return s
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic value.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %q: not a JSON object: %v", r.body, err)
	}
	return v
}

// errorCode returns error.code of an error body, checking its shape.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	v := r.json(t)
	e, ok := v["error"].(map[string]any)
	if !ok || len(v) != 1 {
		t.Fatalf("body %s: want {\"error\":{…}}", r.body)
	}
	code, _ := e["code"].(string)
	msg, _ := e["message"].(string)
	if code == "" || msg == "" || len(e) != 2 {
		t.Fatalf("body %s: want error with code and message", r.body)
	}
	return code
}

func (r response) errorMessage(t *testing.T) string {
	t.Helper()
	r.errorCode(t)
	return r.json(t)["error"].(map[string]any)["message"].(string)
}

type req struct {
	method string
	path   string
	token  string // "" sends no Authorization header
	body   string
	header map[string]string
}

// do sends r and checks what every response must hold: JSON bodies say so.
func (e *env) do(r req) response {
	e.t.Helper()
	return doHTTP(e.t, e.url, r)
}

func doHTTP(t *testing.T, base string, r req) response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, base+r.path, body)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", r.method, r.path, err)
	}
	if len(b) > 0 && r.path != "/metrics" {
		if got, want := res.Header.Get("Content-Type"), "application/json; charset=utf-8"; got != want {
			t.Errorf("%s %s: Content-Type = %q; want %q", r.method, r.path, got, want)
		}
		if !json.Valid(b) {
			t.Errorf("%s %s: body %q is not JSON", r.method, r.path, b)
		}
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func wantStatus(t *testing.T, r response, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status = %d; want %d (body %s)", r.status, want, r.body)
	}
}

func wantCalls(t *testing.T, svc *fakeService, want ...string) {
	t.Helper()
	var got []string
	for _, c := range svc.calls() {
		got = append(got, c.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("service calls = %q; want %q", got, want)
	}
}

func keys(m map[string]any) []string {
	k := make([]string, 0, len(m))
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

var timeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// checkUser checks a user object's shape: ids as strings, counts as numbers.
func checkUser(t *testing.T, v any) map[string]any {
	t.Helper()
	u, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("user = %v; want an object", v)
	}
	if got, want := keys(u), []string{"follower_count", "following_count", "id", "name"}; !slices.Equal(got, want) {
		t.Errorf("user keys = %q; want %q", got, want)
	}
	if _, ok := u["id"].(string); !ok {
		t.Errorf("user id = %#v; want a string", u["id"])
	}
	for _, k := range []string{"follower_count", "following_count"} {
		if _, ok := u[k].(float64); !ok {
			t.Errorf("user %s = %#v; want a number", k, u[k])
		}
	}
	return u
}

// checkPost checks a post object's shape.
func checkPost(t *testing.T, v any) map[string]any {
	t.Helper()
	p, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("post = %v; want an object", v)
	}
	// data, edited_at and external_id are there only when the post has them.
	want := []string{"author_id", "content", "created_at", "id", "like_count", "liked_by_me", "reply_count", "repost_count", "reposted_by_me"}
	if _, ok := p["in_reply_to_id"]; ok { // a reply: both, as id strings
		want = append(want, "in_reply_to_id", "in_reply_to_author_id")
		for _, k := range []string{"in_reply_to_id", "in_reply_to_author_id"} {
			if id, _ := p[k].(string); id == "" {
				t.Errorf("post %s = %#v; want an id string", k, p[k])
			}
		}
	}
	if _, ok := p["data"]; ok {
		want = append(want, "data")
		if _, ok := p["data"].(map[string]any); !ok {
			t.Errorf("post data = %#v; want an object", p["data"])
		}
	}
	if _, ok := p["external_id"]; ok {
		want = append(want, "external_id")
		if ext, _ := p["external_id"].(string); ext == "" {
			t.Errorf("post external_id = %#v; want a non-empty string", p["external_id"])
		}
	}
	if _, ok := p["weight"]; ok { // to its author and the admin
		want = append(want, "weight")
		if w, ok := p["weight"].(float64); !ok || w < 0 || w > 100 {
			t.Errorf("post weight = %#v; want a number from 0 to 100", p["weight"])
		}
	}
	if _, ok := p["edited_at"]; ok {
		want = append(want, "edited_at")
		if ts, _ := p["edited_at"].(string); !timeRE.MatchString(ts) {
			t.Errorf("post edited_at = %#v; want RFC 3339 UTC with milliseconds", p["edited_at"])
		}
	}
	slices.Sort(want)
	if got := keys(p); !slices.Equal(got, want) {
		t.Errorf("post keys = %q; want %q", got, want)
	}
	for _, k := range []string{"id", "author_id", "content", "created_at"} {
		if _, ok := p[k].(string); !ok {
			t.Errorf("post %s = %#v; want a string", k, p[k])
		}
	}
	if ts, _ := p["created_at"].(string); !timeRE.MatchString(ts) {
		t.Errorf("post created_at = %q; want RFC 3339 UTC with milliseconds", ts)
	}
	if _, ok := p["like_count"].(float64); !ok {
		t.Errorf("post like_count = %#v; want a number", p["like_count"])
	}
	if _, ok := p["liked_by_me"].(bool); !ok {
		t.Errorf("post liked_by_me = %#v; want a boolean", p["liked_by_me"])
	}
	if n, ok := p["reply_count"].(float64); !ok || n < 0 {
		t.Errorf("post reply_count = %#v; want a number", p["reply_count"])
	}
	return p
}

// page splits a page into its items and next_cursor ("" for null).
func page(t *testing.T, r response) ([]any, string) {
	t.Helper()
	v := r.json(t)
	if got, want := keys(v), []string{"items", "next_cursor"}; !slices.Equal(got, want) {
		t.Fatalf("page keys = %q; want %q", got, want)
	}
	items, ok := v["items"].([]any)
	if !ok {
		t.Fatalf("items = %#v; want an array", v["items"])
	}
	switch c := v["next_cursor"].(type) {
	case nil:
		return items, ""
	case string:
		if c == "" {
			t.Fatalf("next_cursor is an empty string; want null or a cursor")
		}
		return items, c
	default:
		t.Fatalf("next_cursor = %#v; want a string or null", c)
		return nil, ""
	}
}

func ids(items []any) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

func TestCreateUser(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantCall string
		wantID   string // "" means generated
	}{
		{"generated id", `{"name":"dave"}`, "CreateUser[0 dave]", ""},
		{"id as string", `{"name":"erin","id":"42"}`, "CreateUser[42 erin]", "42"},
		{"id as number", `{"name":"frank","id":43}`, "CreateUser[43 frank]", "43"},
		{"id null", `{"name":"gina","id":null}`, "CreateUser[0 gina]", ""},
		{"unicode name", `{"name":"Zoë 🙂"}`, "CreateUser[0 Zoë 🙂]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.do(req{method: "POST", path: "/v1/users", token: testAdmin, body: tt.body})
			wantStatus(t, r, http.StatusCreated)
			wantCalls(t, e.svc, tt.wantCall)
			u := checkUser(t, r.json(t))
			if tt.wantID != "" && u["id"] != tt.wantID {
				t.Errorf("id = %v; want %q", u["id"], tt.wantID)
			}
			if got, want := r.header.Get("Location"), "/v1/users/"+u["id"].(string); got != want {
				t.Errorf("Location = %q; want %q", got, want)
			}
		})
	}
	t.Run("taken id", func(t *testing.T) {
		e := newEnv(t)
		r := e.do(req{method: "POST", path: "/v1/users", token: testAdmin, body: `{"name":"x","id":"1"}`})
		wantStatus(t, r, http.StatusConflict)
		if got, want := r.errorCode(t), "conflict"; got != want {
			t.Errorf("code = %q; want %q", got, want)
		}
	})
}

func TestGetUser(t *testing.T) {
	e := newEnv(t)
	e.svc.seedFollow(bob, alice)
	e.svc.seedFollow(carol, alice)
	e.svc.seedFollow(alice, carol)
	for _, token := range []string{userToken(t, bob), testAdmin} {
		r := e.do(req{method: "GET", path: "/v1/users/1", token: token})
		wantStatus(t, r, http.StatusOK)
		u := checkUser(t, r.json(t))
		if u["id"] != "1" || u["name"] != "alice" || u["follower_count"] != 2.0 || u["following_count"] != 1.0 {
			t.Errorf("user = %v; want alice with 2 followers, following 1", u)
		}
	}
	r := e.do(req{method: "GET", path: "/v1/users/999", token: testAdmin})
	wantStatus(t, r, http.StatusNotFound)
	if got, want := r.errorCode(t), "not_found"; got != want {
		t.Errorf("code = %q; want %q", got, want)
	}
}

func TestCreateToken(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // expires_at
	}{
		{"no body", "", "2026-11-22T08:33:43.000Z"},
		{"empty object", "{}", "2026-11-22T08:33:43.000Z"},
		{"null ttl", `{"ttl_seconds":null}`, "2026-11-22T08:33:43.000Z"},
		{"one minute", `{"ttl_seconds":60}`, "2026-11-22T07:34:43.000Z"},
		{"one second", `{"ttl_seconds":1}`, "2026-11-22T07:33:44.000Z"},
		{"a year", `{"ttl_seconds":31536000}`, "2027-11-22T07:33:43.000Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.do(req{method: "POST", path: "/v1/users/2/tokens", token: testAdmin, body: tt.body})
			wantStatus(t, r, http.StatusCreated)
			v := r.json(t)
			if got, want := keys(v), []string{"expires_at", "token"}; !slices.Equal(got, want) {
				t.Fatalf("keys = %q; want %q", got, want)
			}
			if got := v["expires_at"]; got != tt.want {
				t.Errorf("expires_at = %v; want %q", got, tt.want)
			}
			token := v["token"].(string)

			// The token is an HS256 JWT for bob that expires when it says.
			claims := jwt.MapClaims{}
			parsed, err := jwt.NewParser(jwt.WithoutClaimsValidation()).ParseWithClaims(token, claims,
				func(*jwt.Token) (any, error) { return []byte(testSecret), nil })
			if err != nil {
				t.Fatalf("parse token: %v", err)
			}
			if got, want := parsed.Method.Alg(), "HS256"; got != want {
				t.Errorf("alg = %q; want %q", got, want)
			}
			if got, want := claims["sub"], "2"; got != want {
				t.Errorf("sub = %v; want %q", got, want)
			}
			exp, _ := claims.GetExpirationTime()
			iat, _ := claims.GetIssuedAt()
			if exp == nil || iat == nil || exp.UTC().Format(feed.TimeFormat) != tt.want {
				t.Errorf("exp = %v, iat = %v; want exp %s and an iat", exp, iat, tt.want)
			}

			// And it works: the feed is bob's.
			e.svc.calls()
			wantStatus(t, e.do(req{method: "GET", path: "/v1/me/feed", token: token}), http.StatusOK)
			wantCalls(t, e.svc, "Feed[2 0 20]")
		})
	}
	t.Run("unknown user", func(t *testing.T) {
		e := newEnv(t)
		r := e.do(req{method: "POST", path: "/v1/users/999/tokens", token: testAdmin})
		wantStatus(t, r, http.StatusNotFound)
		if got, want := r.errorCode(t), "not_found"; got != want {
			t.Errorf("code = %q; want %q", got, want)
		}
	})
}

func TestAuth(t *testing.T) {
	secret := []byte(testSecret)
	claims := func(sub any, exp time.Time) jwt.MapClaims {
		c := jwt.MapClaims{"iat": testNow.Unix(), "exp": exp.Unix()}
		if sub != nil {
			c["sub"] = sub
		}
		return c
	}
	valid := claims("2", testNow.Add(time.Hour))
	noExp := jwt.MapClaims{"sub": "2", "iat": testNow.Unix()}
	bobs := userToken(t, bob)

	unauthorized := []struct {
		name   string
		header string
	}{
		{"no header", ""},
		{"empty bearer", "Bearer "},
		{"basic scheme", "Basic " + testAdmin},
		{"no scheme", testAdmin},
		{"garbage", "Bearer not-a-token"},
		{"admin token prefix", "Bearer " + testAdmin[:5]},
		{"wrong secret", "Bearer " + signToken(t, jwt.SigningMethodHS256, []byte("other"), valid)},
		{"expired", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims("2", testNow.Add(-time.Second)))},
		{"expires now", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims("2", testNow.Truncate(time.Second)))},
		{"alg none", "Bearer " + signToken(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid)},
		{"HS512", "Bearer " + signToken(t, jwt.SigningMethodHS512, secret, valid)},
		{"HS384", "Bearer " + signToken(t, jwt.SigningMethodHS384, secret, valid)},
		{"no exp", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, noExp)},
		{"no sub", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims(nil, testNow.Add(time.Hour)))},
		{"sub not an id", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims("bob", testNow.Add(time.Hour)))},
		{"sub zero", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims("0", testNow.Add(time.Hour)))},
		{"sub with a leading zero", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims("02", testNow.Add(time.Hour)))},
		{"sub with a plus", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims("+2", testNow.Add(time.Hour)))},
		{"sub with a space", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims(" 2", testNow.Add(time.Hour)))},
		{"sub a number", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, claims(2, testNow.Add(time.Hour)))},
		{"exp a string", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "2", "exp": strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10)})},
		{"exp upper case", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "2", "EXP": strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10), "exp": testNow.Add(time.Hour).Unix()})},
		{"nbf a string", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "2", "exp": testNow.Add(time.Hour).Unix(), "nbf": "0"})},
		{"iat a string", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "2", "exp": testNow.Add(time.Hour).Unix(), "iat": "0"})},
		{"gen a string", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "2", "exp": testNow.Add(time.Hour).Unix(), "gen": "0"})},
		{"gen negative", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "2", "exp": testNow.Add(time.Hour).Unix(), "gen": -1})},
		{"gen ahead of the user's", "Bearer " + signToken(t, jwt.SigningMethodHS256, secret, jwt.MapClaims{"sub": "2", "exp": testNow.Add(time.Hour).Unix(), "gen": 1})},
		{"user does not exist", "Bearer " + userToken(t, 999)},
		{"tampered", "Bearer " + bobs[:len(bobs)-2] + "xx"},
	}
	for _, tt := range unauthorized {
		t.Run("401/"+tt.name, func(t *testing.T) {
			e := newEnv(t)
			for _, path := range []string{"/v1/users/1", "/v1/me/feed"} {
				hr, _ := http.NewRequest("GET", e.url+path, nil)
				if tt.header != "" {
					hr.Header.Set("Authorization", tt.header)
				}
				res, err := http.DefaultClient.Do(hr)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				r := response{status: res.StatusCode, header: res.Header, body: b}
				wantStatus(t, r, http.StatusUnauthorized)
				if got, want := r.errorCode(t), "unauthorized"; got != want {
					t.Errorf("code = %q; want %q", got, want)
				}
				if r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("no WWW-Authenticate header on a 401")
				}
			}
			wantCalls(t, e.svc)
		})
	}
	t.Run("401/expired says so", func(t *testing.T) {
		e := newEnv(t)
		token := signToken(t, jwt.SigningMethodHS256, secret, claims("2", testNow.Add(-time.Minute)))
		r := e.do(req{method: "GET", path: "/v1/me/feed", token: token})
		if msg := r.errorMessage(t); !strings.Contains(msg, "expired") {
			t.Errorf("message = %q; want it to say the token expired", msg)
		}
	})

	forbidden := []struct {
		name    string
		method  string
		path    string
		token   string
		body    string
		message string // a word the message must hold
	}{
		{"user token creates user", "POST", "/v1/users", bobs, `{"name":"x"}`, "admin"},
		{"user token issues token", "POST", "/v1/users/2/tokens", bobs, "", "admin"},
		{"admin reads me/feed", "GET", "/v1/me/feed", testAdmin, "", "user token"},
		{"admin follows", "PUT", "/v1/me/following/2", testAdmin, "", "user token"},
		{"admin unfollows", "DELETE", "/v1/me/following/2", testAdmin, "", "user token"},
		{"admin publishes", "POST", "/v1/posts", testAdmin, `{"content":"hi"}`, "user token"},
		{"admin deletes post", "DELETE", "/v1/posts/1001", testAdmin, "", "user token"},
	}
	for _, tt := range forbidden {
		t.Run("403/"+tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.do(req{method: tt.method, path: tt.path, token: tt.token, body: tt.body})
			wantStatus(t, r, http.StatusForbidden)
			if got, want := r.errorCode(t), "forbidden"; got != want {
				t.Errorf("code = %q; want %q", got, want)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.message) {
				t.Errorf("message = %q; want it to mention %q", msg, tt.message)
			}
			wantCalls(t, e.svc)
		})
	}

	t.Run("admin reads", func(t *testing.T) {
		e := newEnv(t)
		p := e.svc.seedPost(alice, "hello")
		for _, path := range []string{
			"/v1/users/1", "/v1/users/1/followers", "/v1/users/1/following",
			"/v1/users/1/posts", "/v1/posts/" + feed.FormatID(p.ID),
		} {
			wantStatus(t, e.do(req{method: "GET", path: path, token: testAdmin}), http.StatusOK)
		}
	})
	t.Run("lower-case bearer", func(t *testing.T) {
		e := newEnv(t)
		r := e.do(req{method: "GET", path: "/v1/me/feed", header: map[string]string{"Authorization": "bearer " + bobs}})
		wantStatus(t, r, http.StatusOK)
	})
	t.Run("a user deletes another's post as themselves", func(t *testing.T) {
		e := newEnv(t)
		p := e.svc.seedPost(alice, "mine")
		r := e.do(req{method: "DELETE", path: "/v1/posts/" + feed.FormatID(p.ID), token: bobs})
		wantStatus(t, r, http.StatusForbidden)
		wantCalls(t, e.svc, "DeletePost[2 "+feed.FormatID(p.ID)+"]")
	})
}

func TestFollow(t *testing.T) {
	e := newEnv(t)
	alices := userToken(t, alice)

	r := e.do(req{method: "PUT", path: "/v1/me/following/2", token: alices})
	wantStatus(t, r, http.StatusNoContent)
	if len(r.body) != 0 {
		t.Errorf("body = %q; want none", r.body)
	}
	wantCalls(t, e.svc, "Follow[1 2]")

	// Idempotent: the service is asked again and answers the same.
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/me/following/2", token: alices}), http.StatusNoContent)
	r = e.do(req{method: "GET", path: "/v1/users/2", token: alices})
	if got := r.json(t)["follower_count"]; got != 1.0 {
		t.Errorf("follower_count = %v; want 1", got)
	}
	e.svc.calls()

	r = e.do(req{method: "PUT", path: "/v1/me/following/999", token: alices})
	wantStatus(t, r, http.StatusNotFound)
	wantCalls(t, e.svc, "Follow[1 999]")

	wantStatus(t, e.do(req{method: "DELETE", path: "/v1/me/following/2", token: alices}), http.StatusNoContent)
	wantCalls(t, e.svc, "Unfollow[1 2]")

	// Following oneself is refused by the service's rule
	// (feed.CheckNotSelf), the one place it is checked.
	r = e.do(req{method: "PUT", path: "/v1/me/following/1", token: alices})
	wantStatus(t, r, http.StatusBadRequest)
	if got, want := r.errorCode(t), "invalid"; got != want {
		t.Errorf("code = %q; want %q", got, want)
	}
	wantCalls(t, e.svc, "Follow[1 1]")
}

func TestUserLists(t *testing.T) {
	e := newEnv(t)
	for id := int64(10); id <= 14; id++ {
		e.svc.seedUser(id, "fan")
		e.svc.seedFollow(id, alice)
	}
	e.svc.seedFollow(alice, bob)
	token := userToken(t, carol)

	// Walk alice's followers two at a time; each cursor resumes after the
	// last id of the page before.
	var got []string
	cursor, pages := "", 0
	for {
		path := "/v1/users/1/followers?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := e.do(req{method: "GET", path: path, token: token})
		wantStatus(t, r, http.StatusOK)
		items, next := page(t, r)
		for _, it := range items {
			checkUser(t, it)
		}
		got = append(got, ids(items)...)
		pages++
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		cursor = next
	}
	if want := []string{"10", "11", "12", "13", "14"}; !slices.Equal(got, want) {
		t.Errorf("followers = %q; want %q", got, want)
	}
	wantCalls(t, e.svc, "Followers[1 0 2]", "Followers[1 11 2]", "Followers[1 13 2]")

	r := e.do(req{method: "GET", path: "/v1/users/1/following", token: token})
	wantStatus(t, r, http.StatusOK)
	items, next := page(t, r)
	if got, want := ids(items), []string{"2"}; !slices.Equal(got, want) || next != "" {
		t.Errorf("following = %q, next %q; want %q and null", got, next, want)
	}
	wantCalls(t, e.svc, "Following[1 0 20]")

	// An empty list is [], not null.
	r = e.do(req{method: "GET", path: "/v1/users/3/followers", token: token})
	if !bytes.Contains(r.body, []byte(`"items":[]`)) || !bytes.Contains(r.body, []byte(`"next_cursor":null`)) {
		t.Errorf("empty page = %s; want items [] and next_cursor null", r.body)
	}
}

func TestPosts(t *testing.T) {
	e := newEnv(t)
	alices, bobs := userToken(t, alice), userToken(t, bob)

	r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"hello <world> & \"you\""}`})
	wantStatus(t, r, http.StatusCreated)
	p := checkPost(t, r.json(t))
	id := p["id"].(string)
	if p["author_id"] != "1" || p["content"] != `hello <world> & "you"` {
		t.Errorf("post = %v; want alice's hello", p)
	}
	if got, want := r.header.Get("Location"), "/v1/posts/"+id; got != want {
		t.Errorf("Location = %q; want %q", got, want)
	}
	if got, want := p["created_at"], "2026-11-22T07:33:44.121Z"; got != want { // the fake's clock + id ms
		t.Errorf("created_at = %v; want %q", got, want)
	}
	wantCalls(t, e.svc, `Publish[1 hello <world> & "you" ]`)

	t.Run("idempotency key", func(t *testing.T) {
		key := map[string]string{"Idempotency-Key": "retry-1"}
		var first string
		for i := range 2 {
			r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"once"}`, header: key})
			wantStatus(t, r, http.StatusCreated)
			got := r.json(t)["id"].(string)
			if i == 0 {
				first = got
			} else if got != first {
				t.Errorf("retried publish id = %s; want %s", got, first)
			}
		}
		wantCalls(t, e.svc, "Publish[1 once retry-1]", "Publish[1 once retry-1]")
		long := map[string]string{"Idempotency-Key": strings.Repeat("k", 255)}
		wantStatus(t, e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"x"}`, header: long}), http.StatusCreated)
		e.svc.calls()

		// The fingerprint is the decoded body's: spacing and escapes do
		// not make another request, other content does.
		for _, body := range []string{" {\n  \"content\" : \"once\"\n} ", `{"content":"\u006fnce"}`} {
			r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: body, header: key})
			wantStatus(t, r, http.StatusCreated)
			if got := r.json(t)["id"]; got != first {
				t.Errorf("retry as %q: id = %v; want %s", body, got, first)
			}
		}
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"Once"}`, header: key})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if got := r.errorCode(t); got != "idempotency_key_reused" {
			t.Errorf("reused key: code = %q; want idempotency_key_reused", got)
		}
		// A request without a key has no fingerprint to compare.
		r = e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"once"}`})
		wantStatus(t, r, http.StatusCreated)
		e.svc.calls()
	})
	t.Run("idempotency key with data", func(t *testing.T) {
		key := map[string]string{"Idempotency-Key": "retry-data"}
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"d","data":{"a":1,"b":[2,"x"]}}`, header: key})
		wantStatus(t, r, http.StatusCreated)
		first := r.json(t)["id"]
		// The data is part of the request: the same data with other
		// spacing, key order or escapes is the same request...
		for _, body := range []string{
			`{ "data" : { "a" : 1 , "b" : [ 2 , "x" ] } , "content" : "d" }`,
			`{"content":"d","data":{"b":[2,"\u0078"],"a":1}}`,
		} {
			r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: body, header: key})
			wantStatus(t, r, http.StatusCreated)
			if got := r.json(t)["id"]; got != first {
				t.Errorf("retry as %s: id = %v; want %v", body, got, first)
			}
		}
		// ...and the same content with other data, or none, is another.
		for _, body := range []string{
			`{"content":"d","data":{"a":2,"b":[2,"x"]}}`,
			`{"content":"d","data":{"a":1.0,"b":[2,"x"]}}`,
			`{"content":"d"}`,
			`{"content":"d","data":null}`,
		} {
			r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: body, header: key})
			wantStatus(t, r, http.StatusUnprocessableEntity)
			if got := r.errorCode(t); got != "idempotency_key_reused" {
				t.Errorf("%s: code = %q; want idempotency_key_reused", body, got)
			}
		}
		// Data null is no data: the same request as none.
		none := map[string]string{"Idempotency-Key": "retry-none"}
		r = e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"n"}`, header: none})
		wantStatus(t, r, http.StatusCreated)
		first = r.json(t)["id"]
		r = e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"n","data":null}`, header: none})
		wantStatus(t, r, http.StatusCreated)
		if got := r.json(t)["id"]; got != first {
			t.Errorf("retry with data null: id = %v; want %v", got, first)
		}
		e.svc.calls()
	})
	t.Run("5000 runes", func(t *testing.T) {
		content := strings.Repeat("é", 5000)
		r := e.do(req{method: "POST", path: "/v1/posts", token: alices, body: `{"content":"` + content + `"}`})
		wantStatus(t, r, http.StatusCreated)
		e.svc.calls()
	})
	t.Run("get", func(t *testing.T) {
		for _, token := range []string{bobs, testAdmin} {
			r := e.do(req{method: "GET", path: "/v1/posts/" + id, token: token})
			wantStatus(t, r, http.StatusOK)
			if got := checkPost(t, r.json(t))["id"]; got != id {
				t.Errorf("id = %v; want %s", got, id)
			}
		}
		r := e.do(req{method: "GET", path: "/v1/posts/99999", token: bobs})
		wantStatus(t, r, http.StatusNotFound)
		e.svc.calls()
	})
	t.Run("delete", func(t *testing.T) {
		r := e.do(req{method: "DELETE", path: "/v1/posts/" + id, token: bobs})
		wantStatus(t, r, http.StatusForbidden)
		wantCalls(t, e.svc, "DeletePost[2 "+id+"]")

		r = e.do(req{method: "DELETE", path: "/v1/posts/" + id, token: alices})
		wantStatus(t, r, http.StatusNoContent)
		wantCalls(t, e.svc, "DeletePost[1 "+id+"]")

		for _, rq := range []req{
			{method: "GET", path: "/v1/posts/" + id, token: alices},
			{method: "DELETE", path: "/v1/posts/" + id, token: alices},
		} {
			r := e.do(rq)
			wantStatus(t, r, http.StatusNotFound)
			if got, want := r.errorCode(t), "not_found"; got != want {
				t.Errorf("code = %q; want %q", got, want)
			}
		}
		e.svc.calls()
	})
}

func TestPostPages(t *testing.T) {
	e := newEnv(t)
	var want []string
	for range 5 {
		p := e.svc.seedPost(alice, "post")
		want = append([]string{feed.FormatID(p.ID)}, want...) // newest first
	}
	e.svc.seedPost(carol, "not followed")
	e.svc.seedFollow(bob, alice)
	bobs := userToken(t, bob)

	walk := func(t *testing.T, base string) ([]string, []string) {
		t.Helper()
		var got, cursors []string
		cursor := ""
		for range 10 {
			path := base + "?limit=2"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			r := e.do(req{method: "GET", path: path, token: bobs})
			wantStatus(t, r, http.StatusOK)
			items, next := page(t, r)
			for _, it := range items {
				checkPost(t, it)
			}
			got = append(got, ids(items)...)
			if next == "" {
				return got, cursors
			}
			cursors = append(cursors, next)
			cursor = next
		}
		t.Fatal("paging does not end")
		return nil, nil
	}
	for _, tt := range []struct{ name, path, method string }{
		{"author posts", "/v1/users/1/posts", "AuthorPosts[1"},
		{"home feed", "/v1/me/feed", "Feed[2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, cursors := walk(t, tt.path)
			if !slices.Equal(got, want) {
				t.Errorf("posts = %q; want %q", got, want)
			}
			// Each cursor is the last id of its page: the next page is below.
			if len(cursors) != 2 {
				t.Fatalf("cursors = %q; want 2", cursors)
			}
			for i, c := range cursors {
				pos, err := feed.DecodeCursor(feed.CursorFeed, c)
				if err != nil || feed.FormatID(pos) != want[2*i+1] {
					t.Errorf("cursor %d = %d, %v; want position %s", i, pos, err, want[2*i+1])
				}
			}
			wantCalls(t, e.svc,
				tt.method+" 0 2]",
				tt.method+" "+want[1]+" 2]",
				tt.method+" "+want[3]+" 2]")
		})
	}
	t.Run("unknown author", func(t *testing.T) {
		r := e.do(req{method: "GET", path: "/v1/users/999/posts", token: bobs})
		wantStatus(t, r, http.StatusNotFound)
		e.svc.calls()
	})
	t.Run("limit bounds", func(t *testing.T) {
		for _, tt := range []struct {
			query string
			want  string
		}{
			{"", "Feed[2 0 20]"},
			{"?limit=1", "Feed[2 0 1]"},
			{"?limit=100", "Feed[2 0 100]"},
			{"?limit=007", "Feed[2 0 7]"},
			{"?cursor=", "Feed[2 0 20]"},
		} {
			wantStatus(t, e.do(req{method: "GET", path: "/v1/me/feed" + tt.query, token: bobs}), http.StatusOK)
			wantCalls(t, e.svc, tt.want)
		}
	})
}

func TestBadInput(t *testing.T) {
	alices := userToken(t, alice)
	huge := strings.Repeat("a", 1<<20)
	usersCursor := feed.EncodeCursor(feed.CursorUsers, 5)
	feedCursor := feed.EncodeCursor(feed.CursorFeed, 5)

	tests := []struct {
		name   string
		method string
		path   string
		token  string
		body   string
		header map[string]string
		status int
		code   string
	}{
		// POST /v1/users
		{"user: not JSON", "POST", "/v1/users", testAdmin, `nope`, nil, 400, "invalid"},
		{"user: cut short", "POST", "/v1/users", testAdmin, `{"name":"a"`, nil, 400, "invalid"},
		{"user: syntax", "POST", "/v1/users", testAdmin, `{"name":"a",}`, nil, 400, "invalid"},
		{"user: empty body", "POST", "/v1/users", testAdmin, ``, nil, 400, "invalid"},
		{"user: blank body", "POST", "/v1/users", testAdmin, "  \n", nil, 400, "invalid"},
		{"user: array", "POST", "/v1/users", testAdmin, `[]`, nil, 400, "invalid"},
		{"user: string", "POST", "/v1/users", testAdmin, `"alice"`, nil, 400, "invalid"},
		{"user: null", "POST", "/v1/users", testAdmin, `null`, nil, 400, "invalid"},
		{"user: unknown field", "POST", "/v1/users", testAdmin, `{"name":"a","age":3}`, nil, 400, "invalid"},
		{"user: name a number", "POST", "/v1/users", testAdmin, `{"name":1}`, nil, 400, "invalid"},
		{"user: trailing object", "POST", "/v1/users", testAdmin, `{"name":"a"}{"name":"b"}`, nil, 400, "invalid"},
		{"user: trailing garbage", "POST", "/v1/users", testAdmin, `{"name":"a"} x`, nil, 400, "invalid"},
		{"user: no name", "POST", "/v1/users", testAdmin, `{}`, nil, 400, "invalid"},
		{"user: empty name", "POST", "/v1/users", testAdmin, `{"name":""}`, nil, 400, "invalid"},
		{"user: blank name", "POST", "/v1/users", testAdmin, `{"name":" \t\u00a0"}`, nil, 400, "invalid"},
		{"user: name 65 runes", "POST", "/v1/users", testAdmin, `{"name":"` + strings.Repeat("é", 65) + `"}`, nil, 400, "invalid"},
		{"user: id word", "POST", "/v1/users", testAdmin, `{"name":"a","id":"abc"}`, nil, 400, "invalid"},
		{"user: id zero", "POST", "/v1/users", testAdmin, `{"name":"a","id":0}`, nil, 400, "invalid"},
		{"user: id negative", "POST", "/v1/users", testAdmin, `{"name":"a","id":"-1"}`, nil, 400, "invalid"},
		{"user: id fraction", "POST", "/v1/users", testAdmin, `{"name":"a","id":1.5}`, nil, 400, "invalid"},
		{"user: id exponent", "POST", "/v1/users", testAdmin, `{"name":"a","id":1e3}`, nil, 400, "invalid"},
		{"user: id plus", "POST", "/v1/users", testAdmin, `{"name":"a","id":"+5"}`, nil, 400, "invalid"},
		{"user: id empty", "POST", "/v1/users", testAdmin, `{"name":"a","id":""}`, nil, 400, "invalid"},
		{"user: id bool", "POST", "/v1/users", testAdmin, `{"name":"a","id":true}`, nil, 400, "invalid"},
		{"user: id overflow", "POST", "/v1/users", testAdmin, `{"name":"a","id":"9223372036854775808"}`, nil, 400, "invalid"},
		{"user: over 1 MiB", "POST", "/v1/users", testAdmin, `{"name":"` + huge + `"}`, nil, 413, "too_large"},

		// POST /v1/users/{id}/tokens
		{"token: path word", "POST", "/v1/users/abc/tokens", testAdmin, ``, nil, 400, "invalid"},
		{"token: path zero", "POST", "/v1/users/0/tokens", testAdmin, ``, nil, 400, "invalid"},
		{"token: path negative", "POST", "/v1/users/-1/tokens", testAdmin, ``, nil, 400, "invalid"},
		{"token: ttl zero", "POST", "/v1/users/2/tokens", testAdmin, `{"ttl_seconds":0}`, nil, 400, "invalid"},
		{"token: ttl negative", "POST", "/v1/users/2/tokens", testAdmin, `{"ttl_seconds":-1}`, nil, 400, "invalid"},
		{"token: ttl over a year", "POST", "/v1/users/2/tokens", testAdmin, `{"ttl_seconds":31536001}`, nil, 400, "invalid"},
		{"token: ttl string", "POST", "/v1/users/2/tokens", testAdmin, `{"ttl_seconds":"60"}`, nil, 400, "invalid"},
		{"token: ttl fraction", "POST", "/v1/users/2/tokens", testAdmin, `{"ttl_seconds":1.5}`, nil, 400, "invalid"},
		{"token: unknown field", "POST", "/v1/users/2/tokens", testAdmin, `{"ttl":60}`, nil, 400, "invalid"},
		{"token: not JSON", "POST", "/v1/users/2/tokens", testAdmin, `ttl=60`, nil, 400, "invalid"},
		{"token: over 1 MiB", "POST", "/v1/users/2/tokens", testAdmin, `{"x":"` + huge + `"}`, nil, 413, "too_large"},

		// ids in paths
		{"get user: word", "GET", "/v1/users/abc", alices, ``, nil, 400, "invalid"},
		{"get user: zero", "GET", "/v1/users/0", alices, ``, nil, 400, "invalid"},
		{"get user: fraction", "GET", "/v1/users/1.5", alices, ``, nil, 400, "invalid"},
		{"get user: plus", "GET", "/v1/users/+1", alices, ``, nil, 400, "invalid"},
		{"get user: overflow", "GET", "/v1/users/99999999999999999999", alices, ``, nil, 400, "invalid"},
		{"followers: word", "GET", "/v1/users/x/followers", alices, ``, nil, 400, "invalid"},
		{"following: word", "GET", "/v1/users/x/following", alices, ``, nil, 400, "invalid"},
		{"author posts: word", "GET", "/v1/users/x/posts", alices, ``, nil, 400, "invalid"},
		{"get post: word", "GET", "/v1/posts/abc", alices, ``, nil, 400, "invalid"},
		{"delete post: word", "DELETE", "/v1/posts/abc", alices, ``, nil, 400, "invalid"},
		{"follow: word", "PUT", "/v1/me/following/abc", alices, ``, nil, 400, "invalid"},
		{"unfollow: word", "DELETE", "/v1/me/following/abc", alices, ``, nil, 400, "invalid"},

		// POST /v1/posts
		{"post: no content", "POST", "/v1/posts", alices, `{}`, nil, 400, "invalid"},
		{"post: empty content", "POST", "/v1/posts", alices, `{"content":""}`, nil, 400, "invalid"},
		{"post: whitespace", "POST", "/v1/posts", alices, `{"content":" \n\t\u3000 "}`, nil, 400, "invalid"},
		{"post: 5001 runes", "POST", "/v1/posts", alices, `{"content":"` + strings.Repeat("é", 5001) + `"}`, nil, 400, "invalid"},
		{"post: content a number", "POST", "/v1/posts", alices, `{"content":1}`, nil, 400, "invalid"},
		{"post: unknown field", "POST", "/v1/posts", alices, `{"content":"hi","author_id":"2"}`, nil, 400, "invalid"},
		{"post: trailing data", "POST", "/v1/posts", alices, `{"content":"hi"}]`, nil, 400, "invalid"},
		{"post: empty body", "POST", "/v1/posts", alices, ``, nil, 400, "invalid"},
		{"post: key too long", "POST", "/v1/posts", alices, `{"content":"hi"}`, map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, 400, "invalid"},
		{"post: key not ASCII", "POST", "/v1/posts", alices, `{"content":"hi"}`, map[string]string{"Idempotency-Key": "clé"}, 400, "invalid"},
		{"post: over 1 MiB", "POST", "/v1/posts", alices, `{"content":"` + huge + `"}`, nil, 413, "too_large"},

		// pages
		{"limit zero", "GET", "/v1/me/feed?limit=0", alices, ``, nil, 400, "invalid"},
		{"limit 101", "GET", "/v1/me/feed?limit=101", alices, ``, nil, 400, "invalid"},
		{"limit negative", "GET", "/v1/users/1/posts?limit=-1", alices, ``, nil, 400, "invalid"},
		{"limit word", "GET", "/v1/users/1/followers?limit=ten", alices, ``, nil, 400, "invalid"},
		{"limit fraction", "GET", "/v1/users/1/following?limit=1.5", alices, ``, nil, 400, "invalid"},
		{"limit empty", "GET", "/v1/me/feed?limit=", alices, ``, nil, 400, "invalid"},
		{"limit plus", "GET", "/v1/me/feed?limit=%2B5", alices, ``, nil, 400, "invalid"},
		{"limit huge", "GET", "/v1/me/feed?limit=99999999999999999999", alices, ``, nil, 400, "invalid"},
		{"cursor garbage", "GET", "/v1/me/feed?cursor=!!!", alices, ``, nil, 400, "invalid"},
		{"cursor too long", "GET", "/v1/users/1/posts?cursor=" + strings.Repeat("A", 40), alices, ``, nil, 400, "invalid"},
		{"cursor users on feed", "GET", "/v1/me/feed?cursor=" + usersCursor, alices, ``, nil, 400, "invalid"},
		{"cursor feed on followers", "GET", "/v1/users/1/followers?cursor=" + feedCursor, alices, ``, nil, 400, "invalid"},
		{"cursor feed on following", "GET", "/v1/users/1/following?cursor=" + feedCursor, alices, ``, nil, 400, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.do(req{method: tt.method, path: tt.path, token: tt.token, body: tt.body, header: tt.header})
			wantStatus(t, r, tt.status)
			if got := r.errorCode(t); got != tt.code {
				t.Errorf("code = %q; want %q", got, tt.code)
			}
			wantCalls(t, e.svc)
		})
	}
}

func TestRouting(t *testing.T) {
	e := newEnv(t)
	alices := userToken(t, alice)
	t.Run("405", func(t *testing.T) {
		for _, tt := range []struct {
			method, path, allow string
		}{
			{"DELETE", "/v1/users", "POST"},
			{"GET", "/v1/posts", "POST"},
			{"PUT", "/v1/posts/1", "DELETE, GET, HEAD, PATCH"},
			{"POST", "/v1/me/feed", "GET, HEAD"},
			{"GET", "/v1/me/following/2", "DELETE, PUT"},
			{"POST", "/healthz", "GET, HEAD"},
		} {
			r := e.do(req{method: tt.method, path: tt.path, token: alices})
			wantStatus(t, r, http.StatusMethodNotAllowed)
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Errorf("%s %s: Allow = %q; want %q", tt.method, tt.path, got, tt.allow)
			}
			if got, want := r.errorCode(t), "method_not_allowed"; got != want {
				t.Errorf("code = %q; want %q", got, want)
			}
		}
	})
	t.Run("404", func(t *testing.T) {
		for _, path := range []string{"/", "/nope", "/v1", "/v1/users/1/nope", "/v1/users/", "/v2/users/1"} {
			r := e.do(req{method: "GET", path: path, token: alices})
			wantStatus(t, r, http.StatusNotFound)
			if got, want := r.errorCode(t), "not_found"; got != want {
				t.Errorf("%s: code = %q; want %q", path, got, want)
			}
		}
	})
	wantCalls(t, e.svc)
}

func TestServiceErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		status  int
		code    string
		message string
	}{
		{"plain error", errors.New("sqlstore: dial tcp 10.0.0.7:3306: connection refused"), 500, "internal", "internal error"},
		{"wrapped domain error", fmtErr(feed.Errorf(feed.ENOTFOUND, "user 5 does not exist")), 404, "not_found", "user 5 does not exist"},
		{"unavailable", feed.Errorf(feed.EUNAVAILABLE, "the database is not answering"), 503, "unavailable", "the database is not answering"},
		{"rate limited", feed.Errorf(feed.ERATELIMIT, "slow down"), 429, "rate_limited", "slow down"},
		{"too large", feed.Errorf(feed.ETOOLARGE, "too big"), 413, "too_large", "too big"},
		{"conflict", feed.Errorf(feed.ECONFLICT, "taken"), 409, "conflict", "taken"},
		{"idempotency key reused", feed.Errorf(feed.EKEYREUSED, "other body"), 422, "idempotency_key_reused", "other body"},
		{"idempotency key in flight", feed.Errorf(feed.EKEYINFLIGHT, "busy"), 409, "idempotency_key_in_flight", "busy"},
		{"internal domain error", feed.Errorf(feed.EINTERNAL, "secret detail"), 500, "internal", "internal error"},
		{"unknown code", feed.Errorf("weird", "secret detail"), 500, "internal", "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.svc.setFail("User", tt.err)
			r := e.do(req{method: "GET", path: "/v1/users/1", token: testAdmin})
			wantStatus(t, r, tt.status)
			if got := r.errorCode(t); got != tt.code {
				t.Errorf("code = %q; want %q", got, tt.code)
			}
			if got := r.errorMessage(t); got != tt.message {
				t.Errorf("message = %q; want %q", got, tt.message)
			}
			if ra := r.header.Get("Retry-After"); (tt.status == 503 || tt.code == feed.EKEYINFLIGHT) != (ra != "") {
				t.Errorf("Retry-After = %q on a %d %s", ra, tt.status, tt.code)
			}
			if tt.status == 500 && !strings.Contains(e.logs.String(), tt.err.Error()) {
				t.Errorf("log does not hold the detail %q:\n%s", tt.err, e.logs)
			}
		})
	}
}

func fmtErr(err error) error { return errors.Join(errors.New("service: get user"), err) }

func TestPanic(t *testing.T) {
	e := newEnv(t)
	e.svc.setPanic("User")
	r := e.do(req{method: "GET", path: "/v1/users/1", token: testAdmin})
	wantStatus(t, r, http.StatusInternalServerError)
	if got, want := r.errorCode(t), "internal"; got != want {
		t.Errorf("code = %q; want %q", got, want)
	}
	if got, want := r.errorMessage(t), "internal error"; got != want {
		t.Errorf("message = %q; want %q", got, want)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "User exploded") || !strings.Contains(logs, "level=ERROR") {
		t.Errorf("log does not record the panic at error level:\n%s", logs)
	}
	// The server lives on.
	wantStatus(t, e.do(req{method: "GET", path: "/v1/posts/1", token: testAdmin}), http.StatusNotFound)
}

func TestOps(t *testing.T) {
	e := newEnv(t)
	r := e.do(req{method: "GET", path: "/healthz"})
	wantStatus(t, r, http.StatusOK)
	if got, want := string(bytes.TrimSpace(r.body)), `{"status":"ok"}`; got != want {
		t.Errorf("healthz = %s; want %s", got, want)
	}
	r = e.do(req{method: "GET", path: "/readyz"})
	wantStatus(t, r, http.StatusOK)
	if got, want := string(bytes.TrimSpace(r.body)), `{"status":"ok","checks":{"backends":"ok"}}`; got != want {
		t.Errorf("readyz = %s; want %s", got, want)
	}

	e.svc.setReady(errors.New("redis: dial 10.1.2.3:6379: refused"))
	// The last answer stands for a second (readiness).
	testenv.Eventually(t, 5*time.Second, "readyz sees the failure", func() bool {
		r = e.do(req{method: "GET", path: "/readyz"})
		return r.status != http.StatusOK
	})
	wantStatus(t, r, http.StatusServiceUnavailable)
	// The standard error, plus each dependency's state.
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal(r.body, &ready); err != nil {
		t.Fatal(err)
	}
	if ready.Error.Code != "unavailable" || ready.Status != "unavailable" || ready.Checks["backends"] != "down" || !strings.Contains(ready.Error.Message, "backends") {
		t.Errorf("readyz = %s; want code unavailable naming the failed dependency", r.body)
	}
	if bytes.Contains(r.body, []byte("10.1.2.3")) || !strings.Contains(e.logs.String(), "10.1.2.3") {
		t.Errorf("readyz body %s / log: want the detail in the log only", r.body)
	}

	// Metrics: the histogram is labelled with the route pattern.
	wantStatus(t, e.do(req{method: "GET", path: "/v1/users/1", token: testAdmin}), http.StatusOK)
	wantStatus(t, e.do(req{method: "GET", path: "/nope"}), http.StatusNotFound)
	r = e.do(req{method: "GET", path: "/metrics"})
	wantStatus(t, r, http.StatusOK)
	for _, want := range []string{
		`feedd_http_request_duration_seconds_count{code="200",method="GET",route="/v1/users/{id}"} 1`,
		`feedd_http_request_duration_seconds_count{code="503",method="GET",route="/readyz"} 1`,
		`feedd_http_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 1`,
	} {
		if !bytes.Contains(r.body, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestNewProbes(t *testing.T) {
	// The probe runs on the server's goroutines: share the answer atomically.
	var down atomic.Bool
	ready := func(ctx context.Context) []feed.Check {
		if down.Load() {
			return []feed.Check{{Name: "broker", Required: true, Err: errors.New("broker down")}}
		}
		return []feed.Check{{Name: "broker", Required: true}}
	}
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(NewProbes(nil, ready, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		path   string
		status int
	}{
		{"/healthz", 200},
		{"/readyz", 200},
		{"/metrics", 200},
		{"/v1/users/1", 404},
		{"/v1/openapi.json", 404},
	} {
		r := doHTTP(t, srv.URL, req{method: "GET", path: tt.path, token: testAdmin})
		if r.status != tt.status {
			t.Errorf("GET %s = %d; want %d", tt.path, r.status, tt.status)
		}
	}
	down.Store(true)
	testenv.Eventually(t, 5*time.Second, "readyz 503 once the last answer is a second old", func() bool {
		return doHTTP(t, srv.URL, req{method: "GET", path: "/readyz"}).status == http.StatusServiceUnavailable
	})
}

func TestNewServerSharesRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := newFakeService(testNow)
	// A second server on the same registry must not panic on registration.
	NewServer(nil, Config{}, svc, svc, reg, nil)
	h := NewServer(nil, Config{}, svc, svc, reg, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	wantStatus(t, doHTTP(t, srv.URL, req{method: "GET", path: "/healthz"}), http.StatusOK)
	// No admin token configured: an empty bearer must not become admin.
	r := doHTTP(t, srv.URL, req{method: "POST", path: "/v1/users", header: map[string]string{"Authorization": "Bearer "}, body: `{"name":"x"}`})
	wantStatus(t, r, http.StatusUnauthorized)
	// No metrics handler: /metrics is a JSON 404.
	wantStatus(t, doHTTP(t, srv.URL, req{method: "GET", path: "/metrics"}), http.StatusNotFound)
}

// TestOpenAPIMatchesRoutes walks the route table the mux is built from and
// the embedded document, both ways.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas         map[string]json.RawMessage `json:"schemas"`
			SecuritySchemes map[string]struct {
				Type   string `json:"type"`
				Scheme string `json:"scheme"`
			} `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi = %q; want 3.x", doc.OpenAPI)
	}
	if s := doc.Components.SecuritySchemes["bearer"]; s.Type != "http" || s.Scheme != "bearer" {
		t.Errorf("bearer security scheme = %+v; want http bearer", s)
	}
	for _, name := range []string{"User", "Post", "Error", "UserPage", "PostPage"} {
		if _, ok := doc.Components.Schemas[name]; !ok {
			t.Errorf("components.schemas lacks %s", name)
		}
	}

	fromRoutes := map[string]bool{}
	for _, rt := range routes(nil, nil, nil, nil, nil, nil, nil, nil) {
		fromRoutes[rt.method+" "+rt.path] = true
	}
	fromDoc := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				fromDoc[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	for rt := range fromRoutes {
		if !fromDoc[rt] {
			t.Errorf("route %s is not in openapi.json", rt)
		}
	}
	for op := range fromDoc {
		if !fromRoutes[op] {
			t.Errorf("openapi.json describes %s, which routes.go does not serve", op)
		}
	}

	e := newEnv(t)
	r := e.do(req{method: "GET", path: "/v1/openapi.json"})
	wantStatus(t, r, http.StatusOK)
	if !bytes.Equal(r.body, openAPIDoc) {
		t.Errorf("served document differs from the embedded one")
	}
}
