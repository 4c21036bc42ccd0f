package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

func TestUserExport(t *testing.T) {
	e := newEnv(t)
	e.svc.seedFollow(alice, bob)
	get := func(token string) (*http.Response, string, error) {
		t.Helper()
		r, err := http.NewRequest("GET", e.url+"/v1/users/1/export", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(r)
		if err != nil { // cut off before the headers arrived
			return nil, "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res, string(b), err
	}
	want := "{\"kind\":\"user\",\"id\":\"1\",\"name\":\"alice\"}\n{\"kind\":\"follow\",\"follower_id\":\"1\",\"followee_id\":\"2\"}\n"
	for _, who := range []struct{ name, token string }{{"the user", userToken(t, alice)}, {"the admin", testAdmin}} {
		res, body, err := get(who.token)
		if err != nil || res.StatusCode != http.StatusOK || body != want {
			t.Fatalf("%s: status %d, body %q, %v; want 200 and %q", who.name, res.StatusCode, body, err, want)
		}
		if got := res.Header.Get("Content-Type"); got != "application/x-ndjson" {
			t.Errorf("%s: Content-Type %q; want application/x-ndjson", who.name, got)
		}
	}
	wantCalls(t, e.svc, "Export[1]", "Export[1]")

	// Another user's token: 403, and the service is not asked.
	r := e.do(req{method: "GET", path: "/v1/users/1/export", token: userToken(t, bob)})
	wantStatus(t, r, http.StatusForbidden)
	if got := r.errorCode(t); got != "forbidden" {
		t.Errorf("code %q; want forbidden", got)
	}
	wantCalls(t, e.svc)

	// An unknown user: 404 as JSON.
	r = e.do(req{method: "GET", path: "/v1/users/999/export", token: testAdmin})
	wantStatus(t, r, http.StatusNotFound)
	if got := r.errorCode(t); got != "not_found" {
		t.Errorf("code %q; want not_found", got)
	}
	e.svc.calls()

	// A failure part-way cuts the response off: the client cannot take
	// it for a whole export.
	e.svc.setFail("Export/after", errors.New("the database went away"))
	res, body, err := get(testAdmin)
	if err == nil {
		t.Fatalf("a failed export read as whole: status %d, body %q", res.StatusCode, body)
	}
	if body != "" && !strings.HasPrefix(body, `{"kind":"user"`) {
		t.Errorf("the lines before the failure: %q", body)
	}
	// The request log has the cause.
	testenv.Eventually(t, 5*time.Second, "the aborted export's log line", func() bool {
		logs := e.logs.String()
		return strings.Contains(logs, "aborted=true") && strings.Contains(logs, "the database went away")
	})
}
