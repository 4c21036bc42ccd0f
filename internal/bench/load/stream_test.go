package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/progress"
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

	before := time.Now().UnixNano()
	c := &streamClient{host: u.Host}
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
		if ev.at < before || ev.at > time.Now().UnixNano() {
			t.Errorf("event %d timed at %d; want between the test's start %d and now", ev.id, ev.at, before)
		}
	}
	if !slices.Equal(ids, []int64{5, 7}) {
		t.Errorf("recorded posts %v; want [5 7] (no delete, ping or reset)", ids)
	}
}

// TestStreamReaders runs the stream readers as bench does, a child
// process speaking JSON lines (this test binary, which TestMain runs as
// the readers), against a server of three streams of which
// one refuses its token: the child reports the two open and the one
// failed, counts the events as they come, and on the stop sends each
// open stream's posts, timed on the wall clock bench reads too.
func TestStreamReaders(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, `{"error":{"code":"unauthorized","message":"no"}}`, http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": open\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "event: post\nid: 5\ndata: {}\n\nevent: post\nid: 7\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rd, err := startStreamReaders(os.Args[0], nil,
		append(os.Environ(), "FEEDD_TEST_STREAM_READERS_CHILD=1"), filepath.Join(t.TempDir(), "readers.log"),
		u.Host, []string{"tok", "wrong", "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.kill()
	bar := progress.New(io.Discard, "open", 3)
	op, err := rd.waitOpen(ctx, bar)
	bar.Done()
	if err != nil {
		t.Fatal(err)
	}
	if op.Opened != 2 || !slices.Equal(op.Failed, []int{1}) || !strings.Contains(op.FirstError, "401") {
		t.Fatalf("open: %d opened, failed %v (%q); want 2, [1] and a 401", op.Opened, op.Failed, op.FirstError)
	}
	before := time.Now().UnixNano()
	close(release)
	for rd.events.Load() < 4 && rd.alive() && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	if n := rd.events.Load(); n != 4 {
		t.Fatalf("the readers counted %d events; want 4", n)
	}
	streams, err := rd.stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(streams) != 2 {
		t.Fatalf("events of streams %v; want of 0 and 2", streams)
	}
	for _, i := range []int{0, 2} {
		var ids []int64
		for _, ev := range streams[i] {
			ids = append(ids, ev.id)
			if ev.at < before || ev.at > time.Now().UnixNano() {
				t.Errorf("stream %d: event %d timed at %d; want between the release %d and now", i, ev.id, ev.at, before)
			}
		}
		if !slices.Equal(ids, []int64{5, 7}) {
			t.Errorf("stream %d: posts %v; want [5 7]", i, ids)
		}
	}
}
