// Package load is feedd bench run and bench floor: it starts a feedd per
// timeline model (push, pull, hybrid), or measures a running deployment,
// and drives the scenarios over the HTTP API as a graph's users: one
// post's fan-out, home-feed reads by cohort (closed loop, then paced at a
// fixed rate), the Redis memory of each model, publish latency, and the
// mixed load. Next to each figure it measures a yardstick in the same
// run: the same Redis work issued directly, and an HTTP floor (a server
// that answers one of feedd's pages and does nothing else). The figures
// come back as a report.Report.
package load

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
	"github.com/feedd/feedd/internal/rediscache"
)

// Scenario names, in the order a model runs them. Memory and stream come
// before publish because publish leaves the celebrity's extra fan-outs
// running; fanout drops the inboxes it materialized before read and
// memory, so that memory measures what feedd's own reads built.
const (
	ScenarioFanout  = "fanout"
	ScenarioRead    = "read"
	ScenarioRanked  = "ranked"
	ScenarioMemory  = "memory"
	ScenarioStream  = "stream"
	ScenarioPublish = "publish"
)

// AllScenarios in run order: the default run. Stream (ten thousand
// connections) and mixed (minutes of load) run only when named.
var AllScenarios = []string{ScenarioFanout, ScenarioRead, ScenarioMemory, ScenarioPublish}

// runOrder is the order of every scenario but mixed, which runs last.
// Ranked, lists, search and notifications, like stream, run only when
// named.
var runOrder = []string{ScenarioFanout, ScenarioRead, ScenarioRanked, ScenarioLists, ScenarioSearch, ScenarioNotifications, ScenarioMemory, ScenarioStream, ScenarioPublish}

// AllModels are the timeline models feedd runs.
var AllModels = []string{string(feed.ModePush), string(feed.ModePull), string(feed.ModeHybrid)}

// RunOptions configure bench run.
type RunOptions struct {
	Command  string // the command line, for the report
	Manifest *graph.Manifest
	Models   []string
	// URL, when set, is the one deployment to measure (as Label) instead
	// of a child feedd per model.
	URL   string
	Label string
	// Exe and Env start the children: Env is the environment they inherit
	// (the FEEDD_* settings of the backends), before bench's own settings.
	Exe string
	Env []string
	// AdminToken mints user tokens; JWTSecret is given to the children.
	AdminToken, JWTSecret string
	// RunPrefix starts the Redis prefix (<RunPrefix><model>:) and the
	// RabbitMQ prefix (<RunPrefix><model>.) of every child, and of the
	// keys bench writes for its baselines.
	RunPrefix string
	RedisURL  string
	// RedisCluster is FEEDD_REDIS_CLUSTER: seed nodes of a Redis Cluster.
	RedisCluster string
	RedisPrefix  string // the deployment's, with URL
	AMQPURL      string
	InboxMax     int
	InboxGroups  int

	Scenarios          []string
	Concurrency        int
	Duration           time.Duration
	BaselineDuration   time.Duration
	MaxRequests        int64
	PublishCount       int
	FanoutAuthor       string
	FanoutTimeout      time.Duration
	VerifySample       int
	BaselineGoroutines int
	MemoryReaders      int
	MemoryMaxKeys      int
	// The stream scenario: StreamClients open streams; StreamPosts posts
	// per phase, one every StreamInterval, and a zero-follower author's
	// post every StreamFillerInterval (0: none).
	StreamClients int
	// ListReaders is how many readers of a cohort make a list in the
	// lists scenario (each takes one request per member).
	ListReaders          int
	StreamPosts          int
	StreamInterval       time.Duration
	StreamFillerInterval time.Duration
	// StreamTier, when set, serves the stream scenario's streams from a
	// second `feedd serve` child, a streaming tier apart from the API
	// (with WorkProcs only), run at a lower CPU priority: "nice:N" under
	// nice(1) at N, "idle" under SCHED_IDLE (chrt(1)). Empty: the API
	// child serves them.
	StreamTier string
	// ReadPacedFraction sets the rate of each cohort's paced read run: this
	// share of the cohort's Redis read baseline's requests/s (0: no paced
	// run).
	ReadPacedFraction float64
	// ReadFloor measures each cohort's HTTP floor after its baseline
	// (runner.readFloor); it needs Exe.
	ReadFloor bool
	// WorkProcs, when set, measures every model once per count: a
	// `feedd serve` child for the API and that many `feedd work`
	// children for the relay, dispatcher and workers, instead of one
	// `feedd all`. The runs are labelled <model>-w<count>.
	WorkProcs []int
	Keep      bool
	LogDir    string
	// Progress gets progress bars and status lines (stderr).
	Progress io.Writer
}

