package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// TestSettings: the settings are the token's user's, answer the defaults
// until set, change only what is sent, and bad input never reaches the
// service.
func TestSettings(t *testing.T) {
	e := newEnv(t)
	bobs := userToken(t, bob)
	const path = "/v1/me/settings"

	r := e.do(req{method: "GET", path: path, token: bobs})
	wantStatus(t, r, http.StatusOK)
	if want := `{"home_replies":"following"}`; strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("GET, never set: %s; want %s", r.body, want)
	}
	wantCalls(t, e.svc, "Settings[2]")

	put := func(body string) response {
		return e.do(req{method: "PUT", path: path, token: bobs, body: body})
	}
	for _, rule := range []string{"none", "all", "following"} {
		r = put(`{"home_replies":"` + rule + `"}`)
		wantStatus(t, r, http.StatusOK)
		if want := `{"home_replies":"` + rule + `"}`; strings.TrimSpace(string(r.body)) != want {
			t.Fatalf("PUT %s: %s; want %s", rule, r.body, want)
		}
		r = e.do(req{method: "GET", path: path, token: bobs})
		if want := `{"home_replies":"` + rule + `"}`; strings.TrimSpace(string(r.body)) != want {
			t.Fatalf("GET after PUT %s: %s; want %s", rule, r.body, want)
		}
	}
	e.svc.calls()

	for _, body := range []string{
		``, `{}`, `{"home_replies":null}`, `{"home_replies":"everyone"}`, `{"home_replies":"ALL"}`,
		`{"home_replies":1}`, `{"home_replies":"all","x":1}`, `[]`,
	} {
		r := put(body)
		wantStatus(t, r, http.StatusBadRequest)
		if v := r.json(t); v["error"] == nil {
			t.Errorf("PUT %s: %s; want an error object", body, r.body)
		}
	}
	wantCalls(t, e.svc)

	wantStatus(t, e.do(req{method: "GET", path: path, token: testAdmin}), http.StatusForbidden)
	wantStatus(t, e.do(req{method: "PUT", path: path, body: `{"home_replies":"all"}`}), http.StatusUnauthorized)
	wantCalls(t, e.svc)
}
