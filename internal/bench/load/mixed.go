package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed"
)

// ScenarioMixed is the mixed load: a production-like blend of requests by
// many users (mostly feed reads, some likes, follows and posts, in the
// shares of report.MixedOps), held for --duration, to show that feedd
// under a realistic load answers no 5xx and holds its memory flat. It is
// not in AllScenarios (the default run), only run when named: --scenarios
// mixed.
const ScenarioMixed = "mixed"

// mixed runs the mixed load for o.Duration with o.Concurrency clients,
// each request by a random user of the manifest's sample.
func (r *runner) mixed(ctx context.Context, m *modelRun) (*report.MixedResult, error) {
	users := r.o.Manifest.SampleUsers
	if len(users) < 2 {
		return nil, errors.New("the graph lists fewer than 2 sample users (bench graph --sample-users)")
	}
	r.logf("== %s mixed: minting %d user tokens", m.name, len(users))
	toks, err := r.tokensFor(ctx, m, users)
	if err != nil {
		return nil, err
	}
	res := &report.MixedResult{
		Concurrency: r.o.Concurrency, Users: len(users), Ops: map[string]*report.MixedOp{},
		LikesAs: "read", ErrorSamples: []string{},
	}
	conc := r.o.Concurrency
	workers := make([]*mixedWorker, conc)
	var (
		nreq, n5xx, n429, nother atomic.Int64
		samplesMu                sync.Mutex
	)
	fail := func(w *mixedWorker, op string, err error) {
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.status >= 500:
			n5xx.Add(1)
			w.errs5[op]++
		case errors.As(err, &ae) && ae.status == http.StatusTooManyRequests:
			n429.Add(1)
			return
		default:
			nother.Add(1)
		}
		samplesMu.Lock()
		if len(res.ErrorSamples) < 5 {
			res.ErrorSamples = append(res.ErrorSamples, fmt.Sprintf("%s: %v", op, err))
		}
		samplesMu.Unlock()
	}

	// The process's resident memory, every second, from its /metrics.
	start := time.Now()
	deadline := start.Add(r.o.Duration)
	loadCtx, cancel := context.WithDeadline(ctx, deadline.Add(30*time.Second))
	defer cancel()
	var rssMu sync.Mutex
	var sampler sync.WaitGroup
	samplerCtx, stopSampler := context.WithCancel(loadCtx)
	sampler.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if s, err := m.cl.metrics(samplerCtx); err == nil {
				if v := s.sum("process_resident_memory_bytes"); v > 0 {
					rssMu.Lock()
					res.RSS = append(res.RSS, [2]float64{time.Since(start).Seconds(), v / (1 << 20)})
					rssMu.Unlock()
				}
			}
			select {
			case <-samplerCtx.Done():
				return
			case <-tick.C:
			}
			if n := nreq.Load(); time.Since(start) > 0 && int(time.Since(start).Seconds())%10 == 0 {
				rssMu.Lock()
				rss := 0.0
				if len(res.RSS) > 0 {
					rss = res.RSS[len(res.RSS)-1][1]
				}
				rssMu.Unlock()
				r.logf("   mixed %s: %3.0fs, %d requests (%.0f/s), %d 5xx, rss %.0f MiB",
					m.name, time.Since(start).Seconds(), n, float64(n)/time.Since(start).Seconds(), n5xx.Load(), rss)
			}
		}
	})

	var wg sync.WaitGroup
	for i := range conc {
		w := &mixedWorker{hist: map[string]*report.Histogram{}, errs5: map[string]int64{}}
		for _, op := range report.MixedOps {
			w.hist[op.Name] = &report.Histogram{}
		}
		workers[i] = w
		rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
		wg.Go(func() {
			for loadCtx.Err() == nil && time.Now().Before(deadline) {
				u := rng.IntN(len(users))
				op := pickOp(rng.IntN(100))
				t := time.Now()
				var err error
				switch op {
				case "read":
					err = r.mixedRead(loadCtx, m, toks[u], w.remember)
				case "like":
					err = r.mixedLike(loadCtx, m, toks[u], w.recent, rng, w.remember)
				case "follow":
					v := rng.IntN(len(users))
					if v == u {
						v = (v + 1) % len(users)
					}
					err = m.cl.do(loadCtx, "PUT", "/v1/me/following/"+users[v], toks[u], nil, nil, http.StatusNoContent)
				case "post":
					var id int64
					id, err = m.cl.post(loadCtx, toks[u], "mixed load "+feed.FormatID(int64(rng.Uint32())))
					if err == nil {
						w.posts = append(w.posts, createdPost{id: id, author: users[u]})
					}
				}
				nreq.Add(1)
				if err != nil {
					fail(w, op, err)
					continue
				}
				w.hist[op].Record(time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopSampler()
	sampler.Wait()

	all := &report.Histogram{}
	for _, w := range workers {
		m.created = append(m.created, w.posts...) // deleted at teardown
		for _, op := range report.MixedOps {
			o := res.Ops[op.Name]
			if o == nil {
				o = &report.MixedOp{}
				res.Ops[op.Name] = o
			}
			o.Status5xx += w.errs5[op.Name]
		}
	}
	for _, op := range report.MixedOps {
		h := &report.Histogram{}
		for _, w := range workers {
			h.Merge(w.hist[op.Name])
		}
		all.Merge(h)
		o := res.Ops[op.Name]
		o.Requests = int64(h.Count()) + o.Status5xx
		o.P50MS, o.P99MS = ms(h.Quantile(.5)), ms(h.Quantile(.99))
	}
	res.Seconds = elapsed.Seconds()
	res.Requests = nreq.Load()
	res.RPS = float64(res.Requests) / elapsed.Seconds()
	res.P50MS, res.P99MS, res.MaxMS = ms(all.Quantile(.5)), ms(all.Quantile(.99)), ms(all.Max())
	res.Status5xx, res.Status429, res.OtherErrors = n5xx.Load(), n429.Load(), nother.Load()
	rssTrend(res)
	if res.LikesAs == "read" {
		r.note(fmt.Sprintf("%s mixed: feedd has no likes yet; the 7%% like share was served as feed reads", m.name))
	}
	var errs []error
	if res.Status5xx > 0 {
		errs = append(errs, fmt.Errorf("%d answers were 5xx, e.g. %v", res.Status5xx, res.ErrorSamples))
	}
	if !res.RSSFlat && len(res.RSS) >= 8 {
		errs = append(errs, fmt.Errorf("resident memory grew by %.1f MiB between the second and the last quarter of the run", res.RSSGrowthMB))
	}
	return res, errors.Join(errs...)
}

func pickOp(p int) string {
	for _, op := range report.MixedOps {
		if p < op.Share {
			return op.Name
		}
		p -= op.Share
	}
	return report.MixedOps[0].Name
}

// mixedWorker is one client of the mixed load; only its goroutine touches
// it until the load ends.
type mixedWorker struct {
	hist   map[string]*report.Histogram
	errs5  map[string]int64
	recent []int64 // post ids the worker's reads saw: what a like picks from
	posts  []createdPost
}

// remember keeps the last 64 post ids a read saw.
func (w *mixedWorker) remember(ids []int64) {
	w.recent = append(w.recent, ids...)
	if over := len(w.recent) - 64; over > 0 {
		w.recent = slices.Delete(w.recent, 0, over)
	}
}

// mixedRead reads the first page of a home feed and hands the post ids it
// saw to seen.
func (r *runner) mixedRead(ctx context.Context, m *modelRun, token string, seen func([]int64)) error {
	posts, err := m.cl.feedPage(ctx, token, 20)
	if err != nil || seen == nil {
		return err
	}
	ids := make([]int64, 0, len(posts))
	for _, p := range posts {
		if id, err := feed.ParsePostID(p.ID); err == nil {
			ids = append(ids, id)
		}
	}
	seen(ids)
	return nil
}

// mixedLike is the like share of the mixed load. feedd has no likes yet,
// so it reads instead (report.MixedResult.LikesAs says "read"). When the likes
// routes exist, this is the one place to wire them: like a post from
// recent (ids this worker's reads returned, so they exist) with the likes
// route, and set LikesAs to "like" where the result is built.
func (r *runner) mixedLike(ctx context.Context, m *modelRun, token string, recent []int64, rng *rand.Rand, seen func([]int64)) error {
	_ = recent
	_ = rng
	return r.mixedRead(ctx, m, token, seen)
}

// rssTrend summarises the RSS samples: start, end, max and the growth from
// the second quarter (after warm-up) to the last.
func rssTrend(res *report.MixedResult) {
	n := len(res.RSS)
	if n == 0 {
		return
	}
	res.RSSStartMB, res.RSSEndMB = res.RSS[0][1], res.RSS[n-1][1]
	median := func(s [][2]float64) float64 {
		v := make([]float64, len(s))
		for i, x := range s {
			v[i] = x[1]
			res.RSSMaxMB = max(res.RSSMaxMB, x[1])
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	median(res.RSS)
	if n < 8 {
		res.RSSFlat = true // too short to tell
		return
	}
	q2, q4 := median(res.RSS[n/4:n/2]), median(res.RSS[3*n/4:])
	res.RSSGrowthMB = q4 - q2
	res.RSSFlat = res.RSSGrowthMB <= max(0.10*q2, 16)
}