// DefaultRunOptions are the flags' defaults.
func DefaultRunOptions() RunOptions {
	return RunOptions{
		Models: AllModels, RunPrefix: "bench-", RedisPrefix: "feedd:", InboxMax: feed.DefaultInboxMax, InboxGroups: rediscache.DefaultInboxGroups,
		Scenarios: AllScenarios, Concurrency: 32, Duration: 10 * time.Second, BaselineDuration: 5 * time.Second,
		ReadPacedFraction: 0.3, ReadFloor: true, MaxRequests: 10_000_000, ListReaders: 20, PublishCount: 2000, FanoutTimeout: 10 * time.Minute,
		VerifySample: 1000, BaselineGoroutines: 8, MemoryReaders: 1000, MemoryMaxKeys: 200_000,
		StreamClients: 10_000, StreamPosts: 40, StreamInterval: 2 * time.Second, StreamFillerInterval: 20 * time.Millisecond,
		Progress: io.Discard,
	}
}

const (
	tokenTTL        = 6 * time.Hour
	materializeTTL  = 2 * time.Hour
	redisGoroutines = 64 // for materializing and dropping inboxes
	baselineBatch   = 1000
	pollEvery       = 100 * time.Millisecond
	stallAfter      = 60 * time.Second
)

// runner is one bench run.
type runner struct {
	o   RunOptions
	rdb redis.UniversalClient // nil without Redis
	rep *report.Report
	tag string // random, for bench's own key prefixes

	mu        sync.Mutex
	tokens    map[string]string
	followers map[string][]int64
}

// modelRun is one model being measured.
type modelRun struct {
	name       string
	url        string
	cl         *client
	workers    []*client         // the work processes' /metrics, with WorkProcs
	prefix     string            // feedd's Redis prefix
	amqpPrefix string            // feedd's RabbitMQ prefix (children only)
	cache      *rediscache.Cache // feedd's inboxes, through feedd's own layout
	pid        int               // the API child's process id; 0 with a URL
	pprof      string            // the API child's profiles (http://host:port), with the stream scenario
	env        []string          // the API child's environment, but its profiles' address
	res        *report.ModelResult

	created      []createdPost
	materialized []int64
}

type createdPost struct {
	id     int64
	author string
}

