package load

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/report"
)

// ScenarioLists reads lists against home feeds; like ranked and stream it
// runs only when named.
const ScenarioLists = "lists"

// listMembersMax leaves out the cohorts whose lists would be larger: the
// target is a list of 500, and making twenty lists of 5,000 takes 100,000
// requests.
const listMembersMax = 500

// lists measures each cohort's list feed against its home feed: up to
// --list-readers readers (20: each list takes one PUT per member, and 20
// lists of 500 members are 10,000) each make a list of everyone they follow (so the
// list holds the cohort's celebrities too), and each client reads, one of
// those readers after another, the home feed's first page and the page
// after it, then the list's (alternate). Cohorts whose readers follow more
// than 500 accounts are left out. The lists are deleted after.
func (r *runner) lists(ctx context.Context, m *modelRun) (map[string]*report.ListsResult, error) {
	return perCohort(ctx, r, m, r.listsCohort)
}

func (r *runner) listsCohort(ctx context.Context, m *modelRun, co graph.Cohort) (*report.ListsResult, error) {
	if co.Following > listMembersMax {
		return nil, nil
	}
	toks, err := r.tokensFor(ctx, m, co.Readers[:min(len(co.Readers), max(r.o.ListReaders, 1))])
	if err != nil {
		return nil, err
	}
	lists := make([]fclient.ID, len(toks))
	var members atomic.Int64
	err = forEach(ctx, min(r.o.Concurrency, 4), len(toks), func(ctx context.Context, i int) error {
		c := m.cl.as(toks[i])
		l, err := c.CreateList(ctx, fclient.CreateListParams{Name: "bench " + r.tag})
		if err != nil {
			return err
		}
		lists[i] = l.ID
		me, err := fclient.ParseID(co.Readers[i])
		if err != nil {
			return err
		}
		for u, err := range c.Following(ctx, me, fclient.PageParams{Limit: 100}) {
			if err != nil {
				return err
			}
			if err := c.AddListMember(ctx, l.ID, u.ID); err != nil {
				return err
			}
			members.Add(1)
		}
		return nil
	})
	defer func() {
		for i, l := range lists {
			if l != 0 {
				_ = m.cl.as(toks[i]).DeleteList(context.WithoutCancel(ctx), l)
			}
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("make the lists: %w", err)
	}
	// Warm up, unmeasured: a home page and a list page per reader (a
	// rebuilt inbox, the members' author lists read from SQL once).
	var buf0 bytes.Buffer
	for i, tok := range toks {
		if _, err := m.cl.feedPage(ctx, tok, 20); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		if _, _, err := m.cl.listRawAt(ctx, tok, lists[i], "", &buf0); err != nil {
			return nil, fmt.Errorf("warm-up: a list page: %w", err)
		}
	}
	alt := r.alternate(ctx, m, "lists "+co.Name, toks, func(ctx context.Context, i int, cursor string, buf *bytes.Buffer) (int, string, error) {
		return m.cl.listRawAt(ctx, toks[i], lists[i], cursor, buf)
	})
	res := &report.ListsResult{Following: co.Following, Celebrities: co.Celebrities, Readers: len(toks), Concurrency: r.o.Concurrency,
		MembersPerList: float64(members.Load()) / float64(len(toks)),
		Rounds:         alt.rounds, Errors: alt.errors, DurationSeconds: alt.seconds, ListItemsPerPage: alt.itemsPerPage}
	res.HomeFirstP50MS, res.HomeFirstP99MS = alt.p(latestFirst)
	res.HomeNextP50MS, res.HomeNextP99MS = alt.p(latestNext)
	res.ListFirstP50MS, res.ListFirstP99MS = alt.p(otherFirst)
	res.ListNextP50MS, res.ListNextP99MS = alt.p(otherNext)
	r.logf("   lists %s: first page p99 %.2f ms (home %.2f), next page p99 %.2f ms (home %.2f), %.0f members a list, %d rounds, %d errors",
		co.Name, res.ListFirstP99MS, res.HomeFirstP99MS, res.ListNextP99MS, res.HomeNextP99MS, res.MembersPerList, res.Rounds, res.Errors)
	if res.Errors > 0 && res.Rounds == 0 {
		return res, fmt.Errorf("every one of %d reads failed", res.Errors)
	}
	return res, nil
}
