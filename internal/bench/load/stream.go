package load

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
)

const (
	// streamOpeners is how many streams open at once.
	streamOpeners = 64
	// streamGrace is how long after the last publish a stream may still
	// get its event before it counts as missed: long enough that a backlog
	// shows as late events, and only lost ones as missed.
	streamGrace = 60 * time.Second
	// memorySamples are taken memoryEvery apart; the least is kept, as
	// the one nearest a garbage collection's end.
	memorySamples = 4
	memoryEvery   = 250 * time.Millisecond
)

// stream opens StreamClients live streams for followers of the first
// celebrity and of the most followed ordinary author, and measures:
//
//   - publish latency of a phase of posts with no stream open;
//   - the serve process's memory per idle stream, before and after
//     opening them;
//   - the same phase of posts with the streams open: the publish latency
//     again, and each stream's delivery of each post of the two authors,
//     from the publish's answer to the stream's whole `event: post`.
//
// The streams are opened and read by a child process, `feedd bench
// stream-readers` (streamReaders): real readers are on other machines,
// and ten thousand reader goroutines woken by one post would otherwise
// share bench's run queue with the goroutines timing the publishes, so
// the phase with streams open would time bench's own scheduling too.
//
// A phase publishes StreamPosts posts by the two authors, alternating,
// one every StreamInterval (open loop), while the author nobody follows
// publishes one every StreamFillerInterval: those give the publish
// latency enough samples for a p99 without asking ten thousand streams
// to take a celebrity's post several times a second.
func (r *runner) stream(ctx context.Context, m *modelRun) (*report.StreamResult, error) {
	man := r.o.Manifest
	n := r.o.StreamClients
	if n <= 0 {
		return nil, errors.New("--stream-clients must be positive")
	}
	u, err := url.Parse(m.url)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("the stream client speaks plain HTTP; %q is not an http:// URL", m.url)
	}
	if r.o.Exe == "" {
		return nil, errors.New("no feedd executable to start the stream readers with")
	}
	// The streams' process: the API child, or a streaming tier of its own.
	sm := m
	if r.o.StreamTier != "" && m.pid > 0 {
		tier, stop, err := r.streamTier(ctx, m)
		if err != nil {
			return nil, err
		}
		defer stop()
		sm = tier
		if u, err = url.Parse(sm.url); err != nil {
			return nil, fmt.Errorf("the streaming tier's URL: %w", err)
		}
	}
	if sm.pid > 0 {
		if lim, ok := openFileLimit(sm.pid); ok && lim < uint64(n)+512 {
			return nil, fmt.Errorf("the serve process may open %d files, too few for %d streams: raise the hard limit (ulimit -Hn)", lim, n)
		}
	}

	// The authors, and whose streams hear each.
	type author struct {
		kind      string
		a         graph.Author
		token     string
		res       *report.StreamAuthor
		followers []int64 // sorted
	}
	var authors []*author
	if len(man.Celebrities) > 0 {
		authors = append(authors, &author{kind: "celebrity", a: man.Celebrities[0]})
	}
	authors = append(authors, &author{kind: "ordinary", a: man.TopOrdinaryAuthor})
	res := &report.StreamResult{Authors: map[string]*report.StreamAuthor{}, PostsPerPhase: r.o.StreamPosts,
		IntervalMS: ms(r.o.StreamInterval), FillerIntervalMS: ms(r.o.StreamFillerInterval)}
	res.Tier = "api"
	if sm != m {
		res.Tier = r.o.StreamTier
	}
	for _, a := range authors {
		if a.token, err = r.token(ctx, m, a.a.ID); err != nil {
			return nil, err
		}
		info, err := m.cl.user(ctx, a.token, a.a.ID)
		if err != nil {
			return nil, err
		}
		a.res = &report.StreamAuthor{AuthorID: a.a.ID, Followers: int(info.FollowerCount), DeliveryMode: cmpOr(info.DeliveryMode, "push")}
		res.Authors[a.kind] = a.res
		f, err := r.followersOf(ctx, m, a.token, a.a.ID, a.res.Followers)
		if err != nil {
			return nil, err
		}
		a.followers = slices.Sorted(slices.Values(f))
	}
	// The readers: a random sample of the ordinary author's followers
	// (up to half the streams when there is a celebrity), then of the
	// celebrity's.
	ord := authors[len(authors)-1]
	limit := n
	if len(authors) > 1 {
		limit = n / 2
	}
	readers := sampleOf(ord.followers, min(limit, len(ord.followers)))
	if len(authors) > 1 && len(readers) < n {
		chosen := make(map[int64]bool, len(readers))
		for _, id := range readers {
			chosen[id] = true
		}
		for _, id := range sampleOf(authors[0].followers, n) {
			if len(readers) == n {
				break
			}
			if !chosen[id] {
				readers = append(readers, id)
			}
		}
	}
	if len(readers) < n {
		r.note(fmt.Sprintf("%s: stream: the two authors have %d followers in all; %d streams open, not %d", m.name, len(readers), len(readers), n))
	}
	if len(readers) == 0 {
		return nil, errors.New("the authors have no followers to open streams for")
	}
	// follows[i][k]: reader i follows author k.
	follows := make([][]bool, len(readers))
	for i, id := range readers {
		follows[i] = make([]bool, len(authors))
		for k, a := range authors {
			if _, ok := slices.BinarySearch(a.followers, id); ok {
				follows[i][k] = true
				a.res.Streams++
			}
		}
	}
	ids := make([]string, len(readers))
	for i, id := range readers {
		ids[i] = feed.FormatID(id)
	}
	bar := progress.New(r.o.Progress, "stream: reader tokens", 0)
	toks, err := r.tokensFor(ctx, m, ids)
	bar.Done()
	if err != nil {
		return nil, err
	}
	zero, err := r.token(ctx, m, man.ZeroFollowerAuthor.ID)
	if err != nil {
		return nil, err
	}
	a0, a0Tok := "", ""
	if len(authors) > 1 {
		a0, a0Tok = authors[0].a.ID, authors[0].token
	}
	lanes := func() (*streamPhase, error) {
		ph := &streamPhase{}
		err := r.streamPhase(ctx, m, ph, a0, a0Tok, ord.a.ID, ord.token, man.ZeroFollowerAuthor.ID, zero)
		return ph, err
	}

	// The phase with no stream open. It runs again once the streams
	// have closed, and the baseline is both together (see
	// noStreamsBaseline).
	r.logf("   stream: %d posts with no stream open", r.o.StreamPosts)
	r.quiesce(ctx, m)
	base, err := lanes()
	if err != nil {
		return nil, err
	}

	// Open them.
	before, err := r.serveMemory(ctx, sm)
	if err != nil {
		return nil, err
	}
	// A --url deployment may serve streams of its own users: the phase
	// after the readers waits for the count to come back to this.
	othersOpen, err := r.streamsOpen(ctx, sm)
	if err != nil {
		return nil, err
	}
	bar = progress.New(r.o.Progress, "stream: open", int64(len(readers)))
	start := time.Now()
	rd, err := startStreamReaders(r.o.Exe, []string{"bench", "stream-readers"}, r.o.Env,
		filepath.Join(r.o.LogDir, "feedd-bench-stream-readers-"+m.name+".log"), u.Host, toks)
	if err != nil {
		bar.Done()
		return nil, err
	}
	defer rd.kill()
	op, err := rd.waitOpen(ctx, bar)
	bar.Done()
	if err != nil {
		return nil, err
	}
	res.StreamOpenSeconds = time.Since(start).Seconds()
	res.StreamOpenErrors = len(op.Failed)
	res.StreamClients = int(op.Opened)
	var firstErr error
	if op.FirstError != "" {
		firstErr = errors.New(op.FirstError)
	}
	failed := make([]bool, len(readers))
	for _, i := range op.Failed {
		failed[i] = true
	}
	if firstErr != nil {
		r.logf("!! stream: %d of %d streams failed to open, e.g. %v", res.StreamOpenErrors, len(readers), firstErr)
	}
	r.logf("   stream: %d streams open in %.1f s", res.StreamClients, res.StreamOpenSeconds)
	if res.StreamClients == 0 {
		return res, fmt.Errorf("no stream opened: %w", firstErr)
	}
	// Idle a moment (each stream's open has settled), then measure.
	time.Sleep(time.Second)
	after, err := r.serveMemory(ctx, sm)
	if err != nil {
		return res, err
	}
	res.GoBytesBefore, res.GoBytesAfter = before.goBytes, after.goBytes
	res.RSSBytesBefore, res.RSSBytesAfter = before.rss, after.rss
	k := float64(res.StreamClients)
	res.StreamBytesPerClient = float64(after.goBytes-before.goBytes) / k
	res.StreamRSSBytesPerClient = float64(after.rss-before.rss) / k
	res.StreamHeapBytesPerClient = float64(after.heap-before.heap) / k
	res.StreamStackBytesPerClient = float64(after.stacks-before.stacks) / k
	res.StreamGoroutinesPerClient = (after.goroutines - before.goroutines) / k
	r.logf("   stream: %.0f B of Go heap and stacks per idle stream (heap %.0f B, stacks %.0f B; %.0f B resident; %.1f goroutines)",
		res.StreamBytesPerClient, res.StreamHeapBytesPerClient, res.StreamStackBytesPerClient, res.StreamRSSBytesPerClient, res.StreamGoroutinesPerClient)

	// The phase with them open; every delivery counts against the sum of
	// the expected ones, so bench knows when the last has come.
	expect := make([]int, len(authors))
	for i := range readers {
		if failed[i] {
			continue
		}
		for k := range authors {
			if follows[i][k] {
				expect[k]++
			}
		}
	}
	// Each phase starts on an idle feedd: the first phase's posts may
	// still be fanning out (a pushed celebrity's, to every follower), and
	// the dispatcher announces a post only when it takes up its event.
	r.quiesce(ctx, m)
	r.logf("   stream: %d posts with %d streams open", r.o.StreamPosts, res.StreamClients)
	live, err := lanes()
	if err != nil {
		return res, err
	}
	var want int64
	for _, p := range live.posts {
		want += int64(expect[p.author])
	}
	for deadline := time.Now().Add(streamGrace); rd.events.Load() < want && rd.alive() && time.Now().Before(deadline); {
		time.Sleep(readersReportEvery)
	}
	streams, err := rd.stop()
	if err != nil {
		return res, err
	}

	// The phase with no stream open, again.
	if err := r.awaitStreamsClosed(ctx, sm, othersOpen); err != nil {
		return res, err
	}
	r.quiesce(ctx, m)
	r.logf("   stream: %d posts with no stream open, again", r.o.StreamPosts)
	again, err := lanes()
	if err != nil {
		return res, err
	}
	noStreamsBaseline(res, base, again)
	res.StreamPublishSamples = int(live.publish.Count())
	res.StreamPublishErrors = base.errors + live.errors + again.errors
	res.StreamPublishP50MS, res.StreamPublishP99MS = ms(live.publish.Quantile(0.50)), ms(live.publish.Quantile(0.99))
	if res.StreamPublishNoStreamsP99MS > 0 {
		res.StreamPublishVsNoStreams = res.StreamPublishP99MS / res.StreamPublishNoStreamsP99MS
	}
	res.PublishHistogram = live.publish.Bins(10)

	// Each expected (post, stream) pair: its delay, or missed.
	postOf := make(map[int64]int, len(live.posts))
	for j, p := range live.posts {
		postOf[p.id] = j
	}
	all := &report.Histogram{}
	per := make([]*report.Histogram, len(authors))
	for k := range per {
		per[k] = &report.Histogram{}
	}
	got := make([]int64, len(authors))
	seen := make([]bool, len(live.posts))
	for i, evs := range streams {
		clear(seen)
		for _, ev := range evs {
			j, ok := postOf[ev.id]
			if !ok {
				continue
			}
			if seen[j] {
				res.StreamDuplicates++
				continue
			}
			seen[j] = true
			p := live.posts[j]
			if !follows[i][p.author] {
				continue
			}
			d := time.Duration(ev.at - p.answered)
			all.Record(d)
			per[p.author].Record(d)
			got[p.author]++
		}
	}
	for k, a := range authors {
		for _, p := range live.posts {
			if p.author == k {
				a.res.Posts++
			}
		}
		a.res.StreamDeliveries = got[k]
		a.res.StreamMissed = int64(expect[k]*a.res.Posts) - got[k]
		a.res.StreamDeliveryP50MS, a.res.StreamDeliveryP99MS = ms(per[k].Quantile(0.50)), ms(per[k].Quantile(0.99))
		a.res.StreamDeliveryMaxMS = ms(per[k].Max())
		res.StreamDeliveries += a.res.StreamDeliveries
		res.StreamMissed += a.res.StreamMissed
		r.logf("   stream: %s (%s, %d streams): delivery p50 %.1f ms p99 %.1f ms, %d missed",
			a.kind, a.res.DeliveryMode, a.res.Streams, a.res.StreamDeliveryP50MS, a.res.StreamDeliveryP99MS, a.res.StreamMissed)
	}
	res.StreamDeliveryP50MS, res.StreamDeliveryP99MS, res.StreamDeliveryMaxMS = ms(all.Quantile(0.50)), ms(all.Quantile(0.99)), ms(all.Max())
	res.DeliveryHistogram = all.Bins(10)
	r.logf("   stream: publish p99 %.2f ms with %d streams, %.2f ms with none (%.2f×; with none, %.2f ms before and %.2f ms after: %.2f×)",
		res.StreamPublishP99MS, res.StreamClients, res.StreamPublishNoStreamsP99MS, res.StreamPublishVsNoStreams,
		res.StreamPublishBeforeP99MS, res.StreamPublishAfterP99MS, res.StreamPublishAfterVsBefore)

	var errs []error
	if res.StreamOpenErrors > 0 {
		errs = append(errs, fmt.Errorf("%d of %d streams failed to open, e.g. %w", res.StreamOpenErrors, len(readers), firstErr))
	}
	if res.StreamMissed > 0 {
		errs = append(errs, fmt.Errorf("%d expected events had not come %v after the last publish", res.StreamMissed, streamGrace))
	}
	if res.StreamDuplicates > 0 {
		errs = append(errs, fmt.Errorf("%d events repeated a post the stream had been sent", res.StreamDuplicates))
	}
	if res.StreamPublishErrors > 0 {
		errs = append(errs, fmt.Errorf("%d publishes failed", res.StreamPublishErrors))
	}
	return res, errors.Join(errs...)
}