// Run measures every model and returns the report; the error joins the
// failures of scenarios, which the report also lists.
func Run(ctx context.Context, o RunOptions) (*report.Report, error) {
	if o.Manifest == nil {
		return nil, errors.New("bench run: no graph manifest")
	}
	for _, s := range o.Scenarios {
		if !slices.Contains(runOrder, s) && s != ScenarioMixed {
			return nil, fmt.Errorf("bench run: unknown scenario %q: want some of %s", s, strings.Join(append(slices.Clone(runOrder), ScenarioMixed), ","))
		}
	}
	if slices.Contains(o.Scenarios, ScenarioStream) {
		// Each stream is a file in the stream readers' process and in the
		// serve process, children of bench that inherit its limit (and
		// lift their own).
		if err := raiseOpenFiles(uint64(o.StreamClients) + 1024); err != nil {
			return nil, fmt.Errorf("bench run: %d streams: %w", o.StreamClients, err)
		}
	}
	if o.URL != "" {
		if _, err := fclient.New(o.URL); err != nil {
			return nil, fmt.Errorf("bench run: --url: %w", err)
		}
	}
	if o.URL == "" {
		for i, m := range o.Models {
			if !slices.Contains(AllModels, m) || slices.Contains(o.Models[:i], m) {
				return nil, fmt.Errorf("bench run: model %q unknown or repeated: want some of push,pull,hybrid", m)
			}
		}
		if len(o.Models) == 0 {
			return nil, errors.New("bench run: no model to measure")
		}
		if o.Exe == "" {
			return nil, errors.New("bench run: no feedd executable to start")
		}
	}
	if o.StreamTier != "" {
		// Checked here, not when the stream scenario comes after the
		// others have run.
		if o.URL != "" {
			return nil, errors.New("bench run: --stream-tier starts a feedd child, and --url measures a deployment bench does not start")
		}
		if _, _, err := tierLauncher(o.StreamTier); err != nil {
			return nil, fmt.Errorf("bench run: %w", err)
		}
	}
	if o.AdminToken == "" {
		return nil, errors.New("bench run: an admin token is needed to mint user tokens (FEEDD_ADMIN_TOKEN or --admin-token)")
	}
	if o.LogDir == "" {
		o.LogDir = "."
	}
	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("bench run: create the log dir: %w", err)
	}
	tag := make([]byte, 4)
	_, _ = rand.Read(tag)
	r := &runner{
		o: o, tag: hex.EncodeToString(tag),
		tokens: map[string]string{}, followers: map[string][]int64{},
		rep: &report.Report{
			Command: o.Command, StartedAt: time.Now().UTC(), Models: map[string]*report.ModelResult{}, Notes: []string{},
			Graph: report.GraphSummary{
				Users: o.Manifest.Users, Follows: o.Manifest.Follows, Posts: o.Manifest.Posts,
				Celebrities: len(o.Manifest.Celebrities), CelebrityFollowers: o.Manifest.Options.CelebrityFollowers,
				TopOrdinaryAuthor: o.Manifest.TopOrdinaryAuthor.Followers, Store: o.Manifest.Store, GraphSeconds: o.Manifest.Seconds,
			},
			Settings: report.Settings{
				Scenarios: o.Scenarios, Concurrency: o.Concurrency, DurationSeconds: o.Duration.Seconds(),
				BaselineSeconds: o.BaselineDuration.Seconds(), ReadPacedFraction: o.ReadPacedFraction, PublishCount: o.PublishCount,
				BaselineGoroutines: o.BaselineGoroutines, BaselinePipeline: baselineBatch,
				VerifySample: o.VerifySample, MemoryReaders: o.MemoryReaders, InboxMax: o.InboxMax,
				CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Target: cmpOr(o.URL, "children"),
			},
		},
	}
	if o.RedisURL != "" {
		rdb, err := rediscache.NewClient(o.RedisURL, o.RedisCluster, redisGoroutines+o.Concurrency)
		if err != nil {
			return nil, fmt.Errorf("bench run: FEEDD_REDIS_URL: %w", err)
		}
		r.rdb = rdb
		defer r.rdb.Close()
		if err := r.rdb.Ping(ctx).Err(); err != nil {
			return nil, fmt.Errorf("bench run: redis at %s: %w", cmpOr(o.RedisCluster, o.RedisURL), err)
		}
		if _, ok := rdb.(*redis.ClusterClient); ok {
			r.rep.Settings.RedisCluster = true
		}
		if info, err := r.rdb.Info(ctx, "server").Result(); err == nil {
			for _, line := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
					r.rep.Settings.RedisVersion = v
				}
			}
		}
	} else {
		r.note("no FEEDD_REDIS_URL: the fanout and memory scenarios and the Redis baselines are skipped")
	}

	var errs []error
	type runOf struct {
		name, mode string
		work       int // work processes; 0: one feedd all
	}
	var runs []runOf
	switch {
	case o.URL != "":
		runs = []runOf{{name: cmpOr(o.Label, "target")}}
	case len(o.WorkProcs) > 0:
		for _, m := range o.Models {
			for _, n := range o.WorkProcs {
				runs = append(runs, runOf{fmt.Sprintf("%s-w%d", m, n), m, n})
			}
		}
	default:
		for _, m := range o.Models {
			runs = append(runs, runOf{name: m, mode: m})
		}
	}
	for _, run := range runs {
		name := run.name
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		res := &report.ModelResult{FanoutMode: cmpOr(run.mode, name), WorkProcs: run.work, Errors: []string{}}
		r.rep.ModelOrder = append(r.rep.ModelOrder, name)
		r.rep.Models[name] = res
		if err := r.runModel(ctx, name, run.mode, run.work, res); err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
		for _, e := range res.Errors {
			errs = append(errs, fmt.Errorf("%s: %s", name, e))
		}
	}
	if o.URL != "" && o.PublishCount > 0 && slices.Contains(o.Scenarios, ScenarioPublish) && len(o.Manifest.Celebrities) > 0 {
		r.note(fmt.Sprintf("the deployment at %s may still be fanning out the celebrity's %d publish-scenario posts", o.URL, o.PublishCount+1))
	}
	r.rep.FinishedAt = time.Now().UTC()
	r.rep.Seconds = r.rep.FinishedAt.Sub(r.rep.StartedAt).Seconds()
	r.rep.ComputeTargets()
	return r.rep, errors.Join(errs...)
}

// ms converts a duration to fractional milliseconds, the unit of every
// latency in the report.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (r *runner) note(s string) { r.rep.Notes = append(r.rep.Notes, s) }

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.o.Progress, format+"\n", args...)
}

// token returns a user token for id, minted once per run: every child
// shares the JWT secret, so a token outlives the child that minted it.
func (r *runner) token(ctx context.Context, m *modelRun, id string) (string, error) {
	r.mu.Lock()
	tok, ok := r.tokens[id]
	r.mu.Unlock()
	if ok {
		return tok, nil
	}
	tok, err := m.cl.token(ctx, id, tokenTTL)
	if err != nil {
		return "", fmt.Errorf("token for user %s: %w", id, err)
	}
	r.mu.Lock()
	r.tokens[id] = tok
	r.mu.Unlock()
	return tok, nil
}

