package census

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/inmemcache"
)

func TestQuantile(t *testing.T) {
	h := hist{Bounds: []float64{0.001, 0.002, 0.004}, Counts: []uint64{50, 30, 19, 1}}
	for _, tc := range []struct {
		q    float64
		want float64
	}{
		{0.5, 1},    // the 50th of 100 is the top of the first bucket
		{0.25, 0.5}, // half-way through the first
		{0.65, 1.5}, // half-way through the second
		{0.99, 4},   // the 99th is the top of the third
		{0.999, 4},  // above the last bound: the last bound
	} {
		got := h.quantileMs(tc.q)
		if got == nil || *got != tc.want {
			t.Errorf("quantileMs(%v) = %v; want %v ms", tc.q, deref(got), tc.want)
		}
	}
	if got := (hist{Bounds: []float64{1}, Counts: []uint64{0, 0}}).quantileMs(0.5); got != nil {
		t.Errorf("quantile of an empty histogram = %v; want nil", *got)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// process is one fake feedd process: its own registry with the metrics
// the heartbeat reads, as feedd registers them.
type process struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec
	lag      prometheus.Histogram
	writes   prometheus.Counter
	sql      *float64
	r        *Reporter
}

func newProcess(t *testing.T, clock *feedtest.Clock, board Board, role string, pid int, cacheState breaker.State) *process {
	t.Helper()
	p := &process{reg: prometheus.NewRegistry()}
	p.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: metricRequests, Buckets: []float64{0.001, 0.01, 0.1},
	}, []string{"route", "method", "code"})
	p.lag = prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricLag, Buckets: []float64{0.01, 0.1, 1}})
	p.writes = prometheus.NewCounter(prometheus.CounterOpts{Name: metricInboxWrites})
	p.reg.MustRegister(p.requests, p.lag, p.writes)
	sql := 0.0
	p.sql = &sql
	p.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricSQLBreaker}, func() float64 { return *p.sql }))
	p.r = NewReporter(nil, Config{Role: role, Version: "test", Host: "h", PID: pid, Interval: time.Second, Window: 10 * time.Second, Now: clock.Now},
		board, p.reg, func() map[string]breaker.State { return map[string]breaker.State{"redis 10.0.0.1:6379": cacheState} })
	return p
}

