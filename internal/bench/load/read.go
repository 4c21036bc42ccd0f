package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
	"github.com/feedd/feedd/internal/rediscache"
)

// load runs f on conc goroutines until dur has passed or maxReq calls were
// made, and returns the latencies of the calls that succeeded.
func load(ctx context.Context, conc int, dur time.Duration, maxReq int64, bar *progress.Bar, f func(ctx context.Context, worker int, i int64) (items int, err error)) (h *report.Histogram, reqs, errs, items int64, elapsed time.Duration) {
	var nreq, nerr, nitems atomic.Int64
	hists := make([]*report.Histogram, conc)
	start := time.Now()
	deadline := start.Add(dur)
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(30*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for w := range conc {
		hists[w] = &report.Histogram{}
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := nreq.Add(1)
				if i > maxReq {
					nreq.Add(-1)
					return
				}
				t := time.Now()
				n, err := f(ctx, w, i)
				if err != nil {
					nerr.Add(1)
					continue
				}
				hists[w].Record(time.Since(t))
				nitems.Add(int64(n))
				if bar != nil {
					bar.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	h = &report.Histogram{}
	for _, x := range hists {
		h.Merge(x)
	}
	return h, nreq.Load(), nerr.Load(), nitems.Load(), elapsed
}

// read measures home-feed pages per cohort, and the same Redis reads
// issued directly as the baseline.
func (r *runner) read(ctx context.Context, m *modelRun) (map[string]*report.ReadResult, error) {
	return perCohort(ctx, r, m, r.readCohort)
}

// perCohort runs one measurement per reader cohort of the graph and
// collects the results by cohort name, and every cohort's error.
func perCohort[T any](ctx context.Context, r *runner, m *modelRun, measure func(context.Context, *modelRun, graph.Cohort) (*T, error)) (map[string]*T, error) {
	if len(r.o.Manifest.Cohorts) == 0 {
		return nil, errors.New("the graph has no reader cohorts")
	}
	out := map[string]*T{}
	var errs []error
	for _, co := range r.o.Manifest.Cohorts {
		res, err := measure(ctx, m, co)
		if res != nil {
			out[co.Name] = res
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", co.Name, err))
		}
	}
	return out, errors.Join(errs...)
}

func (r *runner) readCohort(ctx context.Context, m *modelRun, co graph.Cohort) (*report.ReadResult, error) {
	toks, err := r.tokensFor(ctx, m, co.Readers)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(co.Readers))
	for i, s := range co.Readers {
		if ids[i], err = feed.ParseID(s); err != nil {
			return nil, err
		}
	}
	// Warm up: one page per reader, unmeasured (it may rebuild an inbox);
	// the pages seed the baseline.
	pages := make([][]fclient.Post, len(toks))
	err = forEach(ctx, r.o.Concurrency, len(toks), func(ctx context.Context, i int) error {
		var err error
		pages[i], err = m.cl.feedPage(ctx, toks[i], 20)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}

	res := &report.ReadResult{Following: co.Following, Celebrities: co.Celebrities, Readers: len(co.Readers), Concurrency: r.o.Concurrency}
	before, _ := r.metrics(ctx, m)
	bufs := make([]bytes.Buffer, r.o.Concurrency)
	bar := progress.New(r.o.Progress, "read "+co.Name, 0)
	h, reqs, nerr, items, el := load(ctx, r.o.Concurrency, r.o.Duration, r.o.MaxRequests, bar, func(ctx context.Context, w int, i int64) (int, error) {
		return m.cl.feedRaw(ctx, toks[int(i)%len(toks)], &bufs[w])
	})
	bar.Done()
	after, _ := r.metrics(ctx, m)
	res.DurationSeconds = el.Seconds()
	res.Requests, res.Errors = reqs, nerr
	ok := reqs - nerr
	res.ReadRPS = float64(ok) / el.Seconds()
	res.ReadP50MS, res.ReadP99MS = ms(h.Quantile(0.50)), ms(h.Quantile(0.99))
	res.ReadMeanMS, res.ReadMaxMS = ms(h.Mean()), ms(h.Max())
	if ok > 0 {
		res.ItemsPerPage = float64(items) / float64(ok)
	}
	res.Histogram = h.Bins(10)
	res.Paths = map[string]float64{}
	if before != nil && after != nil {
		b := before.byLabel("feedd_feed_reads_total")
		for k, v := range after.byLabel("feedd_feed_reads_total") {
			res.Paths[k] = v - b[k]
		}
	}
	if nerr > 0 && ok == 0 {
		return res, fmt.Errorf("every one of %d reads failed", nerr)
	}

	if r.rdb != nil {
		if err := r.readBaseline(ctx, res, ids, pages); err != nil {
			return res, fmt.Errorf("baseline: %w", err)
		}
	}
	if r.o.ReadFloor && r.o.Exe != "" {
		var page bytes.Buffer
		if _, err := m.cl.feedRaw(ctx, toks[0], &page); err != nil {
			return res, fmt.Errorf("floor: a page to serve: %w", err)
		}
		if err := r.readFloor(ctx, res, co.Name, page.Bytes()); err != nil {
			return res, fmt.Errorf("floor: %w", err)
		}
	}
	r.logf("   read %s: %.0f/s p50 %.2f ms p99 %.2f ms; baseline %.0f/s p99 %.2f ms; HTTP floor %.0f/s p99 %.2f ms",
		co.Name, res.ReadRPS, res.ReadP50MS, res.ReadP99MS, res.ReadBaselineRPS, res.ReadBaselineP99MS, res.ReadFloorRPS, res.ReadFloorP99MS)
	if err := r.readPaced(ctx, m, co, res, toks); err != nil {
		return res, fmt.Errorf("paced: %w", err)
	}
	if nerr > 0 {
		return res, fmt.Errorf("%d of %d reads failed", nerr, reqs)
	}
	return res, nil
}

// readBaseline copies each reader's first page into keys of bench's own,
// in feedd's layout (rediscache: the inbox and the cached posts), and
// reads them back the way an inbox hit does: InboxPage(reader, 0, 20),
// then CachedPosts of its ids — two round trips, MULTI{ZSCORE, ZRANGE}
// and a pipeline of 20 GETs — at the same concurrency.
func (r *runner) readBaseline(ctx context.Context, res *report.ReadResult, readers []int64, pages [][]fclient.Post) error {
	prefix := r.o.RunPrefix + "readbase-" + r.tag + ":"
	c := rediscache.New(r.rdb, rediscache.Options{Prefix: prefix, InboxMax: r.o.InboxMax})
	defer func() { _, _ = deletePrefix(context.WithoutCancel(ctx), r.rdb, prefix) }()
	for i, pg := range pages {
		posts := make([]feed.Post, 0, len(pg))
		ids := make([]int64, 0, len(pg))
		for _, p := range pg {
			posts = append(posts, feed.Post{ID: int64(p.ID), AuthorID: int64(p.AuthorID), Content: p.Content, CreatedAt: p.CreatedAt})
			ids = append(ids, int64(p.ID))
		}
		if err := c.FillInbox(ctx, readers[i], ids, true, time.Hour); err != nil {
			return err
		}
		if err := c.CachePosts(ctx, posts, time.Hour); err != nil {
			return err
		}
	}
	h, reqs, nerr, _, el := load(ctx, r.o.Concurrency, r.o.BaselineDuration, r.o.MaxRequests, nil, func(ctx context.Context, _ int, i int64) (int, error) {
		pg, err := c.InboxPage(ctx, readers[int(i)%len(readers)], 0, 20)
		if err != nil {
			return 0, err
		}
		got, err := c.CachedPosts(ctx, pg.IDs)
		return len(got), err
	})
	if nerr > 0 {
		return fmt.Errorf("%d of %d baseline reads failed", nerr, reqs)
	}
	res.ReadBaselineRPS = float64(reqs) / el.Seconds()
	res.ReadBaselineP50MS, res.ReadBaselineP99MS = ms(h.Quantile(0.50)), ms(h.Quantile(0.99))
	res.BaselineHistogram = h.Bins(10)
	if res.ReadBaselineRPS > 0 {
		res.ReadVsBaseline = res.ReadRPS / res.ReadBaselineRPS
	}
	return nil
}
