package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/progress"
)

// client is bench's side of feedd's HTTP API: package client, with the
// admin token, a transport sized for the load's concurrency, no retries
// (a refusal is a figure of the run, not something to hide) and no
// made-up idempotency keys (the publish measured is the bare one).
type client struct {
	api  *fclient.Client
	http *http.Client
}

func newClient(base, admin string, conns int) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = conns * 2
	tr.MaxIdleConnsPerHost = conns * 2
	tr.MaxConnsPerHost = 0
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	api, err := fclient.New(base, fclient.WithToken(admin), fclient.WithHTTPClient(hc),
		fclient.WithRetryPolicy(fclient.RetryPolicy{MaxAttempts: 1}), fclient.WithoutAutoIdempotencyKeys(),
		fclient.WithUserAgent("feedd-bench"))
	if err != nil {
		// Every base comes from a child's "listening on" line or the
		// --url flag, which Run checks first: a bad one is a bug.
		panic(fmt.Sprintf("bench: %v", err))
	}
	return &client{api: api, http: hc}
}

func (c *client) close() { c.http.CloseIdleConnections() }

// as is the client acting with token.
func (c *client) as(token string) *fclient.Client { return c.api.WithToken(token) }

// ready polls /readyz until it answers 200, or fails after within.
func (c *client) ready(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		if _, last = c.api.Ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("feedd at %s not ready within %v: %w", c.api.BaseURL(), within, last)
}

func (c *client) user(ctx context.Context, token, id string) (fclient.User, error) {
	uid, err := fclient.ParseID(id)
	if err != nil {
		return fclient.User{}, err
	}
	return c.as(token).GetUser(ctx, uid)
}

// token mints a user token with the admin token.
func (c *client) token(ctx context.Context, id string, ttl time.Duration) (string, error) {
	uid, err := fclient.ParseID(id)
	if err != nil {
		return "", err
	}
	t, err := c.api.CreateToken(ctx, uid, ttl)
	return t.Token, err
}

// post publishes and returns the new post's id.
func (c *client) post(ctx context.Context, token, content string) (int64, error) {
	p, err := c.as(token).CreatePost(ctx, fclient.CreatePostParams{Content: content})
	return int64(p.ID), err
}

func (c *client) follow(ctx context.Context, token, id string) error {
	uid, err := fclient.ParseID(id)
	if err != nil {
		return err
	}
	return c.as(token).Follow(ctx, uid)
}

func (c *client) deletePost(ctx context.Context, token string, id int64) error {
	err := c.as(token).DeletePost(ctx, fclient.ID(id))
	if fclient.ErrorCode(err) == fclient.CodeNotFound {
		return nil
	}
	return err
}

// feedPage reads the first page of a home feed, decoded.
func (c *client) feedPage(ctx context.Context, token string, limit int) ([]fclient.Post, error) {
	pg, err := c.as(token).FeedPage(ctx, fclient.PageParams{Limit: limit})
	return pg.Items, err
}

// feedRaw reads a first page of 20 into buf without decoding it: the
// bench client shares the machine with what it measures, so it does as
// little as it can (BenchmarkFeedRead compares it with a decoded page).
// It counts the page's items by their "author_id" fields.
func (c *client) feedRaw(ctx context.Context, token string, buf *bytes.Buffer) (int, error) {
	if err := c.as(token).FeedPageRaw(ctx, fclient.PageParams{Limit: 20}, buf); err != nil {
		return 0, err
	}
	return bytes.Count(buf.Bytes(), []byte(`"author_id"`)), nil
}

// feedRawAt reads a page of 20 of the latest (ranked false) or the ranked
// home feed from cursor into buf, undecoded, and returns its items' count
// and its next cursor ("" for none), cut from the bytes.
func (c *client) feedRawAt(ctx context.Context, token string, ranked bool, cursor string, buf *bytes.Buffer) (int, string, error) {
	p := fclient.PageParams{Limit: 20, Cursor: cursor}
	var err error
	if ranked {
		err = c.as(token).RankedFeedPageRaw(ctx, p, buf)
	} else {
		err = c.as(token).FeedPageRaw(ctx, p, buf)
	}
	if err != nil {
		return 0, "", err
	}
	return bytes.Count(buf.Bytes(), []byte(`"author_id"`)), nextCursor(buf.Bytes()), nil
}

// listRawAt reads a page of 20 of a list's feed from cursor into buf,
// undecoded, as feedRawAt does for the home feed.
func (c *client) listRawAt(ctx context.Context, token string, list fclient.ID, cursor string, buf *bytes.Buffer) (int, string, error) {
	if err := c.as(token).ListFeedPageRaw(ctx, list, fclient.PageParams{Limit: 20, Cursor: cursor}, buf); err != nil {
		return 0, "", err
	}
	return bytes.Count(buf.Bytes(), []byte(`"author_id"`)), nextCursor(buf.Bytes()), nil
}

// nextCursor cuts a page's next_cursor from its bytes ("" for null).
func nextCursor(b []byte) string {
	const key = `"next_cursor":"`
	if i := bytes.LastIndex(b, []byte(key)); i >= 0 {
		rest := b[i+len(key):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			return string(rest[:j])
		}
	}
	return ""
}

// followers pages through every follower id of user, 100 a request.
func (c *client) followers(ctx context.Context, token, user string, progress *progress.Bar) ([]int64, error) {
	uid, err := fclient.ParseID(user)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for u, err := range c.as(token).Followers(ctx, uid, fclient.PageParams{Limit: 100}) {
		if err != nil {
			return nil, err
		}
		ids = append(ids, int64(u.ID))
		if progress != nil {
			progress.Add(1)
		}
	}
	return ids, nil
}

// metrics scrapes /metrics.
func (c *client) metrics(ctx context.Context) (scrape, error) {
	raw, err := c.api.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(bytes.NewReader(raw))
}

// drain GETs a URL and reads its answer to the end, for its side effect.
func (c *client) drain(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", url, res.StatusCode)
	}
	return nil
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