func (p *process) beat(t *testing.T) {
	t.Helper()
	if err := p.r.Beat(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type fakeOutbox struct {
	n      int64
	oldest time.Time
	err    error
}

func (f fakeOutbox) OutboxOldest(context.Context) (int64, time.Time, error) {
	return f.n, f.oldest, f.err
}

type fakeQueues struct {
	depth, dead map[string]int
	err         error
	requeued    []string
}

func (f *fakeQueues) Pending(_ context.Context, q string) (int, error) { return f.depth[q], f.err }
func (f *fakeQueues) DeadLetters(_ context.Context, q string) (int, error) {
	return f.dead[q], f.err
}
func (f *fakeQueues) Requeue(_ context.Context, q string, max int) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	f.requeued = append(f.requeued, q)
	n := f.dead[q]
	f.dead[q] = 0
	return n, nil
}

type fakeSwitches struct{ on map[degrade.Switch]bool }

func (f fakeSwitches) Snapshot() map[degrade.Switch]bool { return f.on }
func (f fakeSwitches) Level() int                        { return 2 }

// TestOverviewSumsTheProcesses runs two serving processes and a worker on
// one board and a fake clock, and checks what the console makes of them.
func TestOverviewSumsTheProcesses(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clock := feedtest.NewClock(start)
	board := inmemcache.New(inmemcache.Options{Now: clock.Now})
	t.Cleanup(func() { board.Close() })

	web1 := newProcess(t, clock, board, "serve", 1, breaker.Closed)
	web2 := newProcess(t, clock, board, "serve", 2, breaker.Open)
	work := newProcess(t, clock, board, "work", 3, breaker.Closed)
	all := []*process{web1, web2, work}
	for _, p := range all {
		p.beat(t) // the baselines
	}

	// In 10 s: web1 answers 10 publishes in under 1 ms, 40 reads in
	// 1-10 ms, 1 of them a 503; web2 answers 10 publishes in 10-100 ms
	// and its SQL breaker is half-open; the worker writes 300 inboxes.
	for range 10 {
		web1.requests.WithLabelValues("/v1/posts", "POST", "201").Observe(0.0005)
		web2.requests.WithLabelValues("/v1/posts", "POST", "201").Observe(0.05)
	}
	for range 39 {
		web1.requests.WithLabelValues("/v1/me/feed", "GET", "200").Observe(0.005)
	}
	web1.requests.WithLabelValues("/v1/me/feed", "GET", "503").Observe(0.005)
	web1.requests.WithLabelValues("/v1/users", "POST", "201").Observe(0.005) // neither
	*web2.sql = float64(breaker.HalfOpen)
	for range 100 {
		work.lag.Observe(0.05)
	}
	work.writes.Add(300)
	clock.Add(10 * time.Second)
	for _, p := range all {
		p.beat(t)
	}

	queues := &fakeQueues{depth: map[string]int{"posts": 1, "tasks": 2, "likes": 3}, dead: map[string]int{"tasks": 4}}
	con := NewConsole(nil, web1.r, board, fakeOutbox{n: 5, oldest: start.Add(7 * time.Second)}, queues,
		fakeSwitches{on: map[degrade.Switch]bool{"L1": false, "L2": true, "L3": false, "L4": false}})
	o, err := con.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.WindowSeconds != 10 || o.HeartbeatSeconds != 1 {
		t.Errorf("window, heartbeat = %v, %v; want 10, 1", o.WindowSeconds, o.HeartbeatSeconds)
	}
	if o.Publish.PerSecond != 2 || o.Read.PerSecond != 4 || o.Read.ErrorsPerSecond != 0.1 || o.Publish.ErrorsPerSecond != 0 {
		t.Errorf("publish %+v, read %+v; want 2/s and 4/s with 0.1 errors/s", o.Publish, o.Read)
	}
	// Merged: half the publishes under 1 ms, half in 10-100 ms: the
	// median is the top of the first bucket, the p99 near 100 ms.
	if got := deref(o.Publish.P50Ms); got != 1.0 {
		t.Errorf("publish p50 = %v ms; want 1", got)
	}
	if got := deref(o.Publish.P99Ms); got != 98.2 {
		t.Errorf("publish p99 = %v ms; want 98.2 (the merged histogram's)", got)
	}
	if o.Fanout.InboxWritesPerSecond != 30 || deref(o.Fanout.LagP50Ms) != 55.0 {
		t.Errorf("fanout = %+v; want 30 inbox writes/s, lag p50 55 ms", o.Fanout)
	}
	if *o.Outbox.Unsent != 5 || *o.Outbox.OldestAgeSeconds != 3 {
		t.Errorf("outbox = %v, %v; want 5 unsent, the oldest 3 s old", *o.Outbox.Unsent, *o.Outbox.OldestAgeSeconds)
	}
	wantQueues := []Queue{{"posts", ptr(1), ptr(0)}, {"tasks", ptr(2), ptr(4)}, {"likes", ptr(3), ptr(0)}}
	if !slices.EqualFunc(o.Queues, wantQueues, func(a, b Queue) bool {
		return a.Name == b.Name && *a.Depth == *b.Depth && *a.DeadLetters == *b.DeadLetters
	}) {
		t.Errorf("queues = %+v; want %+v", o.Queues, wantQueues)
	}
	if !o.Degradation.Switches["L2"] || o.Degradation.Level != 2 {
		t.Errorf("degradation = %+v; want L2 on, level 2", o.Degradation)
	}
	wantBreakers := []Breaker{
		{BreakerState: BreakerState{Name: "redis 10.0.0.1:6379", State: "open"}, Open: 1, Processes: 3},
		{BreakerState: BreakerState{Name: "sql", State: "half-open"}, Open: 0, Processes: 3},
	}
	if !slices.Equal(o.Breakers, wantBreakers) {
		t.Errorf("breakers = %+v; want %+v", o.Breakers, wantBreakers)
	}
	var ids []string
	for _, p := range o.Processes {
		ids = append(ids, p.Role+" "+p.ID)
	}
	if want := []string{"serve h:1", "serve h:2", "work h:3"}; !slices.Equal(ids, want) {
		t.Fatalf("processes = %q; want %q", ids, want)
	}
	if p := o.Processes[1]; p.Publish.PerSecond != 1 || p.Read.PerSecond != 0 || p.Version != "test" || !p.StartedAt.Equal(start) || !p.LastSeen.Equal(start.Add(10*time.Second)) {
		t.Errorf("web2 = %+v; want 1 publish/s, version test, started %v, last seen 10 s later", p, start)
	}
	if len(o.Problems) != 0 {
		t.Errorf("problems = %q; want none", o.Problems)
	}

	// The worker stops; three intervals later it is gone, the others
	// still beating.
	clock.Add(3 * time.Second)
	web1.beat(t)
	web2.beat(t)
	o, err = con.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Processes) != 2 || o.Fanout.InboxWritesPerSecond != 0 {
		t.Errorf("after the worker stopped: %d processes, %v inbox writes/s; want 2, 0", len(o.Processes), o.Fanout.InboxWritesPerSecond)
	}

	moved, err := con.Requeue(ctx, []string{feed.QueueTasks, feed.QueueLikes})
	if err != nil || moved["tasks"] != 4 || moved["likes"] != 0 || len(moved) != 2 {
		t.Errorf("Requeue = %v, %v; want tasks 4, likes 0", moved, err)
	}
}

