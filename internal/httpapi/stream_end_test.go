package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/stream"
)

// admin sends an empty-bodied request with the admin token and checks
// its status.
func (e *streamEnv) admin(method, path string, want int) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+testAdmin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != want {
		e.t.Fatalf("%s %s as the admin: %d; want %d", method, path, res.StatusCode, want)
	}
}

// TestStreamEndsWithItsToken: a stream lives no longer than the token it
// was opened with, directly or through a ticket: once the token expires,
// is revoked or its user is deleted, the stream ends with a retry: hint
// at its next heartbeat (the reconnect is then refused) and sends no post
// after that.
func TestStreamEndsWithItsToken(t *testing.T) {
	for _, tt := range []struct {
		name   string
		ticket bool
		end    func(e *streamEnv)
	}{
		{"revoked", false, func(e *streamEnv) { e.admin("DELETE", "/v1/users/"+feed.FormatID(bob)+"/tokens", 204) }},
		{"expired", false, func(e *streamEnv) { e.now.Add(int64(time.Hour + time.Second)) }},
		{"user deleted", false, func(e *streamEnv) { e.admin("DELETE", "/v1/users/"+feed.FormatID(bob), 202) }},
		{"ticket, revoked", true, func(e *streamEnv) { e.admin("DELETE", "/v1/users/"+feed.FormatID(bob)+"/tokens", 204) }},
		{"ticket, token expired", true, func(e *streamEnv) { e.now.Add(int64(time.Hour + time.Second)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newStreamEnv(t, stream.Config{Heartbeat: 20 * time.Millisecond})
			var s *sse
			if tt.ticket {
				s, _ = e.open("", "?ticket="+e.ticket(bob))
			} else {
				s, _ = e.open(userToken(t, bob), "")
			}
			if got := s.next(); got != ": ping\n\n" {
				t.Fatalf("an idle stream sent %q; want a ping", got)
			}
			tt.end(e)
			time.Sleep(100 * time.Millisecond) // a few heartbeats
			p := e.svc.seedPost(alice, "after the end")
			if err := e.ann.PostCreated(t.Context(), alice, p.ID); err != nil {
				t.Fatal(err)
			}
			if got := s.event(); !strings.HasPrefix(got, "retry: ") {
				t.Fatalf("after the token's end the stream sent %q; want a retry: hint", got)
			}
			if !s.Ended(5 * time.Second) {
				t.Fatal("the stream goes on after its retry hint")
			}
		})
	}
}

// TestStreamHead: HEAD on the stream is refused with 405, Allow: GET and
// the API's error, before it opens anything: no stream slot taken, and a
// request pipelined after it on the connection gets its own answer.
func TestStreamHead(t *testing.T) {
	e := newStreamEnv(t, stream.Config{MaxPerUser: 1})
	addr := strings.TrimPrefix(e.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "HEAD /v1/me/feed/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, userToken(t, bob))
	fmt.Fprintf(c, "GET /v1/users/%d HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", alice, addr, testAdmin)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 405 || res.Header.Get("Allow") != "GET" || res.Header.Get("Content-Type") != contentTypeJSON {
		t.Fatalf("HEAD: %d, Allow %q, Content-Type %q; want 405, GET, JSON", res.StatusCode, res.Header.Get("Allow"), res.Header.Get("Content-Type"))
	}
	res, err = http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	var u struct{ Name string }
	err = json.NewDecoder(res.Body).Decode(&u)
	res.Body.Close()
	if res.StatusCode != 200 || err != nil || u.Name != "alice" {
		t.Fatalf("the request after HEAD: %d %+v %v; want 200 and alice", res.StatusCode, u, err)
	}
	if n := e.hub.Len(); n != 0 {
		t.Fatalf("%d streams open after HEAD; want none", n)
	}
	if _, res := e.open(userToken(t, bob), ""); res.StatusCode != 200 {
		t.Fatalf("GET after HEAD: %d; want 200 (the HEAD took no slot)", res.StatusCode)
	}
}

// TestStreamStrictQuery: the stream's query follows the rules of every
// route's (strict_test.go): a malformed query or a parameter given twice
// is a 400, and the ticket it came with is left unspent.
func TestStreamStrictQuery(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	tk := e.ticket(bob)
	for _, tt := range []struct{ token, query, want string }{
		{userToken(t, bob), "?last_event_id=%zz", "query string cannot be parsed"},
		{userToken(t, bob), "?x=%zz", "query string cannot be parsed"},
		{userToken(t, bob), "?last_event_id=1&last_event_id=2", "last_event_id must be given at most once"},
		{"", "?ticket=" + tk + "&ticket=" + tk, "ticket must be given at most once"},
		{"", "?ticket=" + tk + "&last_event_id=%zz", "query string cannot be parsed"},
	} {
		req, _ := http.NewRequest("GET", e.url+"/v1/me/feed/stream"+tt.query, nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == 200 {
			res.Body.Close()
			t.Errorf("%s: 200; want 400 %q", tt.query, tt.want)
			continue
		}
		var body errorJSON
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != 400 || body.Error.Code != feed.EINVALID || !strings.Contains(body.Error.Message, tt.want) {
			t.Errorf("%s: %d %+v; want 400 %q", tt.query, res.StatusCode, body.Error, tt.want)
		}
	}
	if _, res := e.open("", "?ticket="+tk); res.StatusCode != 200 {
		t.Fatalf("the ticket after refused opens: %d; want 200", res.StatusCode)
	}
}
