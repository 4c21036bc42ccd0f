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

// The four pages of a round (alternate).
const (
	latestFirst = iota
	latestNext
	otherFirst
	otherNext
	pageKinds
)

// pageFunc reads a page of reader i's other feed from cursor ("": the
// first) into buf, and returns its items and its next cursor.
type pageFunc func(ctx context.Context, i int, cursor string, buf *bytes.Buffer) (items int, next string, err error)

// alternation is what alternate measured.
type alternation struct {
	hists                 [pageKinds]report.Histogram
	rounds, errors        int64
	seconds, itemsPerPage float64 // itemsPerPage: of the other feed's first pages
}

// p is the p50 and p99 of one of the four pages, in ms.
func (a *alternation) p(kind int) (p50, p99 float64) {
	return ms(a.hists[kind].Quantile(0.5)), ms(a.hists[kind].Quantile(0.99))
}

// alternate has each of --concurrency clients take one reader after
// another (toks) for --duration and read, for each, the latest home
// feed's first page and the page after it, then the other feed's (other)
// first page and the page after it: the two feeds read under the same load
// in the same seconds.
func (r *runner) alternate(ctx context.Context, m *modelRun, name string, toks []string, other pageFunc) *alternation {
	hists := make([][pageKinds]report.Histogram, r.o.Concurrency)
	var rounds, nerr, items atomic.Int64
	bar := progress.New(r.o.Progress, name, 0)
	start := time.Now()
	deadline := start.Add(r.o.Duration)
	var wg sync.WaitGroup
	for w := range r.o.Concurrency {
		wg.Go(func() {
			var buf bytes.Buffer
			page := func(kind int, read func() (int, string, error)) (int, string, bool) {
				t := time.Now()
				n, next, err := read()
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
				k := int(i) % len(toks)
				latest := func(cursor string) func() (int, string, error) {
					return func() (int, string, error) { return m.cl.feedRawAt(ctx, toks[k], false, cursor, &buf) }
				}
				theirs := func(cursor string) func() (int, string, error) {
					return func() (int, string, error) { return other(ctx, k, cursor, &buf) }
				}
				if _, next, ok := page(latestFirst, latest("")); ok && next != "" {
					page(latestNext, latest(next))
				}
				n, next, ok := page(otherFirst, theirs(""))
				items.Add(int64(n))
				if ok && next != "" {
					page(otherNext, theirs(next))
				}
				bar.Add(1)
			}
		})
	}
	wg.Wait()
	bar.Done()
	a := &alternation{rounds: rounds.Load(), errors: nerr.Load(), seconds: time.Since(start).Seconds()}
	for w := range hists {
		for k := range a.hists {
			a.hists[k].Merge(&hists[w][k])
		}
	}
	if a.rounds > 0 {
		a.itemsPerPage = float64(items.Load()) / float64(a.rounds)
	}
	return a
}

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
	alt := r.alternate(ctx, m, "ranked "+co.Name, toks, func(ctx context.Context, i int, cursor string, buf *bytes.Buffer) (int, string, error) {
		return m.cl.feedRawAt(ctx, toks[i], true, cursor, buf)
	})
	res.DurationSeconds, res.Rounds, res.Errors, res.RankedItemsPerPage = alt.seconds, alt.rounds, alt.errors, alt.itemsPerPage
	res.LatestFirstP50MS, res.LatestFirstP99MS = alt.p(latestFirst)
	res.LatestNextP50MS, res.LatestNextP99MS = alt.p(latestNext)
	res.RankedFirstP50MS, res.RankedFirstP99MS = alt.p(otherFirst)
	res.RankedNextP50MS, res.RankedNextP99MS = alt.p(otherNext)
	res.RankedColdP50MS, res.RankedColdP99MS = ms(cold.Quantile(0.5)), ms(cold.Quantile(0.99))
	r.logf("   ranked %s: first page p99 %.2f ms (latest %.2f), next page p99 %.2f ms (latest %.2f), cold first page p99 %.2f ms, %d rounds, %d errors",
		co.Name, res.RankedFirstP99MS, res.LatestFirstP99MS, res.RankedNextP99MS, res.LatestNextP99MS, res.RankedColdP99MS, res.Rounds, res.Errors)
	if res.Errors > 0 && res.Rounds == 0 {
		return res, fmt.Errorf("every one of %d reads failed", res.Errors)
	}
	return res, nil
}