func ptr(n int64) *int64 { return &n }

// TestOverviewWithoutBackends: each backend that fails nulls its figures
// and names itself in problems; the answering process still lists itself.
func TestOverviewWithoutBackends(t *testing.T) {
	ctx := context.Background()
	clock := feedtest.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	board := inmemcache.New(inmemcache.Options{Now: clock.Now})
	self := newProcess(t, clock, board, "all", 1, breaker.Closed)
	self.beat(t)
	board.Close() // the cache is gone

	down := errors.New("connection refused")
	con := NewConsole(nil, self.r, board, fakeOutbox{err: down}, &fakeQueues{err: down}, nil)
	o, err := con.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.Outbox.Unsent != nil || o.Outbox.OldestAgeSeconds != nil {
		t.Errorf("outbox = %+v; want nulls", o.Outbox)
	}
	for _, q := range o.Queues {
		if q.Depth != nil || q.DeadLetters != nil {
			t.Errorf("queue %s = %v, %v; want nulls", q.Name, q.Depth, q.DeadLetters)
		}
	}
	if len(o.Queues) != 3 {
		t.Errorf("queues = %d; want the three, figures null", len(o.Queues))
	}
	if len(o.Processes) != 1 || o.Processes[0].ID != "h:1" {
		t.Errorf("processes = %+v; want this one", o.Processes)
	}
	want := []string{
		"processes: the cache did not answer; only this process is shown",
		"outbox: SQL did not answer",
		"queues: the broker did not answer",
	}
	if !slices.Equal(o.Problems, want) {
		t.Errorf("problems = %q; want %q", o.Problems, want)
	}
	if _, err := con.Requeue(ctx, []string{"tasks"}); !errors.Is(err, down) {
		t.Errorf("Requeue with the broker down = %v; want its error", err)
	}
}

// TestRunBeatsAndForgets: Run writes a heartbeat at once and deletes it
// when it stops, well before its ttl would have.
func TestRunBeatsAndForgets(t *testing.T) {
	board := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { board.Close() })
	r := NewReporter(nil, Config{Role: "work", Host: "h", PID: 7, Interval: time.Hour}, board, prometheus.NewRegistry(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		beats, err := board.Beats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := beats["h:7"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat of h:7 after 5 s: %v", beats)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if beats, err := board.Beats(context.Background()); err != nil || len(beats) != 0 {
		t.Errorf("heartbeats after Run stopped = %v, %v; want none", beats, err)
	}
}
