package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/bench/report"
)

// ScenarioNotifications reads the notifications of the author of a post
// liked by a million against home feeds; like search it runs only when
// named.
const ScenarioNotifications = "notifications"

// notifications measures GET /v1/me/notifications of the graph's liked
// post's author (bench graph: the first celebrity, whose newest post each
// of its followers likes, one group of them all) against the home feed's
// first page: the readers of the first cohort read their home feed, and
// the author's notifications, alternately, under the same load in the
// same seconds (alternate). The page holds the group of a million with its
// three newest likers: it should cost what a page of small groups does.
func (r *runner) notifications(ctx context.Context, m *modelRun) (*report.NotificationsResult, error) {
	lp := r.o.Manifest.LikedPost
	cohorts := r.o.Manifest.Cohorts
	switch {
	case lp == nil:
		return nil, errors.New("the graph has no liked post (bench graph loads one with a celebrity, into SQL)")
	case len(cohorts) == 0 || len(cohorts[0].Readers) == 0:
		return nil, errors.New("the graph has no cohort to read home feeds as")
	}
	toks, err := r.tokensFor(ctx, m, cohorts[0].Readers)
	if err != nil {
		return nil, err
	}
	author, err := r.token(ctx, m, lp.AuthorID)
	if err != nil {
		return nil, err
	}
	// Warm up, unmeasured: a home page per reader; and the proof that
	// the author's page shows the group of every like.
	for _, tok := range toks {
		if _, err := m.cl.feedPage(ctx, tok, 20); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	page, err := m.cl.as(author).Notifications(ctx, fclient.NotificationParams{Limit: 20})
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	if len(page.Items) == 0 || page.Items[0].ActorCount != int64(lp.Likes) {
		return nil, fmt.Errorf("the liked post's author's first group is %+v; want the like of %d users", page.Items, lp.Likes)
	}
	alt := r.alternate(ctx, m, "notifications", toks, func(ctx context.Context, _ int, cursor string, _ *bytes.Buffer) (int, string, error) {
		pg, err := m.cl.as(author).Notifications(ctx, fclient.NotificationParams{Limit: 20, Cursor: cursor})
		return len(pg.Items), pg.NextCursor, err
	})
	res := &report.NotificationsResult{Readers: len(toks), Concurrency: r.o.Concurrency, Rounds: alt.rounds, Errors: alt.errors,
		DurationSeconds: alt.seconds, ActorCount: page.Items[0].ActorCount}
	res.HomeFirstP50MS, res.HomeFirstP99MS = alt.p(latestFirst)
	res.NotificationsP50MS, res.NotificationsP99MS = alt.p(otherFirst)
	r.logf("   notifications: p99 %.2f ms (home first page %.2f ms) with a group of %d likes, %d rounds, %d errors",
		res.NotificationsP99MS, res.HomeFirstP99MS, res.ActorCount, res.Rounds, res.Errors)
	if res.Errors > 0 && res.Rounds == 0 {
		return res, fmt.Errorf("every one of %d reads failed", res.Errors)
	}
	return res, nil
}
