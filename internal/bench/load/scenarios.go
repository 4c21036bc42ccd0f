package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
	"github.com/feedd/feedd/internal/rediscache"
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
	if len(r.o.Manifest.Cohorts) == 0 {
		return nil, errors.New("the graph has no reader cohorts")
	}
	out := map[string]*report.ReadResult{}
	var errs []error
	for _, co := range r.o.Manifest.Cohorts {
		res, err := r.readCohort(ctx, m, co)
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

// memory lets a sample of readers read their feed once (so feedd builds
// whatever it keeps for them), then measures every key under the model's
// prefix.
func (r *runner) memory(ctx context.Context, m *modelRun) (*report.MemoryResult, error) {
	if r.rdb == nil {
		return nil, errors.New("needs Redis (FEEDD_REDIS_URL)")
	}
	sample := r.o.Manifest.SampleUsers[:min(r.o.MemoryReaders, len(r.o.Manifest.SampleUsers))]
	toks, err := r.tokensFor(ctx, m, sample)
	if err != nil {
		return nil, err
	}
	bar := progress.New(r.o.Progress, "memory: warm readers", int64(len(toks)))
	err = forEach(ctx, 16, len(toks), func(ctx context.Context, i int) error {
		_, err := m.cl.feedPage(ctx, toks[i], 20)
		bar.Add(1)
		return err
	})
	bar.Done()
	if err != nil {
		return nil, fmt.Errorf("warm readers: %w", err)
	}
	// The readers whose inboxes may exist: the sample, and the cohorts if
	// the read scenario ran.
	var readers []int64
	for _, s := range sample {
		id, _ := feed.ParseID(s)
		readers = append(readers, id)
	}
	if slices.Contains(r.o.Scenarios, ScenarioRead) {
		for _, co := range r.o.Manifest.Cohorts {
			for _, s := range co.Readers {
				id, _ := feed.ParseID(s)
				readers = append(readers, id)
			}
		}
	}
	res, err := measureMemory(ctx, r.rdb, m.cache, m.prefix, readers, r.o.MemoryMaxKeys, r.o.InboxMax)
	if err != nil {
		return nil, err
	}
	res.WarmedReaders = len(toks)
	r.logf("   memory: %d keys, %s; %d inboxes: %s for %d entries, %.1f B/entry",
		res.Keys, report.Bytes(res.RedisBytesTotal), res.Inboxes, report.Bytes(res.RedisInboxBytes), res.RedisEntries, res.RedisBytesPerEntry)
	return res, nil
}

// measureMemory SCANs prefix and sums MEMORY USAGE (SAMPLES 0: exact) of
// the keys. It knows nothing of feedd's layout: the cache's measurement
// hook (rediscache's InboxKeys) names the keys of each reader's inbox. So:
//
//   - the inbox keys are those of readers' inboxes; they are all measured,
//     and their entries are counted through feedd's own API (InboxPage of
//     up to inboxMax ids), whatever the inbox's encoding;
//   - every other key is measured too, or a random sample of maxKeys of
//     them, extrapolated (Sampled says so);
//   - entries are also counted generically per Redis type, for by_type: a
//     zset's ZCARD less a sentinel member "0" when it has one, a list's
//     LLEN, a hash's HLEN, a set's SCARD (a string has none).
func measureMemory(ctx context.Context, rdb redis.UniversalClient, cache *rediscache.Cache, prefix string, readers []int64, maxKeys, inboxMax int) (*report.MemoryResult, error) {
	keys, err := scanKeys(ctx, rdb, prefix)
	if err != nil {
		return nil, err
	}
	res := &report.MemoryResult{Prefix: prefix, Keys: int64(len(keys)), ByType: map[string]*report.TypeMemory{}, ByNamespace: map[string]*report.TypeMemory{}}
	isInbox := make(map[string]bool, len(readers))
	for _, r := range readers {
		for _, k := range cache.InboxKeys(r) {
			isInbox[k] = true
		}
	}
	var inboxKeys, others []string
	for _, k := range keys {
		if isInbox[k] {
			inboxKeys = append(inboxKeys, k)
		} else {
			others = append(others, k)
		}
	}
	measured := others
	if budget := max(maxKeys-len(inboxKeys), 1); maxKeys > 0 && len(others) > budget {
		measured, res.Sampled = sampleOf(others, budget), true
	}
	scale := 1.0
	if len(measured) > 0 {
		scale = float64(len(others)) / float64(len(measured))
	}
	res.MeasuredKeys = len(inboxKeys) + len(measured)

	add := func(set map[string]*report.TypeMemory, name string, bytes, entries int64, w float64) {
		t := set[name]
		if t == nil {
			t = &report.TypeMemory{}
			set[name] = t
		}
		t.Keys += int64(math.Round(w))
		t.Bytes += int64(math.Round(float64(bytes) * w))
		t.Entries += int64(math.Round(float64(entries) * w))
	}
	measure := func(keys []string, w float64, inbox bool) error {
		for start := 0; start < len(keys); start += 500 {
			batch := keys[start:min(start+500, len(keys))]
			p := rdb.Pipeline()
			types := make([]*redis.StatusCmd, len(batch))
			for i, k := range batch {
				types[i] = p.Type(ctx, k)
			}
			if _, err := p.Exec(ctx); err != nil {
				return fmt.Errorf("type: %w", err)
			}
			p = rdb.Pipeline()
			usage := make([]*redis.IntCmd, len(batch))
			card := make([]*redis.IntCmd, len(batch))
			sentinel := make([]*redis.FloatCmd, len(batch))
			for i, k := range batch {
				usage[i] = p.MemoryUsage(ctx, k, 0)
				switch types[i].Val() {
				case "zset":
					card[i] = p.ZCard(ctx, k)
					sentinel[i] = p.ZScore(ctx, k, "0")
				case "list":
					card[i] = p.LLen(ctx, k)
				case "hash":
					card[i] = p.HLen(ctx, k)
				case "set":
					card[i] = p.SCard(ctx, k)
				}
			}
			// Keys that expired since the SCAN answer nil: not an error.
			if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("memory usage: %w", err)
			}
			for i, k := range batch {
				typ := types[i].Val()
				if typ == "none" || usage[i].Err() != nil {
					continue
				}
				var entries int64
				if card[i] != nil {
					entries = card[i].Val()
					if sentinel[i] != nil && sentinel[i].Err() == nil {
						entries--
					}
				}
				b := usage[i].Val()
				add(res.ByType, typ, b, entries, w)
				add(res.ByNamespace, namespaceOf(strings.TrimPrefix(k, prefix)), b, entries, w)
				res.RedisBytesTotal += int64(math.Round(float64(b) * w))
				if inbox {
					res.RedisInboxBytes += b
				}
			}
		}
		return nil
	}
	if err := measure(inboxKeys, 1, true); err != nil {
		return nil, err
	}
	if err := measure(measured, scale, false); err != nil {
		return nil, err
	}

	// Entries through feedd's API, for the readers whose inbox exists.
	var inboxes, entries atomic.Int64
	err = forEach(ctx, 32, len(readers), func(ctx context.Context, i int) error {
		pg, err := cache.InboxPage(ctx, readers[i], 0, inboxMax)
		if err != nil {
			return err
		}
		if pg.Exists {
			inboxes.Add(1)
			entries.Add(int64(len(pg.IDs)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count inbox entries: %w", err)
	}
	res.InboxReaders, res.Inboxes, res.RedisEntries = len(readers), int(inboxes.Load()), entries.Load()
	if res.RedisEntries > 0 {
		res.RedisBytesPerEntry = float64(res.RedisInboxBytes) / float64(res.RedisEntries)
	}
	res.RedisConfig = map[string]string{}
	for _, pat := range []string{"zset-max-listpack-*", "zset-max-ziplist-*", "list-max-listpack-size", "hash-max-listpack-entries", "maxmemory-policy"} {
		if cfg, err := rdb.ConfigGet(ctx, pat).Result(); err == nil {
			for k, v := range cfg {
				res.RedisConfig[k] = v
			}
		}
	}
	return res, nil
}

// namespaceOf returns the constant start of a key (prefix removed): up to
// its hash tag or its first digit. "feed:{42}" is "feed:", "kv:refresh:{42}"
// is "kv:refresh:".
func namespaceOf(rest string) string {
	for i, c := range rest {
		if c == '{' || (c >= '0' && c <= '9') {
			return rest[:i]
		}
	}
	return rest
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
