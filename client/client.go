package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Client calls one feedd as one principal: the admin, a user, or nobody
// (the health routes). It is safe for concurrent use; WithToken derives
// clients that share its connections.
type Client struct {
	base  string
	token string
	*shared
}

// shared is what clients derived with WithToken have in common.
type shared struct {
	http  *http.Client
	retry RetryPolicy
	agent string
	// noAutoKey stops CreatePost from making up idempotency keys.
	noAutoKey bool
	bodies    sync.Pool // *bytes.Buffer: answers are read into recycled buffers
}

// RetryPolicy bounds the retries of calls that are safe to repeat (GET,
// PUT, DELETE, and POST with an Idempotency-Key) after a 429 or 503 answer,
// a 409 idempotency_key_in_flight, or a failed connection. The wait is the
// answer's Retry-After when it has one, else an exponential backoff from
// MinBackoff to MaxBackoff with jitter. A wait that would outlast the
// call's context deadline is not started: the call fails at once.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt: 1 never retries.
	MaxAttempts int
	MinBackoff  time.Duration
	MaxBackoff  time.Duration
}

// DefaultRetryPolicy is the policy of a new Client: 4 attempts, waits
// from 100 ms to 5 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}
}

// Option configures New.
type Option func(*Client)

// WithToken sets the bearer token: the admin token or a user token.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient sets the http.Client calls go through (its Transport,
// Timeout, Jar). The live stream uses it without its Timeout, which would
// end every stream.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithRetryPolicy replaces DefaultRetryPolicy().
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithoutAutoIdempotencyKeys stops CreatePost from making up an
// Idempotency-Key when its params carry none: such creates are then never
// retried, and the server keeps no key for them (a load generator that
// measures the bare publish wants that).
func WithoutAutoIdempotencyKeys() Option { return func(c *Client) { c.noAutoKey = true } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.agent = ua } }

// New returns a client of the feedd at baseURL (e.g.
// "http://127.0.0.1:8080").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port]", baseURL)
	}
	c := &Client{
		base: strings.TrimRight(baseURL, "/"),
		shared: &shared{
			http:  &http.Client{Timeout: 30 * time.Second},
			retry: DefaultRetryPolicy(),
			agent: "feedd-go-client",
		},
	}
	c.bodies.New = func() any { return new(bytes.Buffer) }
	for _, o := range opts {
		o(c)
	}
	if c.retry.MaxAttempts < 1 {
		c.retry.MaxAttempts = 1
	}
	return c, nil
}

// WithToken returns a client that calls as token and shares c's
// connections and settings: an admin client derives one per user.
func (c *Client) WithToken(token string) *Client {
	d := *c
	d.token = token
	return &d
}

// BaseURL is the URL the client was created with, without a trailing slash.
func (c *Client) BaseURL() string { return c.base }

// NewIdempotencyKey returns a random key for the Idempotency-Key header.
func NewIdempotencyKey() string { return crand.Text() }

// request is one API call.
type request struct {
	method, path string
	query        string        // the query string, without '?'
	body         any           // sent as JSON when not nil
	idemKey      string        // the Idempotency-Key header; makes a POST retryable
	want         int           // the success status
	out          any           // the answer's JSON is decoded into it when not nil
	raw          *[]byte       // the answer's bytes are copied into it when not nil
	into         *bytes.Buffer // the answer's bytes are read into it instead of a pooled buffer
	header       map[string]string
	noRetry      bool
	// idempotent makes a POST without Idempotency-Key retryable: its
	// replay ends in the same state (FollowBatch).
	idempotent bool
}

// retryable reports whether the call may be sent again without risk of
// doing twice what was asked.
func (r *request) retryable() bool {
	if r.noRetry {
		return false
	}
	switch r.method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPost:
		return r.idemKey != "" || r.idempotent
	}
	return false
}

// call sends r, retrying as the policy allows, and decodes the answer.
func (c *Client) call(ctx context.Context, r request) error {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("client: %s %s: encode body: %w", r.method, r.path, err)
		}
	}
	return c.attempts(ctx, &r, func() error { return c.once(ctx, &r, body) })
}

