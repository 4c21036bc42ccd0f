package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/stream"
)

// BenchmarkStreamMemory measures what an idle open stream holds in the
// serving process: N real streams over loopback to the real handler (each
// reader following 20 authors, hidden set read at open, no mutes or
// blocks), then the heap and goroutine stacks after a GC, less what the
// process held before, per stream. The clients are bare TCP connections in
// the same process that read the stream's first line and then nothing: no
// goroutine, no buffer; their sockets are the few hundred bytes of the
// figure that are not the server's.
//
//	go test -run XXX -bench StreamMemory -benchtime 1x ./internal/httpapi
func BenchmarkStreamMemory(b *testing.B) {
	const n = 2000
	for b.Loop() {
		heap, stack := idleStreamBytes(b, n)
		b.ReportMetric(float64(heap+stack)/n, "B/stream")
		b.ReportMetric(float64(heap)/n, "heap-B/stream")
		b.ReportMetric(float64(stack)/n, "stack-B/stream")
	}
}

// idleStreamBytes opens n idle streams and returns the heap and stack
// bytes the process gained with them.
func idleStreamBytes(b testing.TB, n int) (heap, stack int64) {
	b.Helper()
	svc := newFakeService(testNow)
	svc.seedUser(alice, "alice")
	// Each reader follows alice and 19 of 5,000 other authors, as an
	// ordinary reader of the bench's graph follows tens: what the hub
	// keeps per stream grows with them.
	const authors, following = 5000, 19
	for k := range authors {
		svc.seedUser(int64(200_000+k), fmt.Sprintf("author%d", k))
	}
	for i := range n {
		u := int64(100_000 + i)
		svc.seedUser(u, fmt.Sprintf("reader%d", i))
		svc.seedFollow(u, alice)
		for k := range following {
			svc.seedFollow(u, int64(200_000+(i*following+k)%authors))
		}
	}
	cache := inmemcache.New(inmemcache.Options{})
	defer cache.Close()
	hub := stream.New(nil, stream.Config{Max: n + 1, Heartbeat: time.Hour}, cache, svc.followeesOf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go hub.Run(ctx)
	srv := httptest.NewServer(NewServer(slog.New(slog.DiscardHandler), Config{
		JWTSecret: []byte(testSecret),
		Now:       func() time.Time { return testNow },
		Live:      &Live{Hub: hub, Tickets: cache},
	}, svc, svc, nil, nil))
	defer srv.Close()
	defer hub.Shutdown() // before srv.Close, which waits for the streams
	addr := strings.TrimPrefix(srv.URL, "http://")
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = userToken(b, int64(100_000+i))
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	before := settledMem()
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET /v1/me/feed/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, tokens[i])
		// Read up to the stream's first comment: the stream is then open
		// and its hidden set read. The reader is dropped: the client
		// holds no buffer from here on.
		r := bufio.NewReaderSize(c, 256)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				b.Fatalf("stream %d: %v", i, err)
			}
			if i == 0 && strings.HasPrefix(line, "HTTP/") && !strings.Contains(line, " 200 ") {
				b.Fatalf("stream %d: %s", i, line)
			}
			if strings.Contains(line, ": open") {
				break
			}
		}
	}
	if got := hub.Len(); got != n {
		b.Fatalf("%d streams open; want %d", got, n)
	}
	// Give every handler time to reach its idle wait (past loadHidden).
	time.Sleep(200 * time.Millisecond)
	after := settledMem()
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), int64(after.StackInuse) - int64(before.StackInuse)
}

// settledMem returns the memory statistics after two full collections
// (the second frees what the first's finalizers released).
func settledMem() runtime.MemStats {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}
