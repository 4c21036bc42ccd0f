package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/limit"
	"github.com/feedd/feedd/internal/testenv"
)

// slowPost opens a connection to base and sends the headers of a post of
// 100 bytes as user, then only its first byte.
func slowPost(t *testing.T, base string, user int64) net.Conn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_, err = io.WriteString(c, "POST /v1/posts HTTP/1.1\r\nHost: feedd\r\nAuthorization: Bearer "+userToken(t, user)+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSlowBodies: a request whose body trickles in holds none of the
// write slots everyone shares, counts against its user's own bound on
// requests in flight, and is answered 408, connection closed, once the
// body deadline passes.
func TestSlowBodies(t *testing.T) {
	slots := limit.NewUserSlots(2)
	base, _ := newGuardedEnv(t, seeded(), func(c *Config) {
		c.BodyTimeout = 2 * time.Second
		c.UserSlots = slots
		// One write slot, no wait: a slow body holding it would make
		// every other write 503.
		c.Shed = limit.NewShedder(map[limit.Class]int{limit.Write: 1}, time.Millisecond)
	})
	slow := []net.Conn{slowPost(t, base, alice), slowPost(t, base, alice)}
	testenv.Eventually(t, 5*time.Second, "both slow posts in flight", func() bool { return slots.InFlight(alice) == 2 })

	// Others write while alice's bodies trickle.
	for range 3 {
		wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/posts", token: userToken(t, bob), body: `{"content":"hi"}`}), http.StatusCreated)
	}
	// Alice is at her bound: refused at once, even a read.
	for _, r := range []req{
		{method: "POST", path: "/v1/posts", token: userToken(t, alice), body: `{"content":"hi"}`},
		{method: "GET", path: "/v1/me/feed", token: userToken(t, alice)},
	} {
		got := doHTTP(t, base, r)
		wantStatus(t, got, http.StatusTooManyRequests)
		if got.errorCode(t) != feed.ERATELIMIT || got.header.Get("Retry-After") == "" {
			t.Errorf("%s %s over the bound: %s (Retry-After %q); want rate_limited with Retry-After", r.method, r.path, got.body, got.header.Get("Retry-After"))
		}
	}

	for i, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("slow post %d: no answer: %v", i, err)
		}
		var body errorJSON
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout || body.Error.Code != "request_timeout" {
			t.Errorf("slow post %d: %d %+v; want 408 request_timeout", i, res.StatusCode, body)
		}
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("slow post %d: after the 408 the connection reads %v; want it closed (EOF)", i, err)
		}
	}
	if n := slots.InFlight(alice); n != 0 {
		t.Fatalf("alice holds %d slots after her slow posts were answered; want 0", n)
	}
	wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/posts", token: userToken(t, alice), body: `{"content":"on time"}`}), http.StatusCreated)
	if m := metricsText(t, base); !strings.Contains(m, `feedd_rate_limited_total{class="write",scope="inflight"} 1`) {
		t.Errorf("metrics lack the in-flight refusal:\n%s", grep(m, "feedd_rate_limited"))
	}
}

// slowPublisher takes its time over a publish, as a real one may when a
// backend is slow, and fails if the request's context ends meanwhile.
type slowPublisher struct {
	*fakeService
	d time.Duration
}

func (s slowPublisher) Publish(ctx context.Context, author int64, d feed.Draft, idem feed.Idempotency) (feed.Post, error) {
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
		return feed.Post{}, feed.Errorf(feed.EUNAVAILABLE, "context ended: %v", ctx.Err())
	}
	return s.fakeService.Publish(ctx, author, d, idem)
}

// TestBodyDeadlineEndsWithTheBody: the body deadline bounds the body, not
// the handler; a request whose body arrived on time may take longer.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	const timeout = 100 * time.Millisecond
	base, _ := newGuardedEnv(t, slowPublisher{seeded(), 4 * timeout}, func(c *Config) { c.BodyTimeout = timeout })
	wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/posts", token: userToken(t, alice), body: `{"content":"hi"}`}), http.StatusCreated)
	// Nor does it touch a request of the same connection that has no body.
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: userToken(t, alice)}), http.StatusOK)
}
