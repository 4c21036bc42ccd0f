package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// refuser is a loopback server that refuses the first n requests with
// status (and Retry-After when set), then answers ok; it records each
// request's method and Idempotency-Key.
type refuser struct {
	mu         sync.Mutex
	n          int
	status     int
	retryAfter string
	ok         func(w http.ResponseWriter)
	seen       []string // "METHOD key"
	at         []time.Time
}

func (f *refuser) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.Header.Get("Idempotency-Key"))
	f.at = append(f.at, time.Now())
	refuse := len(f.seen) <= f.n
	f.mu.Unlock()
	if refuse {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		code := "rate_limited"
		if f.status == http.StatusServiceUnavailable {
			code = "unavailable"
		}
		_, _ = w.Write([]byte(`{"error":{"code":"` + code + `","message":"come back later"}}`))
		return
	}
	f.ok(w)
}

func (f *refuser) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func answer(status int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

const postJSON = `{"id":"-7","author_id":"3","content":"hi","created_at":"2024-05-01T10:00:00.000Z","like_count":0,"liked_by_me":false}`

func newTestClient(t *testing.T, h http.Handler, p client.RetryPolicy) *client.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithToken("tok"), client.WithRetryPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var fast = client.RetryPolicy{MaxAttempts: 4, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

func TestRetryHonoursRetryAfter(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			f := &refuser{n: 1, status: status, retryAfter: "1", ok: answer(200, postJSON)}
			c := newTestClient(t, f, fast)
			start := time.Now()
			p, err := c.GetPost(context.Background(), -7)
			if err != nil || p.ID != -7 || p.AuthorID != 3 {
				t.Fatalf("GetPost = %+v, %v; want post -7 after one retry", p, err)
			}
			if n := len(f.requests()); n != 2 {
				t.Fatalf("%d requests; want 2", n)
			}
			// The backoff alone is at most 5 ms: a wait of a second is
			// Retry-After's.
			if waited := f.at[1].Sub(f.at[0]); waited < 900*time.Millisecond || time.Since(start) > 5*time.Second {
				t.Fatalf("retried after %v; want Retry-After's 1s", waited)
			}
		})
	}
}

func TestRetryHTTPDate(t *testing.T) {
	f := &refuser{n: 1, status: 503, retryAfter: time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat), ok: answer(204, "")}
	c := newTestClient(t, f, fast)
	if err := c.Follow(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	// An HTTP date has whole seconds: the wait is over 1 s.
	if waited := f.at[1].Sub(f.at[0]); waited < time.Second {
		t.Fatalf("retried after %v; want until the Retry-After date", waited)
	}
}

func TestRetrySafeCallsOnly(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		call    func(c *client.Client) error
		retried bool
	}{
		{"GET", func(c *client.Client) error { _, err := c.GetUser(ctx, 1); return err }, true},
		{"PUT", func(c *client.Client) error { return c.Follow(ctx, 1) }, true},
		{"DELETE", func(c *client.Client) error { return c.DeletePost(ctx, 1) }, true},
		{"POST with an idempotency key", func(c *client.Client) error {
			_, err := c.CreatePost(ctx, client.CreatePostParams{Content: "x", IdempotencyKey: "k1"})
			return err
		}, true},
		{"POST of a post, its key made up", func(c *client.Client) error {
			_, err := c.CreatePost(ctx, client.CreatePostParams{Content: "x"})
			return err
		}, true},
		{"POST without a key", func(c *client.Client) error {
			_, err := c.CreateUser(ctx, client.CreateUserParams{Name: "x"})
			return err
		}, false},
		{"POST of a token", func(c *client.Client) error { _, err := c.CreateToken(ctx, 1, 0); return err }, false},
		// A follow batch sets each pair to a state: replayed, it ends the same.
		{"follow batch, a POST replayed safely", func(c *client.Client) error {
			_, err := c.FollowBatch(ctx, client.FollowBatchParams{Follow: []client.Pair{{FollowerID: 1, FolloweeID: 2}}})
			return err
		}, true},
		{"POST of a requeue", func(c *client.Client) error { _, err := c.RequeueDeadLetters(ctx, ""); return err }, false},
		{"GET of an export", func(c *client.Client) error {
			body, err := c.Export(ctx, 1)
			if err == nil {
				body.Close()
			}
			return err
		}, true},
		{"PATCH", func(c *client.Client) error {
			s := "x"
			_, err := c.EditPost(ctx, 1, client.EditPostParams{Content: &s})
			return err
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &refuser{n: 100, status: 503, retryAfter: "0", ok: answer(200, "{}")}
			c := newTestClient(t, f, fast)
			err := tc.call(c)
			var e *client.Error
			if !errors.As(err, &e) || e.Status != 503 || e.Code != client.CodeUnavailable || e.Message != "come back later" {
				t.Fatalf("err = %v; want the last 503 as *client.Error", err)
			}
			want := 1
			if tc.retried {
				want = fast.MaxAttempts
			}
			seen := f.requests()
			if len(seen) != want {
				t.Fatalf("%d attempts (%v); want %d", len(seen), seen, want)
			}
			// A retried POST carries one key on every attempt.
			for _, s := range seen[1:] {
				if s != seen[0] {
					t.Fatalf("attempts %v differ; want one idempotency key throughout", seen)
				}
			}
			if strings.HasPrefix(tc.name, "POST") && tc.retried && strings.HasSuffix(seen[0], "POST ") {
				t.Fatalf("attempt %q has no Idempotency-Key", seen[0])
			}
		})
	}
}

