package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
)

// fanout publishes one post by an author whose followers all have an
// inbox, and follows feedd's inbox-write counter until every follower got
// it; then checks a sample of inboxes and measures the raw ZADD baseline.
func (r *runner) fanout(ctx context.Context, m *modelRun) (*report.FanoutResult, error) {
	if m.cache == nil {
		return nil, errors.New("needs Redis (FEEDD_REDIS_URL) to materialize inboxes")
	}
	author := r.o.FanoutAuthor
	if author == "" {
		if len(r.o.Manifest.Celebrities) > 0 {
			author = r.o.Manifest.Celebrities[0].ID
		} else {
			author = r.o.Manifest.TopOrdinaryAuthor.ID
		}
	}
	tok, err := r.token(ctx, m, author)
	if err != nil {
		return nil, err
	}
	u, err := m.cl.user(ctx, tok, author)
	if err != nil {
		return nil, err
	}
	res := &report.FanoutResult{AuthorID: author, Followers: int(u.FollowerCount), DeliveryMode: u.DeliveryMode, FannedOut: u.DeliveryMode != feed.DeliveryPull}
	if u.FollowerCount == 0 {
		return nil, fmt.Errorf("author %s has no followers", author)
	}
	followers, err := r.followersOf(ctx, m, tok, author, res.Followers)
	if err != nil {
		return nil, err
	}
	n := len(followers)
	if res.FannedOut {
		took, err := r.materialize(ctx, m, followers)
		res.MaterializeSeconds = took.Seconds()
		if err != nil {
			return nil, fmt.Errorf("materialize inboxes: %w", err)
		}
	}

	r.quiesce(ctx, m)
	w0, err := r.writes(ctx, m)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	id, took, err := r.publishAs(ctx, m, author, tok, "bench fanout "+m.name+" "+r.tag)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	res.PublishMS = ms(took)
	r.logf("   fanout: post %d by %s to %d followers (%s)", id, author, n, cmpOr(u.DeliveryMode, "push"))

	// Follow the counter: every 10 ms for the first second, so that a
	// small fan-out is timed to better than the 100 ms of the later polls.
	// A pulled author writes no inbox: watch for a second that nothing is
	// written, and report no rates.
	bar := progress.New(r.o.Progress, "fanout", int64(n))
	var last float64
	lastMove := start
	var pollErrs int
	for done := false; !done; {
		wait := pollEvery
		if time.Since(start) < time.Second {
			wait = 10 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			bar.Done()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		w, err := r.writes(ctx, m)
		now := time.Now()
		if err != nil {
			if pollErrs++; pollErrs > 20 {
				bar.Done()
				return nil, fmt.Errorf("poll /metrics: %w", err)
			}
			continue
		}
		pollErrs = 0
		d := w - w0
		t := now.Sub(start)
		res.Progress = append(res.Progress, [2]float64{t.Seconds(), d})
		bar.Set(int64(d))
		if d > last {
			last, lastMove = d, now
		}
		switch {
		case res.FannedOut && d >= float64(n):
			res.FanoutSeconds = t.Seconds()
			done = true
		case !res.FannedOut && t >= time.Second:
			done = true
		case now.Sub(lastMove) > stallAfter:
			bar.Done()
			return res, fmt.Errorf("fan-out stalled at %.0f of %d inbox writes for %v", d, n, stallAfter)
		case t > r.o.FanoutTimeout:
			bar.Done()
			return res, fmt.Errorf("fan-out not done within %v: %.0f of %d inbox writes", r.o.FanoutTimeout, d, n)
		}
	}
	bar.Done()
	res.InboxWrites = int64(last)
	if res.FannedOut && res.FanoutSeconds > 0 {
		res.FanoutWritesPerSec = float64(n) / res.FanoutSeconds
	}

	// Every inbox of a sample must hold the post.
	var verifyErr error
	if res.FannedOut {
		sample := sampleOf(followers, r.o.VerifySample)
		// The counter counts a batch when its pipeline returned, so every
		// inbox should hold the post now; a straggler gets 10 seconds.
		missing := sample
		for grace := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			var mu sync.Mutex
			var still []int64
			verifyErr = forEach(ctx, 32, len(missing), func(ctx context.Context, i int) error {
				pg, err := m.cache.InboxPage(ctx, missing[i], 0, 10)
				if err != nil {
					return err
				}
				if !slices.Contains(pg.IDs, id) {
					mu.Lock()
					still = append(still, missing[i])
					mu.Unlock()
				}
				return nil
			})
			missing = still
			if verifyErr != nil || len(missing) == 0 || time.Now().After(grace) {
				break
			}
		}
		res.VerifySample, res.VerifiedOK = len(sample), len(sample)-len(missing)
		if verifyErr == nil && res.VerifiedOK < res.VerifySample {
			verifyErr = fmt.Errorf("post %d missing from %d of %d sampled inboxes", id, res.VerifySample-res.VerifiedOK, res.VerifySample)
		}
	}

	// The baseline, in the same run against the same server.
	bt, err := zaddBaseline(ctx, r.rdb, r.o.RunPrefix+"baseline-"+r.tag+":", followers, id, r.o.BaselineGoroutines, baselineBatch)
	if err != nil {
		return res, err
	}
	res.FanoutBaselineSeconds = bt.Seconds()
	res.FanoutBaselineWritesPerSec = float64(n) / bt.Seconds()
	res.FanoutBaselineGoroutines, res.FanoutBaselinePipeline = r.o.BaselineGoroutines, baselineBatch
	if res.FanoutWritesPerSec > 0 {
		res.FanoutVsBaseline = res.FanoutWritesPerSec / res.FanoutBaselineWritesPerSec
	}
	fan := "not fanned out (the author is pulled)"
	if res.FannedOut {
		fan = fmt.Sprintf("%.2fs, %s writes/s", res.FanoutSeconds, report.Count(int64(res.FanoutWritesPerSec)))
	}
	r.logf("   fanout: %s; baseline %s ZADD/s (%d goroutines, pipelines of %d)",
		fan, report.Count(int64(res.FanoutBaselineWritesPerSec)), r.o.BaselineGoroutines, baselineBatch)

	if err := r.dropInboxes(ctx, m); err != nil {
		return res, fmt.Errorf("drop materialized inboxes: %w", err)
	}
	return res, verifyErr
}