// attempts runs one attempt of r, and more as the policy allows while r is
// retryable and the answers are worth another.
func (c *Client) attempts(ctx context.Context, r *request, once func() error) error {
	for attempt := 1; ; attempt++ {
		err := once()
		if err == nil || !r.retryable() || attempt >= c.retry.MaxAttempts {
			return err
		}
		wait, ok := c.retryWait(err, attempt)
		if !ok {
			return err
		}
		if d, has := ctx.Deadline(); has && time.Until(d) < wait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// retryWait returns how long to wait before another attempt after err,
// and whether err is worth one.
func (c *Client) retryWait(err error, attempt int) (time.Duration, bool) {
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Status == http.StatusTooManyRequests, e.Status == http.StatusServiceUnavailable,
			e.Code == CodeIdempotencyKeyInFlight:
		default:
			return 0, false
		}
		if e.RetryAfter > 0 {
			return e.RetryAfter, true
		}
	} else if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errDecode) {
		return 0, false
	}
	return backoff(c.retry, attempt), true
}

// backoff is the wait before attempt+1: MinBackoff doubled per attempt up
// to MaxBackoff, of which a random half to all, so that clients refused
// together do not come back together.
func backoff(p RetryPolicy, attempt int) time.Duration {
	d := p.MinBackoff << min(attempt-1, 20)
	if d > p.MaxBackoff || d <= 0 {
		d = p.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// errDecode marks an answer that arrived but did not decode: sending the
// call again would not help.
var errDecode = errors.New("client: decode answer")

// once sends one attempt of r.
func (c *Client) once(ctx context.Context, r *request, body []byte) error {
	res, err := c.send(ctx, c.http, r, body)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	buf := r.into
	if buf == nil {
		buf = c.bodies.Get().(*bytes.Buffer)
		defer func() {
			if buf.Cap() <= 1<<20 { // a rare huge answer is left to the GC
				c.bodies.Put(buf)
			}
		}()
	}
	buf.Reset()
	if _, err := buf.ReadFrom(res.Body); err != nil {
		return fmt.Errorf("client: %s %s: read answer: %w", r.method, r.path, err)
	}
	if res.StatusCode != r.want {
		e := parseError(r.method, r.path, res, buf.Bytes())
		if r.raw != nil {
			e.body = append([]byte(nil), buf.Bytes()...)
		}
		return e
	}
	if r.raw != nil {
		*r.raw = append((*r.raw)[:0], buf.Bytes()...)
	}
	if r.out != nil {
		if err := json.Unmarshal(buf.Bytes(), r.out); err != nil {
			return fmt.Errorf("%w: %s %s: %w", errDecode, r.method, r.path, err)
		}
	}
	return nil
}

// send sends one attempt of r through hc and returns the answer unread.
func (c *Client) send(ctx context.Context, hc *http.Client, r *request, body []byte) (*http.Response, error) {
	u := c.base + r.path
	if r.query != "" {
		u += "?" + r.query
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	c.header(req.Header)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.idemKey != "" {
		req.Header.Set("Idempotency-Key", r.idemKey)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	return res, nil
}

func (c *Client) header(h http.Header) {
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	if c.agent != "" {
		h.Set("User-Agent", c.agent)
	}
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// pathf builds a path of literal parts and ids: pathf("/v1/users/", id,
// "/posts").
func pathf(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			b.WriteString(v)
		case ID:
			b.WriteString(v.String())
		}
	}
	return b.String()
}

// query is the page's query string, written out: url.Values would cost
// a map per page read.
func (p PageParams) query() string {
	var q string
	if p.Limit != 0 {
		q = "limit=" + strconv.Itoa(p.Limit)
	}
	if p.Cursor != "" {
		if q != "" {
			q += "&"
		}
		q += "cursor=" + url.QueryEscape(p.Cursor)
	}
	if p.order != "" {
		if q != "" {
			q += "&"
		}
		q += "order=" + p.order
	}
	return q
}
