package main

import (
	"strings"
	"testing"
)

// The real program serves the app and the console beside the API: the
// pages on their own paths with their headers, and the API's JSON answers
// everywhere else.
func TestWebPagesBesideTheAPI(t *testing.T) {
	in := startFeedd(t, map[string]string{"FEEDD_DATA_DIR": t.TempDir()}, nil)
	for _, path := range []string{"/", "/top", "/users/42", "/posts/7", "/ops"} {
		r := in.do("GET", path, "", nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.raw), `<script type="module"`) {
			t.Errorf("GET %s: %d %s; want the page", path, r.status, r.header.Get("Content-Type"))
		}
		for k, v := range map[string]string{
			"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
			"Referrer-Policy":         "no-referrer",
			"X-Content-Type-Options":  "nosniff",
		} {
			if got := r.header.Get(k); got != v {
				t.Errorf("GET %s: %s = %q; want %q", path, k, got, v)
			}
		}
	}
	if r := in.do("GET", "/assets/app.js", "", nil); r.status != 200 || r.header.Get("ETag") == "" {
		t.Errorf("GET /assets/app.js: %d, ETag %q; want 200 with an ETag", r.status, r.header.Get("ETag"))
	}
	// Every path the pages do not claim keeps the API's JSON errors.
	for _, path := range []string{"/v1/nope", "/v1", "/v1/users/1/nope", "/nope", "/assets/../v1/me/feed"} {
		if r := in.do("GET", path, "", nil); r.status != 404 || r.errCode() != "not_found" {
			t.Errorf("GET %s: %d %s; want a JSON 404", path, r.status, r.raw)
		}
	}
	// A user's or post's page with no id in the path is the app's page
	// saying there is nothing there, with a 404.
	if r := in.do("GET", "/users/x", "", nil); r.status != 404 || !strings.Contains(string(r.raw), "/assets/app.js") {
		t.Errorf("GET /users/x: %d; want 404 with the app's page", r.status)
	}
	if r := in.do("POST", "/", "", "{}"); r.status != 405 || r.errCode() != "method_not_allowed" {
		t.Errorf("POST /: %d %s; want a JSON 405", r.status, r.raw)
	}
	// The API is unchanged under the pages.
	if r := in.do("GET", "/v1/me/feed", "", nil); r.status != 401 {
		t.Errorf("GET /v1/me/feed without a token: %d; want 401", r.status)
	}
}