// publish measures publish latency for the zero-follower author and the
// celebrity, alternating, while the celebrity's fan-out runs: the
// celebrity's followers get inboxes first (as in fanout), and its first
// post starts the fan-out the samples run under.
func (r *runner) publish(ctx context.Context, m *modelRun) (*report.PublishResult, error) {
	man := r.o.Manifest
	type side struct {
		lat   *report.PublishLatency
		token string
		hist  report.Histogram
	}
	mk := func(a graph.Author) (*side, error) {
		tok, err := r.token(ctx, m, a.ID)
		if err != nil {
			return nil, err
		}
		u, err := m.cl.user(ctx, tok, a.ID)
		if err != nil {
			return nil, err
		}
		return &side{token: tok, lat: &report.PublishLatency{AuthorID: a.ID, Followers: int(u.FollowerCount), DeliveryMode: u.DeliveryMode}}, nil
	}
	zero, err := mk(man.ZeroFollowerAuthor)
	if err != nil {
		return nil, err
	}
	sides := []*side{zero}
	var celeb *side
	if len(man.Celebrities) > 0 {
		if celeb, err = mk(man.Celebrities[0]); err != nil {
			return nil, err
		}
		sides = append(sides, celeb)
		if celeb.lat.DeliveryMode != feed.DeliveryPull && m.cache != nil {
			followers, err := r.followersOf(ctx, m, celeb.token, celeb.lat.AuthorID, celeb.lat.Followers)
			if err != nil {
				return nil, err
			}
			if _, err := r.materialize(ctx, m, followers); err != nil {
				return nil, fmt.Errorf("materialize inboxes: %w", err)
			}
		}
	}

	r.quiesce(ctx, m)
	w0, _ := r.writes(ctx, m)
	if celeb != nil && celeb.lat.DeliveryMode != feed.DeliveryPull {
		// A first post, unmeasured, starts the fan-out; the samples begin
		// once inbox writes are flowing (or after 5 s at most).
		if _, _, err := r.publishAs(ctx, m, celeb.lat.AuthorID, celeb.token, "bench publish starter "+m.name+" "+r.tag); err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		for wait := time.Now().Add(5 * time.Second); time.Now().Before(wait); time.Sleep(20 * time.Millisecond) {
			if w, err := r.writes(ctx, m); err == nil && w > w0 {
				break
			}
		}
	}
	deadline := time.Now().Add(r.o.FanoutTimeout)
	bar := progress.New(r.o.Progress, "publish", int64(r.o.PublishCount*len(sides)))
	for i := 0; i < r.o.PublishCount && time.Now().Before(deadline); i++ {
		for _, s := range sides {
			if err := ctx.Err(); err != nil {
				bar.Done()
				return nil, err
			}
			_, took, err := r.publishAs(ctx, m, s.lat.AuthorID, s.token, fmt.Sprintf("bench publish %s %s %d", m.name, r.tag, i))
			if err != nil {
				s.lat.Errors++
			} else {
				s.hist.Record(took)
			}
			bar.Add(1)
		}
	}
	bar.Done()
	w1, _ := r.writes(ctx, m)
	res := &report.PublishResult{ZeroFollowers: zero.lat}
	if celeb != nil {
		res.Celebrity = celeb.lat
	}
	var errs []error
	for _, s := range sides {
		l := s.lat
		l.Samples = int(s.hist.Count())
		l.PublishP50MS, l.PublishP99MS = ms(s.hist.Quantile(0.50)), ms(s.hist.Quantile(0.99))
		l.PublishMean, l.PublishMaxMS = ms(s.hist.Mean()), ms(s.hist.Max())
		l.FanoutWritesDuring = int64(w1 - w0)
		l.Histogram = s.hist.Bins(10)
		if l.Errors > 0 {
			errs = append(errs, fmt.Errorf("%d of %d publishes by %s failed", l.Errors, l.Errors+l.Samples, l.AuthorID))
		}
	}
	r.logf("   publish: zero p50 %.2f p99 %.2f ms", zero.lat.PublishP50MS, zero.lat.PublishP99MS)
	if celeb != nil {
		r.logf("   publish: celebrity p50 %.2f p99 %.2f ms, %s inbox writes meanwhile", celeb.lat.PublishP50MS, celeb.lat.PublishP99MS, report.Count(celeb.lat.FanoutWritesDuring))
	}
	return res, errors.Join(errs...)
}
