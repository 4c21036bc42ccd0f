package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	fclient "github.com/feedd/feedd/client"
)

// BenchmarkFeedRead compares, in one run, what reading a page of 20 posts
// costs the bench's side: the raw path bench used before it read through
// package client (a hand-made request, the body copied into a reused
// buffer, never decoded), and the client's three ways to read a page. The
// server answers a fixed page from memory, so the differences are the
// client's.
//
//	go test -run '^$' -bench BenchmarkFeedRead -benchmem -count 8 -benchtime 3000x ./internal/bench/load/
func BenchmarkFeedRead(b *testing.B) {
	page := fixedPage(20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", fmt.Sprint(len(page)))
		_, _ = w.Write(page)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer hc.CloseIdleConnections()
	c, err := fclient.New(srv.URL, fclient.WithHTTPClient(hc), fclient.WithToken("t"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	params := fclient.PageParams{Limit: 20}
	check := func(b *testing.B, n int) {
		if n != 20 {
			b.Fatalf("%d items; want 20", n)
		}
	}

	b.Run("raw-before", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			n, err := rawFeedRead(ctx, hc, srv.URL, "t", &buf)
			if err != nil {
				b.Fatal(err)
			}
			check(b, n)
		}
	})
	b.Run("client-FeedPageRaw", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			if err := c.FeedPageRaw(ctx, params, &buf); err != nil {
				b.Fatal(err)
			}
			check(b, bytes.Count(buf.Bytes(), []byte(`"author_id"`)))
		}
	})
	b.Run("client-FeedPageInto", func(b *testing.B) {
		b.ReportAllocs()
		var pg fclient.Page[fclient.Post]
		for b.Loop() {
			if err := c.FeedPageInto(ctx, params, &pg); err != nil {
				b.Fatal(err)
			}
			check(b, len(pg.Items))
		}
	})
	b.Run("client-FeedPage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pg, err := c.FeedPage(ctx, params)
			if err != nil {
				b.Fatal(err)
			}
			check(b, len(pg.Items))
		}
	})
}

// rawFeedRead is the bench's read before package client: kept here as
// the baseline BenchmarkFeedRead measures the client against.
func rawFeedRead(ctx context.Context, hc *http.Client, base, token string, buf *bytes.Buffer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/me/feed?limit=20", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	buf.Reset()
	if _, err := io.Copy(buf, res.Body); err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /v1/me/feed: status %d", res.StatusCode)
	}
	return bytes.Count(buf.Bytes(), []byte(`"author_id"`)), nil
}

// fixedPage is a page of n posts as feedd writes it.
func fixedPage(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"%d","author_id":"%d","content":"post %d of the bench: a sentence of about the length people write, with some words in it","created_at":"2026-11-24T21:59:18.%03dZ","like_count":%d,"liked_by_me":false}`,
			245220619350666-int64(i)*4096, 245220619239896+int64(i%5), i, i, i*3)
	}
	b.WriteString(`],"next_cursor":"f.245220619272842"}` + "\n")
	return []byte(b.String())
}