// noStreamsBaseline sets res's figures of the publishes with no stream
// open from the phase before the streams opened and the phase after they
// closed, together. One phase alone, always run first, measured the
// machine's drift as much as the streams: the same build's ratio went
// from 1.06 to 3.20 between two runs, its no-stream p99 from 5.8 to 28
// ms, on a machine whose database was still settling from the graph's
// load. With a phase on each side, a drift over the run moves the
// baseline as it moves the phase with streams, and the two baselines'
// own ratio (after / before) shows how far the machine moved: a ratio of
// the streams' phase to the baseline within that is noise.
func noStreamsBaseline(res *report.StreamResult, before, after *streamPhase) {
	res.StreamPublishBeforeP99MS = ms(before.publish.Quantile(0.99))
	res.StreamPublishAfterP99MS = ms(after.publish.Quantile(0.99))
	if res.StreamPublishBeforeP99MS > 0 {
		res.StreamPublishAfterVsBefore = res.StreamPublishAfterP99MS / res.StreamPublishBeforeP99MS
	}
	var both report.Histogram
	both.Merge(&before.publish)
	both.Merge(&after.publish)
	res.StreamPublishNoStreamsN = int(both.Count())
	res.StreamPublishNoStreamsP50MS, res.StreamPublishNoStreamsP99MS = ms(both.Quantile(0.50)), ms(both.Quantile(0.99))
}