func TestRetryStopsAtTheDeadline(t *testing.T) {
	f := &refuser{n: 100, status: 429, retryAfter: "30", ok: answer(200, "{}")}
	c := newTestClient(t, f, fast)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.GetUser(ctx, 1)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 429 || e.RetryAfter != 30*time.Second {
		t.Fatalf("err = %v; want the 429 with its Retry-After", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("returned after %v; a wait past the deadline must not start", d)
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d requests; want 1", n)
	}

	// A context cancelled during the wait ends it.
	f2 := &refuser{n: 100, status: 503, ok: answer(200, "{}")}
	slow := newTestClient(t, f2, client.RetryPolicy{MaxAttempts: 10, MinBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second})
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel2)
	start = time.Now()
	if _, err := slow.GetUser(ctx2, 1); client.ErrorCode(err) != client.CodeUnavailable {
		t.Fatalf("err = %v; want the 503", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("returned %v after; want soon after the cancel", d)
	}
}

func TestRetryOtherErrorsNot(t *testing.T) {
	f := &refuser{n: 100, status: 404, ok: answer(200, "{}")}
	c := newTestClient(t, f, fast)
	if _, err := c.GetUser(context.Background(), 1); err == nil {
		t.Fatal("want an error")
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("a 404 was sent %d times; want 1", n)
	}
}

func TestRetryConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, _ := client.New(url, client.WithRetryPolicy(fast))
	_, err := c.GetUser(context.Background(), 1)
	var e *client.Error
	if err == nil || errors.As(err, &e) {
		t.Fatalf("err = %v; want a connection error, not an API error", err)
	}
}

func TestErrorOfAProxy(t *testing.T) {
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>bad gateway</html>"))
	}), client.RetryPolicy{MaxAttempts: 1})
	_, err := c.GetUser(context.Background(), 1)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 502 || e.Code != "" || !strings.Contains(e.Message, "bad gateway") {
		t.Fatalf("err = %#v; want a 502 with the body as message", err)
	}
}

func TestErrorDetails(t *testing.T) {
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(409, `{"error":{"code":"external_id_exists","message":"taken","post_id":"-42"}}`)(w)
	}), fast)
	_, err := c.CreatePost(context.Background(), client.CreatePostParams{Content: "x", ExternalID: "blog-1"})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != client.CodeExternalIDExists {
		t.Fatalf("err = %v; want external_id_exists", err)
	}
	if id, ok := e.ExistingPostID(); !ok || id != -42 {
		t.Fatalf("ExistingPostID = %d, %v; want -42", id, ok)
	}
}

// TestExportCutOff: an export the server cuts off before its final chunk
// (reading failed part-way) is an error, never a shorter document.
func TestExportCutOff(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write([]byte(`{"kind":"user","id":"1","name":"a"}` + "\n"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	c := newTestClient(t, h, fast)
	var kinds []string
	var last error
	for line, err := range c.ExportLines(context.Background(), 1) {
		if err != nil {
			last = err
			break
		}
		kinds = append(kinds, line.Kind)
	}
	if !errors.Is(last, io.ErrUnexpectedEOF) || len(kinds) != 1 || kinds[0] != client.ExportUser {
		t.Fatalf("lines %v, then %v; want the user line, then io.ErrUnexpectedEOF", kinds, last)
	}
}
