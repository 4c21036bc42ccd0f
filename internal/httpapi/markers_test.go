package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// TestMarkers: the marker is the token's user's, answers null fields until
// set, moves forward only, and bad input never reaches the service.
func TestMarkers(t *testing.T) {
	e := newEnv(t)
	p1, p2 := e.svc.seedPost(alice, "one"), e.svc.seedPost(alice, "two")
	e.svc.calls()
	bobs := userToken(t, bob)
	const path = "/v1/me/markers/home"

	r := e.do(req{method: "GET", path: path, token: bobs})
	wantStatus(t, r, http.StatusOK)
	if want := `{"last_read_id":null,"unread_count":0,"unread_capped":false,"updated_at":null}`; strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("GET, never set: %s; want %s", r.body, want)
	}
	wantCalls(t, e.svc, "Marker[2]")

	put := func(body string) response {
		return e.do(req{method: "PUT", path: path, token: bobs, body: body})
	}
	r = put(`{"last_read_id":"` + feed.FormatID(p2.ID) + `"}`)
	wantStatus(t, r, http.StatusOK)
	v := r.json(t)
	if v["last_read_id"] != feed.FormatID(p2.ID) || v["unread_count"] != 7.0 || v["unread_capped"] != false || v["updated_at"] == nil {
		t.Fatalf("PUT: %s", r.body)
	}
	// Back: the answer is the current state.
	r = put(`{"last_read_id":"` + feed.FormatID(p1.ID) + `"}`)
	wantStatus(t, r, http.StatusOK)
	if v := r.json(t); v["last_read_id"] != feed.FormatID(p2.ID) {
		t.Fatalf("PUT of an older id: %s; want last_read_id %s", r.body, feed.FormatID(p2.ID))
	}
	wantCalls(t, e.svc, "SetMarker[2 "+feed.FormatID(p2.ID)+"]", "SetMarker[2 "+feed.FormatID(p1.ID)+"]")

	// Not a post: the service says so.
	wantStatus(t, put(`{"last_read_id":"99999"}`), http.StatusBadRequest)
	wantCalls(t, e.svc, "SetMarker[2 99999]")
	// A negative id is a post from before 2025: the service looks it up.
	wantStatus(t, put(`{"last_read_id":"-3"}`), http.StatusBadRequest)
	wantCalls(t, e.svc, "SetMarker[2 -3]")
	for _, body := range []string{
		``, `{}`, `{"last_read_id":null}`, `{"last_read_id":"0"}`, `{"last_read_id":"-0"}`,
		`{"last_read_id":"-2456027136000001"}`, `{"last_read_id":"12x"}`,
		`{"last_read_id":"1","x":1}`, `[]`, `{"last_read_id":"1"} {}`,
	} {
		wantStatus(t, put(body), http.StatusBadRequest)
	}
	wantCalls(t, e.svc)

	wantStatus(t, e.do(req{method: "GET", path: path, token: testAdmin}), http.StatusForbidden)
	wantStatus(t, e.do(req{method: "GET", path: path}), http.StatusUnauthorized)
}
