//go:build unix

package main

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnreadAnswers: two users open 6 connections each with a receive
// buffer of a few KB, ask each for 4 pages of 1.5 MB at once (pipelined),
// and read nothing: more than the kernels buffer, so each connection ends
// stuck writing an answer. With FEEDD_MAX_INFLIGHT_READS=4, every other
// user's feed still answers 200: an answer is written after its read slot
// is given back (the security probe saw 503s for 45 s).
func TestUnreadAnswers(t *testing.T) {
	// A shed wait long enough that no unread request is shed (a shed one
	// is answered in full and leaves its connection idle, not stuck).
	in, _ := runFeedd(t, stacks[0].env(t), "FEEDD_MAX_INFLIGHT_READS", "4", "FEEDD_SHED_WAIT", "5s", "FEEDD_LOG_LEVEL", "error")
	authorID, authorTok := in.user("author")
	_, aTok := in.user("a")
	_, bTok := in.user("b")
	_, readerTok := in.user("reader")
	content := strings.Repeat("€", 5000) // 15 KB
	for range 100 {
		in.must(201, "POST", "/v1/posts", authorTok, map[string]any{"content": content})
	}
	addr := strings.TrimPrefix(in.url, "http://")
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048)
		})
		return errors.Join(err, serr)
	}}
	for _, tok := range []string{aTok, bTok} {
		get := "GET /v1/users/" + authorID + "/posts?limit=100 HTTP/1.1\r\nHost: feedd\r\nAuthorization: Bearer " + tok + "\r\n\r\n"
		for range 6 {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if _, err := io.WriteString(c, strings.Repeat(get, 4)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The unread requests are done once no read slot has been held for a
	// second; slots held by unread answers never come free, and then the
	// wait ends at its bound and the reads below find no slot.
	inflight := func() string {
		return metricValue(string(in.do("GET", "/metrics", "", nil).raw), `feedd_inflight_requests{class="read"}`)
	}
	idleSince := time.Time{}
	for bound := time.Now().Add(20 * time.Second); time.Now().Before(bound); time.Sleep(20 * time.Millisecond) {
		if inflight() != "0" {
			idleSince = time.Time{}
			continue
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		if time.Since(idleSince) > time.Second {
			break
		}
	}
	t.Logf("read slots held: %s", inflight())
	for range 3 {
		if r := in.do("GET", "/v1/me/feed", readerTok, nil); r.status != 200 {
			t.Fatalf("another user's feed beside the unread answers: %d %s; want 200", r.status, r.raw)
		}
	}
}