// tokensFor mints the tokens of many users, 16 at a time.
func (r *runner) tokensFor(ctx context.Context, m *modelRun, ids []string) ([]string, error) {
	toks := make([]string, len(ids))
	err := forEach(ctx, 16, len(ids), func(ctx context.Context, i int) error {
		var err error
		toks[i], err = r.token(ctx, m, ids[i])
		return err
	})
	return toks, err
}

// followersOf returns every follower id of author, read once per run over
// the API.
func (r *runner) followersOf(ctx context.Context, m *modelRun, token, author string, n int) ([]int64, error) {
	r.mu.Lock()
	ids, ok := r.followers[author]
	r.mu.Unlock()
	if ok {
		return ids, nil
	}
	bar := progress.New(r.o.Progress, "list followers", int64(n))
	ids, err := m.cl.followers(ctx, token, author, bar)
	bar.Done()
	if err != nil {
		return nil, fmt.Errorf("followers of %s: %w", author, err)
	}
	r.mu.Lock()
	r.followers[author] = ids
	r.mu.Unlock()
	return ids, nil
}

// materialize creates an empty inbox for every reader through feedd's own
// cache layout, as an active reader has one, so that fan-out writes them.
// They are marked incomplete: a read pages on from SQL past their end, so
// even against a real deployment no feed loses a post.
func (r *runner) materialize(ctx context.Context, m *modelRun, readers []int64) (time.Duration, error) {
	start := time.Now()
	bar := progress.New(r.o.Progress, "materialize inboxes", int64(len(readers)))
	err := forEach(ctx, redisGoroutines, len(readers), func(ctx context.Context, i int) error {
		if err := m.cache.FillInbox(ctx, readers[i], nil, false, materializeTTL); err != nil {
			return err
		}
		bar.Add(1)
		return nil
	})
	bar.Done()
	m.materialized = append(m.materialized, readers...)
	return time.Since(start), err
}

// dropInboxes deletes the inboxes bench materialized.
func (r *runner) dropInboxes(ctx context.Context, m *modelRun) error {
	readers := slices.Compact(slices.Sorted(slices.Values(m.materialized)))
	m.materialized = nil
	if len(readers) == 0 {
		return nil
	}
	bar := progress.New(r.o.Progress, "drop inboxes", int64(len(readers)))
	defer bar.Done()
	return forEach(ctx, redisGoroutines, len(readers), func(ctx context.Context, i int) error {
		bar.Add(1)
		return m.cache.DropInbox(ctx, readers[i])
	})
}

// quiesce waits until feedd has nothing left to fan out that bench can
// see: the outbox relayed and the inbox-write and dispatcher counters
// still for a second. A feedd that starts on a database where earlier
// events were never relayed fans them out first, and those writes must
// not count as the scenario's.
func (r *runner) quiesce(ctx context.Context, m *modelRun) {
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	still := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		s, err := r.metrics(ctx, m)
		if err == nil {
			state := fmt.Sprint(s.sum("feedd_fanout_inbox_writes_total"), s.sum("feedd_fanout_events_total"), s.sum("feedd_fanout_tasks_total"))
			if s.sum("feedd_outbox_backlog") <= 0 && state == last {
				if still++; still >= 10 {
					return
				}
			} else {
				still = 0
			}
			last = state
		}
		time.Sleep(pollEvery)
	}
	r.note(fmt.Sprintf("%s: feedd was still busy with earlier work after 2 minutes; its fan-out figures may include it", m.name))
}

// metrics scrapes the model's feedd: the one child or URL, plus its work
// processes, summed series by series (counters of several processes add
// up; bench reads only counters and the outbox backlog, a gauge every
// process reports alike, so the sum over-counts it but is zero when it
// is).
func (r *runner) metrics(ctx context.Context, m *modelRun) (scrape, error) {
	s, err := m.cl.metrics(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range m.workers {
		ws, err := c.metrics(ctx)
		if err != nil {
			return nil, err
		}
		for k, v := range ws {
			s[k] += v
		}
	}
	return s, nil
}

// writes reads feedd's inbox-write counter.
func (r *runner) writes(ctx context.Context, m *modelRun) (float64, error) {
	s, err := r.metrics(ctx, m)
	if err != nil {
		return 0, err
	}
	return s.sum("feedd_fanout_inbox_writes_total"), nil
}

// publishAs publishes one post and remembers it for teardown.
func (r *runner) publishAs(ctx context.Context, m *modelRun, author, token, content string) (int64, time.Duration, error) {
	start := time.Now()
	id, err := m.cl.post(ctx, token, content)
	took := time.Since(start)
	if err == nil {
		m.created = append(m.created, createdPost{id: id, author: author})
	}
	return id, took, err
}
