package load

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/progress"
)

// pace is an open-loop load: clients that together offer rate requests
// per second for dur.
type pace struct {
	clients int
	rate    float64 // requests per second, offered
	dur     time.Duration
	// grace is how long after dur requests that fell behind are still
	// sent; the ones still waiting then are given up (late).
	grace  time.Duration
	maxReq int64
}

// paceResult is what a paced run measured.
type paceResult struct {
	h *report.Histogram // latency of every request from its due time, late ones included
	// sent requests, of them failed; late: due but never sent.
	sent, errs, late, items int64
	elapsed                 time.Duration // from the start to the last answer
}

// paced offers p.rate requests per second from p.clients goroutines, open
// loop: request k is due at start + k/rate, whatever became of the ones
// before it. A client takes the next request, waits for its due time and
// sends it; when every client is busy, due requests queue. Each request's
// latency runs from its due time, not from when a client got round to
// sending it, so a slow answer shows in the latency of every request
// queued behind it — closed-loop clients, which send a request only when
// the last one came back, hide exactly that (coordinated omission). The
// wait of a request includes this process's own timer and scheduling
// delays, which on a loaded machine are part of what is measured.
//
// A request that could not be sent within p.grace after the end is given
// up, and counts in the histogram with the time it had waited by then (a
// lower bound) and as late. Only answers without error count as items.
func paced(ctx context.Context, p pace, bar *progress.Bar, f func(ctx context.Context, worker int, i int64) (items int, err error)) paceResult {
	total := int64(p.rate * p.dur.Seconds())
	if p.maxReq > 0 {
		total = min(total, p.maxReq)
	}
	interval := float64(time.Second) / p.rate
	var next, sent, nerr, late, nitems atomic.Int64
	hists := make([]*report.Histogram, p.clients)
	start := time.Now()
	giveUp := start.Add(p.dur + p.grace)
	var wg sync.WaitGroup
	for w := range p.clients {
		hists[w] = &report.Histogram{}
		wg.Go(func() {
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for ctx.Err() == nil {
				k := next.Add(1) - 1
				if k >= total {
					return
				}
				due := start.Add(time.Duration(float64(k) * interval))
				if wait := time.Until(due); wait > 0 {
					timer.Reset(wait)
					select {
					case <-timer.C:
					case <-ctx.Done():
						return
					}
				} else if now := time.Now(); now.After(giveUp) {
					late.Add(1)
					hists[w].Record(now.Sub(due))
					continue
				}
				sent.Add(1)
				n, err := f(ctx, w, k)
				if err != nil {
					nerr.Add(1)
					continue
				}
				hists[w].Record(time.Since(due))
				nitems.Add(int64(n))
				if bar != nil {
					bar.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res := paceResult{h: &report.Histogram{}, sent: sent.Load(), errs: nerr.Load(), late: late.Load(), items: nitems.Load(), elapsed: time.Since(start)}
	for _, x := range hists {
		res.h.Merge(x)
	}
	return res
}

// readPaced reads the cohort's feeds again with the same clients, now
// offering a fixed rate: ReadPacedFraction of the baseline's requests/s.
// The closed-loop run measures feedd at saturation, where latency is
// mostly queueing: 32 clients that always have a request out and get R
// answers a second see 32/R s per request on average (Little's law). A
// latency target such as "p99 at 32 clients at 30% of the baseline's
// rate" is measured at that rate. Without
// a baseline (no Redis) there is no rate to offer, and no paced run.
func (r *runner) readPaced(ctx context.Context, m *modelRun, co graph.Cohort, res *report.ReadResult, toks []string) error {
	if r.o.ReadPacedFraction <= 0 || res.ReadBaselineRPS <= 0 {
		return nil
	}
	rate := r.o.ReadPacedFraction * res.ReadBaselineRPS
	if rate > res.ReadRPS {
		// Above the closed loop's rate the run would only measure the
		// queue it builds, and the SQL its backlog left running would
		// still slow the next cohort down.
		res.ReadPacedSkipped = fmt.Sprintf("%.0f/s to offer is above the %.0f/s the closed loop answered", rate, res.ReadRPS)
		r.logf("   read %s paced: not run: %s", co.Name, res.ReadPacedSkipped)
		return nil
	}
	p := pace{
		clients: r.o.Concurrency,
		rate:    rate,
		dur:     r.o.Duration,
		grace:   r.o.Duration / 2,
		maxReq:  r.o.MaxRequests,
	}
	res.ReadPacedRPSTarget = p.rate
	bufs := make([]bytes.Buffer, p.clients)
	bar := progress.New(r.o.Progress, "paced "+co.Name, int64(p.rate*p.dur.Seconds()))
	pr := paced(ctx, p, bar, func(ctx context.Context, w int, i int64) (int, error) {
		return m.cl.feedRaw(ctx, toks[int(i)%len(toks)], &bufs[w])
	})
	bar.Done()
	ok := pr.sent - pr.errs
	res.ReadPacedRequests, res.ReadPacedErrors, res.ReadPacedLate = pr.sent, pr.errs, pr.late
	if pr.elapsed > 0 {
		res.ReadPacedRPS = float64(ok) / pr.elapsed.Seconds()
	}
	res.ReadPacedP50MS, res.ReadPacedP99MS = ms(pr.h.Quantile(0.50)), ms(pr.h.Quantile(0.99))
	res.PacedHistogram = pr.h.Bins(10)
	r.logf("   read %s paced: %.0f/s offered (%.2f of the baseline), %.0f/s answered, p50 %.2f ms p99 %.2f ms, %d late",
		co.Name, p.rate, r.o.ReadPacedFraction, res.ReadPacedRPS, res.ReadPacedP50MS, res.ReadPacedP99MS, pr.late)
	if pr.errs > 0 {
		return fmt.Errorf("%d of %d paced reads failed", pr.errs, pr.sent)
	}
	return nil
}
