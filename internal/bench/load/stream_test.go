package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestStreamClientReadsPosts serves a stream the way feedd frames it —
// chunked, an opening comment, pings, a delete, and posts whose data line
// is longer than the client's buffer — and checks that the light client
// records exactly the posts, in order, and sends the token as a header.
func TestStreamClientReadsPosts(t *testing.T) {
	long := strings.Repeat("x", 5000) // past the 2 KiB line buffer
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/me/feed/stream" || r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, `{"error":{"code":"unauthorized","message":"no"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		send := func(s string) {
			fmt.Fprint(w, s)
			w.(http.Flusher).Flush()
		}
		send(": open\n\n")
		<-release
		send("event: post\nid: 5\ndata: {\"id\":\"5\",\"content\":\"" + long + "\"}\n\n")
		send(": ping\n\n")
		send("event: delete\ndata: {\"id\":\"5\"}\n\n")
		send("event: post\nid: 7\ndata: {\"id\":\"7\"}\n\n")
		send("event: reset\nid: 9\ndata: {}\n\n")
		<-r.Context().Done()
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c := &streamClient{host: u.Host, origin: time.Now()}
	if _, err := c.open(ctx, "wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("open with a wrong token: %v; want a 401 error", err)
	}
	s, err := c.open(ctx, "tok")
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	for c.events.Load() < 2 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	c.closeAll() // waits for the reader: s.events is the test's now
	var ids []int64
	for _, ev := range s.events {
		ids = append(ids, ev.id)
		if ev.at <= 0 {
			t.Errorf("event %d timed at %v; want after the origin", ev.id, ev.at)
		}
	}
	if !slices.Equal(ids, []int64{5, 7}) {
		t.Errorf("recorded posts %v; want [5 7] (no delete, ping or reset)", ids)
	}
}
