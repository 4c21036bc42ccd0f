package load

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/report"
)

// TestPacedRate: clients offer the requested rate, spread over the run
// (not in bursts), whatever their number, when the work keeps up.
func TestPacedRate(t *testing.T) {
	const rate, dur = 400.0, time.Second
	var (
		mu   sync.Mutex
		sent []time.Duration
	)
	start := time.Now()
	res := paced(context.Background(), pace{clients: 8, rate: rate, dur: dur, grace: dur}, nil, func(ctx context.Context, w int, i int64) (int, error) {
		mu.Lock()
		sent = append(sent, time.Since(start))
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return 20, nil
	})
	if res.sent != 400 || res.errs != 0 || res.late != 0 || res.items != 400*20 || res.h.Count() != 400 {
		t.Fatalf("sent %d, errors %d, late %d, items %d, latencies %d; want 400 sent, 8000 items, 400 latencies", res.sent, res.errs, res.late, res.items, res.h.Count())
	}
	if got := float64(res.sent) / res.elapsed.Seconds(); got < 0.85*rate || got > 1.05*rate {
		t.Errorf("achieved %.0f/s over %v; want about %.0f/s", got, res.elapsed, rate)
	}
	// Every tenth of the run carries about a tenth of the requests.
	var per [10]int
	for _, at := range sent {
		per[min(int(at*10/dur), 9)]++
	}
	for i, n := range per {
		if n < 25 || n > 55 {
			t.Errorf("tenth %d of the run sent %d requests; want about 40 (all: %v)", i, n, per)
			break
		}
	}
	// 2 ms of work, sent on time: no request waits long.
	if p50 := res.h.Quantile(0.5); p50 < 2*time.Millisecond || p50 > 20*time.Millisecond {
		t.Errorf("p50 %v; want about the 2 ms of work", p50)
	}
}

// TestPacedSlowRequest: one slow answer delays the requests queued behind
// it, and their latencies, measured from when each was due, show it. A
// closed loop would have counted one slow request.
func TestPacedSlowRequest(t *testing.T) {
	// One client, a request due every 10 ms; request 5 takes 200 ms, so
	// requests 6 to 24 (due at 60..240 ms) are sent at 250 ms, late by
	// 190..10 ms.
	res := paced(context.Background(), pace{clients: 1, rate: 100, dur: 500 * time.Millisecond, grace: time.Second}, nil, func(ctx context.Context, w int, i int64) (int, error) {
		if i == 5 {
			time.Sleep(200 * time.Millisecond)
		}
		return 1, nil
	})
	if res.sent != 50 || res.late != 0 || res.h.Count() != 50 {
		t.Fatalf("sent %d, late %d, latencies %d; want 50, 0, 50", res.sent, res.late, res.h.Count())
	}
	if max := res.h.Max(); max < 195*time.Millisecond {
		t.Errorf("max latency %v; want the slow request's 200 ms", max)
	}
	// The five slowest are the slow request and the four due right after
	// it (190, 180, 170, 160 ms late): the 90th percentile is among them.
	if p90 := res.h.Quantile(0.90); p90 < 140*time.Millisecond {
		t.Errorf("p90 %v; want the requests queued behind the slow one (>= 150 ms)", p90)
	}
	// 30 requests are on time, 20 late by 10 ms or more: the 70th
	// percentile is late. In a closed loop it would be on time.
	if p70 := res.h.Quantile(0.70); p70 < 20*time.Millisecond {
		t.Errorf("p70 %v; want the wait of the requests queued behind the slow one to show", p70)
	}
}

// TestPacedGivesUp: work slower than the offered rate leaves requests
// that are never sent; they are counted as late, with the time they had
// waited when the run gave up, and the run ends soon after the grace.
func TestPacedGivesUp(t *testing.T) {
	start := time.Now()
	res := paced(context.Background(), pace{clients: 2, rate: 200, dur: 200 * time.Millisecond, grace: 100 * time.Millisecond}, nil, func(ctx context.Context, w int, i int64) (int, error) {
		time.Sleep(50 * time.Millisecond) // 40/s for two clients
		return 1, nil
	})
	took := time.Since(start)
	if res.sent+res.late != 40 || res.late == 0 || res.h.Count() != 40 {
		t.Fatalf("sent %d, late %d, latencies %d; want 40 in all, some late", res.sent, res.late, res.h.Count())
	}
	if res.sent > 16 {
		t.Errorf("sent %d in 0.3 s at 40/s; want at most 16", res.sent)
	}
	if took > 600*time.Millisecond {
		t.Errorf("the run took %v; want it to end after the grace (0.3 s) and the requests in flight", took)
	}
	if max := res.h.Max(); max < 100*time.Millisecond {
		t.Errorf("max latency %v; want the late requests' waits", max)
	}
}

// TestPacedStopsWithContext: a cancelled run returns at once.
func TestPacedStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := paced(ctx, pace{clients: 4, rate: 10, dur: time.Minute, grace: time.Minute}, nil, func(ctx context.Context, w int, i int64) (int, error) {
		return 1, nil
	})
	if took := time.Since(start); took > time.Second {
		t.Errorf("a cancelled run took %v", took)
	}
	if res.sent < 1 || res.sent > 3 {
		t.Errorf("sent %d in 0.1 s at 10/s; want 1 to 3", res.sent)
	}
}

// TestNoPacedRunWithoutBaseline: without the Redis baseline there is no
// rate to offer: no paced run (report's TestTargetsWithoutPacedRun checks
// that its target is then not measured).
func TestNoPacedRunWithoutBaseline(t *testing.T) {
	r := &runner{o: DefaultRunOptions()}
	res := &report.ReadResult{ReadRPS: 1000, Requests: 10000, Concurrency: 32}
	if err := r.readPaced(context.Background(), nil, graph.Cohort{Name: "following_500"}, res, nil); err != nil {
		t.Fatal(err)
	}
	if res.ReadPacedRPSTarget != 0 || res.ReadPacedRequests != 0 || res.PacedHistogram != nil {
		t.Errorf("paced run without a baseline: %+v", res)
	}
}

// TestNoPacedRunAboveCapacity checks that a paced run is not made when the
// rate to offer is above what the closed loop answered: it would measure
// only its own queue, and leave SQL running that slows the next cohort.
func TestNoPacedRunAboveCapacity(t *testing.T) {
	r := &runner{o: RunOptions{ReadPacedFraction: 0.3, Concurrency: 4, Duration: time.Second, Progress: io.Discard}, rep: &report.Report{}}
	res := &report.ReadResult{ReadRPS: 100, ReadBaselineRPS: 1000}
	if err := r.readPaced(t.Context(), nil, graph.Cohort{Name: "c"}, res, nil); err != nil {
		t.Fatal(err)
	}
	if res.ReadPacedSkipped == "" || res.ReadPacedRequests != 0 || res.ReadPacedRPSTarget != 0 {
		t.Fatalf("paced run at 300/s above a closed loop of 100/s: skipped %q, %d requests, target %v; want skipped, none, 0",
			res.ReadPacedSkipped, res.ReadPacedRequests, res.ReadPacedRPSTarget)
	}
}
