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

// ranked measures the ranked home feed against the latest one, per cohort:
// each client reads, for one reader after another, the latest feed's
// first page and the page after it, then the ranked feed's first page and
// the page after it, so that the two feeds are read under the same load in
// the same seconds.
func (r *runner) ranked(ctx context.Context, m *modelRun) (map[string]*report.RankedResult, error) {
	return perCohort(ctx, r, m, r.rankedCohort)
}

// The four pages of a round.
const (
	latestFirst = iota
	latestNext
	rankedFirst
	rankedNext
	pageKinds
)

func (r *runner) rankedCohort(ctx context.Context, m *modelRun, co graph.Cohort) (*report.RankedResult, error) {
	toks, err := r.tokensFor(ctx, m, co.Readers)
	if err != nil {
		return nil, err
	}
	// Warm up: a latest page per reader, unmeasured (it may rebuild an
	// inbox, which the read scenario measures, not this one), then a
	// ranked first page per reader, which gathers the reader's candidates
	// (pool.go in internal/ranked): its latency is the cold figure.
	err = forEach(ctx, r.o.Concurrency, len(toks), func(ctx context.Context, i int) error {
		_, err := m.cl.feedPage(ctx, toks[i], 20)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	var cold report.Histogram
	var buf0 bytes.Buffer
	for _, tok := range toks {
		t := time.Now()
		if _, _, err := m.cl.feedRawAt(ctx, tok, true, "", &buf0); err != nil {
			return nil, fmt.Errorf("warm-up: a ranked first page: %w", err)
		}
		cold.Record(time.Since(t))
	}
	res := &report.RankedResult{Following: co.Following, Celebrities: co.Celebrities, Readers: len(toks), Concurrency: r.o.Concurrency}
	hists := make([][pageKinds]report.Histogram, r.o.Concurrency)
	var rounds, nerr, rankedItems atomic.Int64
	bar := progress.New(r.o.Progress, "ranked "+co.Name, 0)
	start := time.Now()
	deadline := start.Add(r.o.Duration)
	var wg sync.WaitGroup
	for w := range r.o.Concurrency {
		wg.Go(func() {
			var buf bytes.Buffer
			page := func(kind int, tok string, ranked bool, cursor string) (int, string, bool) {
				t := time.Now()
				n, next, err := m.cl.feedRawAt(ctx, tok, ranked, cursor, &buf)
				if err != nil {
					nerr.Add(1)
					return 0, "", false
				}
				hists[w][kind].Record(time.Since(t))
				return n, next, true
			}
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := rounds.Add(1)
				if i > r.o.MaxRequests/pageKinds {
					rounds.Add(-1)
					return
				}
				tok := toks[int(i)%len(toks)]
				if _, next, ok := page(latestFirst, tok, false, ""); ok && next != "" {
					page(latestNext, tok, false, next)
				}
				n, next, ok := page(rankedFirst, tok, true, "")
				rankedItems.Add(int64(n))
				if ok && next != "" {
					page(rankedNext, tok, true, next)
				}
				bar.Add(1)
			}
		})
	}
	wg.Wait()
	bar.Done()
	var h [pageKinds]report.Histogram
	for w := range hists {
		for k := range h {
			h[k].Merge(&hists[w][k])
		}
	}
	res.DurationSeconds = time.Since(start).Seconds()
	res.Rounds, res.Errors = rounds.Load(), nerr.Load()
	if res.Rounds > 0 {
		res.RankedItemsPerPage = float64(rankedItems.Load()) / float64(res.Rounds)
	}
	res.LatestFirstP50MS, res.LatestFirstP99MS = ms(h[latestFirst].Quantile(0.5)), ms(h[latestFirst].Quantile(0.99))
	res.LatestNextP50MS, res.LatestNextP99MS = ms(h[latestNext].Quantile(0.5)), ms(h[latestNext].Quantile(0.99))
	res.RankedFirstP50MS, res.RankedFirstP99MS = ms(h[rankedFirst].Quantile(0.5)), ms(h[rankedFirst].Quantile(0.99))
	res.RankedNextP50MS, res.RankedNextP99MS = ms(h[rankedNext].Quantile(0.5)), ms(h[rankedNext].Quantile(0.99))
	res.RankedColdP50MS, res.RankedColdP99MS = ms(cold.Quantile(0.5)), ms(cold.Quantile(0.99))
	r.logf("   ranked %s: first page p99 %.2f ms (latest %.2f), next page p99 %.2f ms (latest %.2f), cold first page p99 %.2f ms, %d rounds, %d errors",
		co.Name, res.RankedFirstP99MS, res.LatestFirstP99MS, res.RankedNextP99MS, res.LatestNextP99MS, res.RankedColdP99MS, res.Rounds, res.Errors)
	if res.Errors > 0 && res.Rounds == 0 {
		return res, fmt.Errorf("every one of %d reads failed", res.Errors)
	}
	return res, nil
}