// streamsOpen is how many streams the model's processes hold open
// (feedd_streams_open, summed).
func (r *runner) streamsOpen(ctx context.Context, m *modelRun) (float64, error) {
	s, err := r.metrics(ctx, m)
	if err != nil {
		return 0, fmt.Errorf("count the open streams: %w", err)
	}
	return s.sum("feedd_streams_open"), nil
}

// awaitStreamsClosed waits until the serve processes have seen every
// stream of the readers close (feedd_streams_open back to others, the
// streams that were open before them), so that the phase after them
// measures none of theirs.
func (r *runner) awaitStreamsClosed(ctx context.Context, m *modelRun, others float64) error {
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := r.streamsOpen(ctx, m)
		if err == nil && n <= others {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the serve processes still had %v streams open (%v before the readers) a minute after the readers stopped (%v)", n, others, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// streamPhase is one phase's publishes.
type streamPhase struct {
	mu      sync.Mutex
	publish report.Histogram
	errors  int
	posts   []streamPost // the two authors' posts
}

type streamPost struct {
	id       int64
	author   int   // index: 0 the celebrity (when there is one), last the ordinary author
	answered int64 // wall clock, Unix ns: it compares with the readers' arrivals (see readersRequest)
}

// streamPhase publishes StreamPosts posts alternating between the first
// author (a) and the second (b) — or only b when a is empty — one every
// StreamInterval, while the zero-follower author publishes one every
// StreamFillerInterval, and records every publish's latency, and when
// each of a's and b's posts was answered.
func (r *runner) streamPhase(ctx context.Context, m *modelRun, ph *streamPhase, a, aTok, b, bTok, zero, zeroTok string) error {
	start := time.Now()
	end := start.Add(time.Duration(r.o.StreamPosts) * r.o.StreamInterval)
	record := func(author string, tok string, content string) (int64, time.Time, bool) {
		id, took, err := r.publishAsLocked(ctx, m, author, tok, content)
		at := time.Now()
		ph.mu.Lock()
		defer ph.mu.Unlock()
		if err != nil {
			ph.errors++
			return 0, at, false
		}
		ph.publish.Record(took)
		return id, at, true
	}
	var wg sync.WaitGroup
	if r.o.StreamFillerInterval > 0 {
		wg.Go(func() {
			for i := 0; ; i++ {
				due := start.Add(time.Duration(i) * r.o.StreamFillerInterval)
				if !due.Before(end) || ctx.Err() != nil {
					return
				}
				time.Sleep(time.Until(due))
				record(zero, zeroTok, fmt.Sprintf("bench stream filler %s %s %d", m.name, r.tag, i))
			}
		})
	}
	bar := progress.New(r.o.Progress, "stream: posts", int64(r.o.StreamPosts))
	for i := 0; i < r.o.StreamPosts && ctx.Err() == nil; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * r.o.StreamInterval)))
		author, tok, k := b, bTok, 1
		if a == "" {
			k = 0
		} else if i%2 == 0 {
			author, tok, k = a, aTok, 0
		}
		id, at, ok := record(author, tok, fmt.Sprintf("bench stream %s %s %d", m.name, r.tag, i))
		if ok {
			ph.mu.Lock()
			ph.posts = append(ph.posts, streamPost{id: id, author: k, answered: at.UnixNano()})
			ph.mu.Unlock()
		}
		bar.Add(1)
	}
	bar.Done()
	wg.Wait()
	return ctx.Err()
}

// publishAsLocked is publishAs for concurrent publishers.
func (r *runner) publishAsLocked(ctx context.Context, m *modelRun, author, token, content string) (int64, time.Duration, error) {
	start := time.Now()
	id, err := m.cl.post(ctx, token, content)
	took := time.Since(start)
	if err == nil {
		r.mu.Lock()
		m.created = append(m.created, createdPost{id: id, author: author})
		r.mu.Unlock()
	}
	return id, took, err
}
