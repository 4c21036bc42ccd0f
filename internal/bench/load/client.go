package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed"
)

// client speaks feedd's HTTP API: the few calls bench needs, nothing else.
type client struct {
	base  string
	admin string
	http  *http.Client
}

func newClient(base, admin string, conns int) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conns * 2
	tr.MaxIdleConnsPerHost = conns * 2
	tr.MaxConnsPerHost = 0
	return &client{
		base:  strings.TrimRight(base, "/"),
		admin: admin,
		http:  &http.Client{Transport: tr, Timeout: 30 * time.Second},
	}
}

func (c *client) close() { c.http.CloseIdleConnections() }

// apiError is a non-2xx answer.
type apiError struct {
	method, path string
	status       int
	body         string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.method, e.path, e.status, strings.TrimSpace(e.body))
}

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (when not nil); any status but want is an *apiError.
func (c *client) do(ctx context.Context, method, path, token string, body, out any, want int) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if res.StatusCode != want {
		return &apiError{method: method, path: path, status: res.StatusCode, body: string(raw[:min(len(raw), 300)])}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

// ready polls /readyz until it answers 200, or fails after within.
func (c *client) ready(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		last = c.do(ctx, "GET", "/readyz", "", nil, nil, http.StatusOK)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("feedd at %s not ready within %v: %w", c.base, within, last)
}

type apiUser struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	FollowerCount  int64  `json:"follower_count"`
	FollowingCount int64  `json:"following_count"`
	DeliveryMode   string `json:"delivery_mode"`
}

func (c *client) user(ctx context.Context, token, id string) (apiUser, error) {
	var u apiUser
	err := c.do(ctx, "GET", "/v1/users/"+id, token, nil, &u, http.StatusOK)
	return u, err
}

// token mints a user token with the admin token.
func (c *client) token(ctx context.Context, id string, ttl time.Duration) (string, error) {
	var out struct {
		Token string `json:"token"`
	}
	err := c.do(ctx, "POST", "/v1/users/"+id+"/tokens", c.admin, map[string]any{"ttl_seconds": int64(ttl.Seconds())}, &out, http.StatusCreated)
	return out.Token, err
}

// post publishes and returns the new post's id.
func (c *client) post(ctx context.Context, token, content string) (int64, error) {
	var out struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, "POST", "/v1/posts", token, map[string]string{"content": content}, &out, http.StatusCreated); err != nil {
		return 0, err
	}
	return feed.ParsePostID(out.ID)
}

func (c *client) deletePost(ctx context.Context, token string, id int64) error {
	err := c.do(ctx, "DELETE", "/v1/posts/"+feed.FormatID(id), token, nil, nil, http.StatusNoContent)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusNotFound {
		return nil
	}
	return err
}

// apiPost is a post of a page, as much of it as bench looks at.
type apiPost struct {
	ID        string `json:"id"`
	AuthorID  string `json:"author_id"`
	Content   string `json:"content"`
	CreatedAt string `json:"created_at"`
}

// feedPage reads the first page of a home feed.
func (c *client) feedPage(ctx context.Context, token string, limit int) ([]apiPost, error) {
	var out struct {
		Items []apiPost `json:"items"`
	}
	err := c.do(ctx, "GET", fmt.Sprintf("/v1/me/feed?limit=%d", limit), token, nil, &out, http.StatusOK)
	return out.Items, err
}

// followers pages through every follower id of user, 100 a request.
func (c *client) followers(ctx context.Context, token, user string, progress *report.Progress) ([]int64, error) {
	var ids []int64
	cursor := ""
	for pages := 0; ; pages++ {
		var out struct {
			Items      []apiUser `json:"items"`
			NextCursor *string   `json:"next_cursor"`
		}
		path := "/v1/users/" + user + "/followers?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := c.do(ctx, "GET", path, token, nil, &out, http.StatusOK); err != nil {
			return nil, err
		}
		for _, u := range out.Items {
			id, err := feed.ParseID(u.ID)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		if progress != nil {
			progress.Add(int64(len(out.Items)))
		}
		if out.NextCursor == nil || len(out.Items) == 0 {
			return ids, nil
		}
		cursor = *out.NextCursor
	}
}

// metrics scrapes /metrics.
func (c *client) metrics(ctx context.Context) (scrape, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	// Plain text format, which the parser reads.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: status %d", res.StatusCode)
	}
	return parseMetrics(res.Body)
}

// scrape is one /metrics answer: the value of every counter and gauge
// sample by name and labels, histograms as _count, _sum and _bucket
// samples the way the text format writes them.
type scrape map[string]float64

// parseMetrics reads the Prometheus text format.
func parseMetrics(r io.Reader) (scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	out := scrape{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[key] = m.GetUntyped().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				out[key+"_count"] = float64(h.GetSampleCount())
				out[key+"_sum"] = h.GetSampleSum()
			}
		}
	}
	return out, nil
}

// sum adds every sample of a metric name, across its labels.
func (s scrape) sum(name string) float64 {
	var t float64
	for k, v := range s {
		if k == name || strings.HasPrefix(k, name+"{") {
			t += v
		}
	}
	return t
}

// byLabel returns the samples of name by the value of its one label.
func (s scrape) byLabel(name string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		rest, ok := strings.CutPrefix(k, name+"{")
		if !ok || strings.HasSuffix(k, "_count") || strings.HasSuffix(k, "_sum") {
			continue
		}
		if _, val, ok := strings.Cut(strings.TrimSuffix(rest, "}"), "="); ok {
			out[val] = v
		}
	}
	return out
}
