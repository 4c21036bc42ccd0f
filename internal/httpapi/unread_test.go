//go:build unix

package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/limit"
)

// countingService counts the author pages it made.
type countingService struct {
	*fakeService
	pages atomic.Int32
}

func (c *countingService) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, bool, error) {
	defer c.pages.Add(1)
	return c.fakeService.AuthorPosts(ctx, author, before, n)
}

// unreadGets opens a connection to base with a receive buffer of a few
// KB, sends n GETs of path as user on it at once (pipelined), and reads
// nothing.
func unreadGets(t *testing.T, base, path string, user int64, n int) net.Conn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048)
		})
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	get := "GET " + path + " HTTP/1.1\r\nHost: feedd\r\nAuthorization: Bearer " + userToken(t, user) + "\r\n\r\n"
	if _, err := io.WriteString(c, strings.Repeat(get, n)); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUnreadAnswersHoldNoSlot: clients that ask for large pages and never
// read the answers (a tiny receive window, more answers than the kernels
// buffer) hold none of the read slots everyone shares: another user's
// feed keeps answering 200. Each unread answer is cut off, its connection
// closed, once the write deadline passes.
func TestUnreadAnswersHoldNoSlot(t *testing.T) {
	const dave int64 = 4
	svc := &countingService{fakeService: seeded()}
	svc.seedUser(dave, "dave")
	big := strings.Repeat("€", feed.MaxContentRunes) // 15 KB
	for range 100 {
		svc.seedPost(dave, big)
	}
	const writeTimeout = time.Second
	// Four read slots, and a wait for one long enough that the unread
	// requests queue rather than shed (even under the race detector, which
	// makes a page slow to render): a shed one would be answered in full
	// and leave its connection idle rather than stuck.
	shed := limit.NewShedder(map[limit.Class]int{limit.Read: 4}, 10*time.Second)
	base, _ := newGuardedEnv(t, svc, func(c *Config) {
		c.UserSlots = limit.NewUserSlots(16)
		c.Shed = shed
		c.WriteTimeout = writeTimeout
	})

	// Two users, 6 connections each, each asking for 4 pages of 1.5 MB:
	// 6 MB a connection, more than loopback's buffers take in.
	const pipelined = 4
	path := "/v1/users/" + feed.FormatID(dave) + "/posts?limit=100"
	var conns []net.Conn
	for _, user := range []int64{alice, carol} {
		for range 6 {
			conns = append(conns, unreadGets(t, base, path, user, pipelined))
		}
	}
	// The unread requests have made all the pages they will once no
	// more are made for a while and no read slot is held: each
	// connection is stuck writing one. Slots held by unread answers
	// never come free: then the wait ends at its bound, and the reads
	// below find no slot.
	var (
		last    int32 = -1
		changed time.Time
	)
	for bound := time.Now().Add(15 * time.Second); time.Now().Before(bound); time.Sleep(10 * time.Millisecond) {
		if n := svc.pages.Load(); n != last {
			last, changed = n, time.Now()
		}
		if time.Since(changed) > 500*time.Millisecond && shed.InFlight(limit.Read) == 0 {
			break
		}
	}
	stuck := time.Now()
	t.Logf("%d pages made for %d connections of %d requests; %d read slots held", last, len(conns), pipelined, shed.InFlight(limit.Read))
	for range 3 {
		wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: userToken(t, bob)}), 200)
	}

	// Past the deadline, each unread answer was cut off: reading now
	// gets what the kernels held of it, then the end.
	time.Sleep(time.Until(stuck.Add(writeTimeout + time.Second)))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.Copy(io.Discard, c)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("unread connection %d: still open %s after it stopped (%d bytes read); want it closed", i, time.Since(stuck).Round(time.Millisecond), n)
			} else if n >= int64(pipelined*100*len(big)) {
				t.Errorf("unread connection %d: %d bytes arrived, every answer in full; want it cut off at the write deadline", i, n)
			}
		})
	}
	wg.Wait()
}

// TestWriteDeadlineLiftedForTheNextRequest: the deadline an answer was
// written under does not outlive it on a kept-alive connection, where a
// later answer made before any route (a 401, a 404) would fail on it
// (net/http lifts it once the answer is out).
func TestWriteDeadlineLiftedForTheNextRequest(t *testing.T) {
	const writeTimeout = 100 * time.Millisecond
	base, _ := newGuardedEnv(t, seeded(), func(c *Config) { c.WriteTimeout = writeTimeout })
	reused := 0
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	for i, r := range []struct {
		path, token string
		want        int
	}{
		{"/v1/me/feed", userToken(t, alice), 200},
		{"/v1/me/feed", "not-a-token", 401},
		{"/v1/nothing-here", "", 404},
		{"/v1/me/feed", userToken(t, bob), 200},
	} {
		if i > 0 {
			time.Sleep(3 * writeTimeout)
		}
		hr, err := http.NewRequest("GET", base+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.token != "" {
			hr.Header.Set("Authorization", "Bearer "+r.token)
		}
		hr = hr.WithContext(httptrace.WithClientTrace(hr.Context(), &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) {
				if ci.Reused {
					reused++
				}
			},
		}))
		res, err := client.Do(hr)
		if err != nil {
			t.Fatalf("GET %s, %s after the last answer: %v; want %d", r.path, 3*writeTimeout, err, r.want)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != r.want {
			t.Fatalf("GET %s: %d; want %d", r.path, res.StatusCode, r.want)
		}
	}
	if reused != 3 {
		t.Fatalf("%d of 3 requests reused the connection; the test needs all to", reused)
	}
}
