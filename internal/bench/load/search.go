package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/feedd/feedd/internal/bench/report"
)

// ScenarioSearch finds people against home feeds; like ranked and lists
// it runs only when named.
const ScenarioSearch = "search"

// search measures GET /v1/users/search against the home feed's first
// page: the readers of the first cohort, one after another, read their
// home feed and search, alternately, under the same load in the same
// seconds (alternate). The queries cycle through handle prefixes of the
// graph's users ("user_12": a range of the handle index, 20 of a
// thousand matches read) and name prefixes ("user-12": no handle holds a
// hyphen, so a range of the name index only), one to five digits long.
func (r *runner) search(ctx context.Context, m *modelRun) (*report.SearchResult, error) {
	cohorts := r.o.Manifest.Cohorts
	if len(cohorts) == 0 || len(cohorts[0].Readers) == 0 {
		return nil, errors.New("the graph has no cohort to search as")
	}
	toks, err := r.tokensFor(ctx, m, cohorts[0].Readers)
	if err != nil {
		return nil, err
	}
	queries := searchQueries()
	var next atomic.Int64
	// Warm up, unmeasured: a home page per reader (a rebuilt inbox is the
	// read scenario's figure, not this one's).
	for _, tok := range toks {
		if _, err := m.cl.feedPage(ctx, tok, 20); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	alt := r.alternate(ctx, m, "search", toks, func(ctx context.Context, i int, _ string, _ *bytes.Buffer) (int, string, error) {
		q := queries[int(next.Add(1))%len(queries)]
		found, err := m.cl.as(toks[i]).SearchUsers(ctx, q, 20)
		return len(found), "", err
	})
	res := &report.SearchResult{Readers: len(toks), Concurrency: r.o.Concurrency, Rounds: alt.rounds, Errors: alt.errors,
		DurationSeconds: alt.seconds, ItemsPerSearch: alt.itemsPerPage}
	res.HomeFirstP50MS, res.HomeFirstP99MS = alt.p(latestFirst)
	res.SearchP50MS, res.SearchP99MS = alt.p(otherFirst)
	r.logf("   search: p99 %.2f ms (home first page %.2f ms), %.1f users a search, %d rounds, %d errors",
		res.SearchP99MS, res.HomeFirstP99MS, res.ItemsPerSearch, res.Rounds, res.Errors)
	if res.Errors > 0 && res.Rounds == 0 {
		return res, fmt.Errorf("every one of %d reads failed", res.Errors)
	}
	return res, nil
}

// searchQueries are the bench's searches: every prefix of one to five
// digits of a few user numbers, as a handle and as a name.
func searchQueries() []string {
	var qs []string
	for _, n := range []int{12345, 67890, 24680, 13579, 99999} {
		s := strconv.Itoa(n)
		for k := 1; k <= len(s); k++ {
			qs = append(qs, "user_"+s[:k], "user-"+s[:k])
		}
	}
	return qs
}
