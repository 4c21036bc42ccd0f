package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// sseServer answers each connection with the next script: a status and a
// body, recording the Last-Event-ID each connection sent.
type sseServer struct {
	mu      sync.Mutex
	scripts []func(w http.ResponseWriter, r *http.Request)
	lastIDs []string
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
	n := len(s.lastIDs) - 1
	var script func(w http.ResponseWriter, r *http.Request)
	if n < len(s.scripts) {
		script = s.scripts[n]
	}
	s.mu.Unlock()
	if script == nil {
		<-r.Context().Done() // hold the connection until the client leaves
		return
	}
	script(w, r)
}

func sse(body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = w.Write([]byte(body))
	}
}

// TestStreamReconnects follows the client across connections the server
// ends: it resumes from the last id seen, passes a reset on, and waits as
// Retry-After and retry: ask.
func TestStreamReconnects(t *testing.T) {
	post := `{"id":"5","author_id":"1","content":"a\nb","created_at":"2026-01-01T00:00:00.000Z","like_count":0,"liked_by_me":false}`
	srv := &sseServer{scripts: []func(http.ResponseWriter, *http.Request){
		sse(": open\n\n: ping\n\nevent: post\nid: 5\ndata: " + post + "\n\nretry: 10\n\n"),
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			answer(503, `{"error":{"code":"unavailable","message":"full"}}`)(w)
		},
		sse("event: update\nid: 5\ndata: " + post + "\n\nevent: reset\nid: 9\ndata: {}\n\nevent: delete\ndata: {\"id\":\"-3\"}\n\n"),
	}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, _ := client.New(hs.URL, client.WithToken("t"), client.WithRetryPolicy(fast))
	var waits []time.Duration
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []client.Event
	for ev, err := range c.Stream(ctx, client.StreamOptions{OnReconnect: func(err error, wait time.Duration) { waits = append(waits, wait) }}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
		if len(got) == 4 {
			break
		}
	}
	want := []struct {
		typ client.EventType
		id  client.ID
	}{{client.EventPost, 5}, {client.EventUpdate, 5}, {client.EventReset, 9}, {client.EventDelete, -3}}
	for i, w := range want {
		if got[i].Type != w.typ || got[i].ID != w.id {
			t.Fatalf("event %d = %s %d; want %s %d", i, got[i].Type, got[i].ID, w.typ, w.id)
		}
	}
	if got[0].Post == nil || got[0].Post.Content != "a\nb" {
		t.Fatalf("post event = %+v; want its post decoded", got[0])
	}
	srv.mu.Lock()
	ids := srv.lastIDs
	srv.mu.Unlock()
	if len(ids) != 3 || ids[0] != "" || ids[1] != "5" || ids[2] != "5" {
		t.Fatalf("Last-Event-ID per connection = %q; want none, then 5 twice", ids)
	}
	if len(waits) != 2 || waits[0] != 10*time.Millisecond || waits[1] != time.Second {
		t.Fatalf("waits = %v; want retry:'s 10ms, then Retry-After's 1s", waits)
	}

	// After the reset, a reconnect resumes from its id.
	srv2 := &sseServer{scripts: []func(http.ResponseWriter, *http.Request){
		sse("event: reset\nid: 9\ndata: {}\n\nretry: 1\n\n"),
		sse(": open\n\n"),
	}}
	hs2 := httptest.NewServer(srv2)
	defer hs2.Close()
	c2, _ := client.New(hs2.URL, client.WithRetryPolicy(fast))
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	for range c2.Stream(ctx2, client.StreamOptions{LastEventID: -12, OnReconnect: func(error, time.Duration) {
		srv2.mu.Lock()
		n := len(srv2.lastIDs)
		srv2.mu.Unlock()
		if n >= 3 {
			cancel2()
		}
	}}) {
	}
	srv2.mu.Lock()
	defer srv2.mu.Unlock()
	if len(srv2.lastIDs) < 3 || srv2.lastIDs[0] != "-12" || srv2.lastIDs[1] != "9" || srv2.lastIDs[2] != "9" {
		t.Fatalf("Last-Event-ID per connection = %q; want -12, then 9", srv2.lastIDs)
	}
}

func TestStreamGivesUp(t *testing.T) {
	// A refusal that retrying cannot mend ends the stream at once.
	srv := &sseServer{scripts: []func(http.ResponseWriter, *http.Request){
		func(w http.ResponseWriter, r *http.Request) {
			answer(401, `{"error":{"code":"unauthorized","message":"no"}}`)(w)
		},
	}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c, _ := client.New(hs.URL, client.WithRetryPolicy(fast))
	n := 0
	for _, err := range c.Stream(context.Background(), client.StreamOptions{}) {
		n++
		if !is(err, 401, client.CodeUnauthorized) {
			t.Fatalf("err = %v; want 401", err)
		}
	}
	if n != 1 {
		t.Fatalf("%d yields; want the one error", n)
	}

	// Failures past MaxFailures end it too, with the last one.
	var fails []func(http.ResponseWriter, *http.Request)
	for range 3 {
		fails = append(fails, func(w http.ResponseWriter, r *http.Request) {
			answer(503, `{"error":{"code":"unavailable","message":"full"}}`)(w)
		})
	}
	srv2 := &sseServer{scripts: fails}
	hs2 := httptest.NewServer(srv2)
	defer hs2.Close()
	c2, _ := client.New(hs2.URL, client.WithRetryPolicy(fast))
	for _, err := range c2.Stream(context.Background(), client.StreamOptions{MaxFailures: 2}) {
		if !is(err, 503, client.CodeUnavailable) {
			t.Fatalf("err = %v; want the 503", err)
		}
	}
	if len(srv2.lastIDs) != 3 {
		t.Fatalf("%d connections; want 3 (the first and two retries)", len(srv2.lastIDs))
	}

	// A stream that goes silent is cut and reconnected.
	srv3 := &sseServer{}
	hs3 := httptest.NewServer(srv3)
	defer hs3.Close()
	c3, _ := client.New(hs3.URL, client.WithRetryPolicy(fast))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var why error
	for range c3.Stream(ctx, client.StreamOptions{IdleTimeout: 100 * time.Millisecond, OnReconnect: func(err error, _ time.Duration) {
		why = err
		cancel()
	}}) {
	}
	if why == nil {
		t.Fatal("a silent stream was not reconnected")
	}
}
