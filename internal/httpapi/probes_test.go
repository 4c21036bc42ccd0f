package httpapi

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
)

// pingCounter is a dependency that counts its pings and how many ran at
// once at most; each ping waits for gate (nil: none).
type pingCounter struct {
	gate           chan struct{}
	pings, running atomic.Int64
	maxConcurrent  atomic.Int64
}

func (p *pingCounter) ping(ctx context.Context) []feed.Check {
	p.pings.Add(1)
	n := p.running.Add(1)
	defer p.running.Add(-1)
	for {
		m := p.maxConcurrent.Load()
		if n <= m || p.maxConcurrent.CompareAndSwap(m, n) {
			break
		}
	}
	if p.gate != nil {
		<-p.gate
	}
	return []feed.Check{{Name: "sql", Required: true}}
}

// TestReadinessPingsOncePerSecond: many concurrent calls share one ping,
// and its answer stands for a second.
func TestReadinessPingsOncePerSecond(t *testing.T) {
	clk := feedtest.NewClock(testNow)
	dep := &pingCounter{gate: make(chan struct{})}
	rd := newReadiness(dep.ping, clk.Now)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if c := rd.checks(context.Background()); len(c) != 1 || c[0].Err != nil {
				t.Errorf("checks = %+v; want sql ok", c)
			}
		})
	}
	for dep.pings.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the other callers line up behind the ping
	close(dep.gate)
	wg.Wait()
	if n := dep.pings.Load(); n != 1 {
		t.Fatalf("%d pings for 50 concurrent calls; want 1", n)
	}
	clk.Add(999 * time.Millisecond)
	rd.checks(context.Background())
	if n := dep.pings.Load(); n != 1 {
		t.Fatalf("%d pings within the second; want 1", n)
	}
	clk.Add(time.Millisecond)
	rd.checks(context.Background())
	if n := dep.pings.Load(); n != 2 {
		t.Fatalf("%d pings a second after the first; want 2", n)
	}
	if m := dep.maxConcurrent.Load(); m != 1 {
		t.Fatalf("%d pings at once; want 1", m)
	}
}

// checkedService reports its dependencies through dep, as the timeline does.
type checkedService struct {
	*fakeService
	dep *pingCounter
}

func (s checkedService) Checks(ctx context.Context) []feed.Check { return s.dep.ping(ctx) }

// TestReadyzUnderLoad: /readyz called by many clients at once, over HTTP,
// pings the backends at most once a second, one ping at a time.
func TestReadyzUnderLoad(t *testing.T) {
	dep := &pingCounter{}
	base, _ := newGuardedEnv(t, checkedService{seeded(), dep}, func(*Config) {})
	start := time.Now()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 10 {
				if r := doHTTP(t, base, req{method: "GET", path: "/readyz"}); r.status != http.StatusOK {
					t.Errorf("readyz = %d %s; want 200", r.status, r.body)
				}
			}
		})
	}
	wg.Wait()
	seconds := int64(time.Since(start) / time.Second)
	if n := dep.pings.Load(); n < 1 || n > 1+seconds {
		t.Fatalf("%d pings for 200 calls over %d whole seconds; want at most one a second", n, seconds)
	}
	if m := dep.maxConcurrent.Load(); m != 1 {
		t.Fatalf("%d pings at once; want 1", m)
	}
}
