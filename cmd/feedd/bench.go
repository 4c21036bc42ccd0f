package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/bench/load"
	"github.com/feedd/feedd/internal/sqlstore"
)

// runBench is `feedd bench graph|run|floor`: the load tool, in the same
// binary so that it can start feedd itself for each timeline model. The
// backend settings are feedd's own (FEEDD_MYSQL_DSN or FEEDD_POSTGRES_DSN,
// FEEDD_REDIS_URL, ...): bench run's children inherit them with the rest
// of its environment. The bench's own knobs are flags, each also read
// from FEEDD_BENCH_<FLAG>.
func runBench(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	table := benchCommands()
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		var b strings.Builder
		b.WriteString("usage: feedd bench <command> [flags]\n\nThe load tool: it writes a synthetic graph, drives workloads over the HTTP API\nfor each timeline model and reports the figures.\n\ncommands:\n")
		writeCommands(&b, table)
		b.WriteString("\n\"feedd help bench <command>\" lists the command's flags; docs/BENCH.md explains the figures.\n")
		io.WriteString(stderr, b.String())
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			return flag.ErrHelp
		}
		return usageError{errors.New("bench: want a command: graph, run or floor")}
	}
	c, ok := findCommand(table, args[0])
	if !ok {
		return usageError{fmt.Errorf("bench: unknown command %q: want graph, run or floor", args[0])}
	}
	return c.run(ctx, args[1:], getenv, stdin, stdout, stderr)
}

// benchCommands is bench's command table.
func benchCommands() []command {
	return []command{
		{name: "graph", summary: "write a synthetic social graph into the SQL store (FEEDD_MYSQL_DSN, FEEDD_POSTGRES_DSN or the embedded SQLite)", run: benchGraph},
		{name: "run", summary: "drive workloads over the HTTP API for push, pull and hybrid, and report", run: benchRun},
		{name: "floor", summary: "serve one file on every request: the HTTP floor bench run measures reads against", run: benchFloor},
		// bench run's stream scenario starts it to read the live streams
		// out of its own process.
		{name: "stream-readers", hidden: true, run: benchStreamReaders},
	}
}

func benchStreamReaders(ctx context.Context, args []string, _ func(string) string, stdin io.Reader, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return usageError{errors.New("bench stream-readers: no flags; bench run starts it and sends its streams on stdin")}
	}
	return load.RunStreamReaders(ctx, stdin, stdout)
}

// newBenchFlags is the flag set of a bench command: its own flags read
// FEEDD_BENCH_<FLAG>.
func newBenchFlags(name string, getenv func(string) string, stderr io.Writer, about string) *flagSet {
	f := newFlagSet("feedd bench "+name, getenv, stderr, "usage: feedd bench "+name+" [flags]\n\n"+about+"\n")
	f.envPrefix = "FEEDD_BENCH_"
	return f
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$\\") {
			a = strconv.Quote(a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// ints parses "50,500,5000".
func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func list(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func benchGraph(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	o := graph.DefaultOptions()
	var cfg config
	var out, cohorts string
	var workers int
	var seed int
	var appendTo bool
	var jsonl string
	var likesPerPost int
	f := newBenchFlags("graph", getenv, stderr, "Writes a synthetic social graph into the SQL store (or, with --jsonl, as files for\nfeedd import) and a manifest for bench run; docs/BENCH.md describes its shape.")
	f.settings(&cfg, "mysql-dsn", "postgres-dsn", "shards", "shard-dsns", "data-dir")
	f.reword("mysql-dsn", "MySQL/MariaDB DSN of the store to fill; empty: FEEDD_POSTGRES_DSN's, or the embedded SQLite in the data dir")
	f.reword("postgres-dsn", "PostgreSQL connection string (URL or keywords) of the store to fill; not with FEEDD_MYSQL_DSN")
	f.num(&o.Users, "users", o.Users, "accounts in the graph, special ones included")
	f.num(&o.Celebrities, "celebrities", o.Celebrities, "authors with exactly --celebrity-followers followers each")
	f.num(&o.CelebrityFollowers, "celebrity-followers", o.CelebrityFollowers, "followers of each celebrity (at most --users minus the zero-follower author and the cohort readers)")
	f.num(&o.PostsPerUser, "posts-per-user", o.PostsPerUser, "posts of every user, spread over --post-span before now, inserted without outbox events")
	f.dur(&o.PostSpan, "post-span", o.PostSpan, "how far back the posts go")
	f.num(&o.PostBytes, "post-bytes", o.PostBytes, "length of a post's content")
	f.num(&o.Following, "following", o.Following, "mean number of ordinary authors an ordinary user follows")
	f.float(&o.ZipfS, "zipf-s", o.ZipfS, "Zipf exponent (> 1) of the follower counts of ordinary authors")
	f.num(&o.MaxFollowers, "max-followers", 0, "expected followers of the most followed ordinary author; 0: min(users/50, celebrity-followers/10)")
	f.str(&cohorts, "cohorts", "50,500,5000", "following counts of the reader cohorts")
	f.num(&o.CohortReaders, "cohort-readers", o.CohortReaders, "readers per cohort")
	f.num(&o.CohortCelebrities, "cohort-celebrities", o.CohortCelebrities, "celebrities among a cohort reader's followees (at most --celebrities)")
	f.num(&o.SampleUsers, "sample-users", o.SampleUsers, "random ordinary users listed in the manifest (the memory scenario's readers)")
	f.num(&seed, "seed", int(o.Seed), "random seed: the same seed draws the same graph shape")
	f.num(&workers, "workers", 4, "concurrent insert transactions (SQLite serializes them anyway)")
	f.str(&out, "out", "bench-graph.json", "manifest file to write, for bench run --graph")
	f.boolean(&appendTo, "append", false, "allow a database that already holds users (bench graph expects a fresh one)")
	f.str(&jsonl, "jsonl", "", "write the graph as JSON Lines files for feedd import into this directory (users.jsonl, follows.jsonl, posts.jsonl, likes.jsonl), not into the store")
	f.num(&likesPerPost, "likes-per-post", 4, "with --jsonl: likes of every post, by users drawn from the post's id")
	if err := f.parse(args); err != nil {
		return err
	}
	if err := cfg.checkSQL(); err != nil {
		return err
	}
	var err error
	if o.Cohorts, err = ints(cohorts); err != nil {
		return usageError{fmt.Errorf("bench graph: --cohorts: %w", err)}
	}
	o.Seed = uint64(seed)
	if cfg.sharded() {
		// Post ids carry their author's shard, as published ones do.
		o.Shards = cfg.shards
	}

	begin := time.Now()
	g, err := graph.Plan(o, begin)
	if err != nil {
		return err
	}
	if jsonl != "" {
		return benchGraphJSONL(ctx, g, o, jsonl, likesPerPost, out, stdout, stderr)
	}
	store, err := openStore(ctx, cfg, sqlstore.Pools{}, sqlstore.Timeouts{})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	// The graph goes straight into the tables through the store's bulk
	// API, past the store's rules (sqlstore's BulkLoadUsers says which).
	if has, err := store.AnyUsers(ctx); err != nil {
		return err
	} else if has && !appendTo {
		return errors.New("bench graph: the database already holds users; use a fresh database, or --append")
	}
	fmt.Fprintf(stderr, "bench graph: %d users, %d follows, %d posts into %s\n", o.Users, g.Follows(), g.Posts(), cfg.sqlBackend())
	m, err := g.Load(ctx, graph.NewSQLLoader(store), workers, stderr)
	if err != nil {
		return err
	}
	m.Store = cfg.sqlBackend()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench graph: write manifest: %w", err)
	}
	for _, n := range m.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	fmt.Fprintf(stdout, "bench graph: %d users, %d follows, %d posts in %.1fs (%.0f rows/s); manifest %s\n",
		m.Users, m.Follows, m.Posts, m.Seconds, float64(int64(m.Users)+m.Follows+m.Posts)/m.Seconds, out)
	for _, c := range m.Celebrities {
		fmt.Fprintf(stdout, "  celebrity %s: %d followers\n", c.ID, c.Followers)
	}
	fmt.Fprintf(stdout, "  zero-follower author %s; most followed ordinary author %s: %d followers\n", m.ZeroFollowerAuthor.ID, m.TopOrdinaryAuthor.ID, m.TopOrdinaryAuthor.Followers)
	for _, c := range m.Cohorts {
		fmt.Fprintf(stdout, "  cohort %s: %d readers, each following %d accounts (%d celebrities)\n", c.Name, len(c.Readers), c.Following, c.Celebrities)
	}
	return nil
}

// benchGraphJSONL writes g as the files feedd import reads, and the
// manifest, for measuring an import on the bench's graph.
func benchGraphJSONL(ctx context.Context, g *graph.Graph, o graph.Options, dir string, likesPerPost int, out string, stdout, stderr io.Writer) error {
	if likesPerPost < 0 {
		return usageError{fmt.Errorf("bench graph: --likes-per-post %d: want 0 or more", likesPerPost)}
	}
	w, err := graph.NewJSONLWriter(dir, likesPerPost)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench graph: %d users, %d follows, %d posts, %d likes into %s\n", o.Users, g.Follows(), g.Posts(), g.Posts()*int64(min(likesPerPost, o.Users)), dir)
	m, err := g.Load(ctx, w, 1, stderr)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	m.Store = "jsonl"
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench graph: write manifest: %w", err)
	}
	fmt.Fprintf(stdout, "bench graph: %d users, %d follows, %d posts in %.1fs; files in %s, manifest %s\n", m.Users, m.Follows, m.Posts, m.Seconds, dir, out)
	return nil
}

// benchFloor is `feedd bench floor`, the server of bench run's HTTP floor.
func benchFloor(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	var addr, bodyFile string
	f := newBenchFlags("floor", getenv, stderr, "Serves one file on every request, as application/json: the HTTP floor bench run\nmeasures feedd's reads against (--read-floor).")
	f.str(&addr, "addr", "127.0.0.1:0", "address to listen on")
	f.str(&bodyFile, "body", "", "file whose bytes answer every request, as application/json")
	if err := f.parse(args); err != nil {
		return err
	}
	body, err := os.ReadFile(bodyFile)
	if err != nil {
		return fmt.Errorf("bench floor: --body: %w", err)
	}
	return load.ServeFloor(ctx, addr, body, stdout)
}

func benchRun(ctx context.Context, args []string, getenv func(string) string, _ io.Reader, stdout, stderr io.Writer) error {
	command := "feedd bench " + quoteArgs(append([]string{"run"}, args...))
	o := load.DefaultRunOptions()
	var graphFile, models, scenarios, jsonOut, htmlOut, exe, workProcs string
	var maxReq int
	workers := 8
	if v, err := strconv.Atoi(getenv("FEEDD_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	f := newBenchFlags("run", getenv, stderr, "Drives workloads over the HTTP API, for each timeline model with a feedd child of\nits own (or against --url), and reports the figures; docs/BENCH.md explains them.")
	f.str(&graphFile, "graph", "bench-graph.json", "manifest written by bench graph")
	f.str(&models, "models", strings.Join(load.AllModels, ","), "timeline models to measure, each with its own feedd child")
	f.str(&scenarios, "scenarios", "fanout,publish,read,memory", "scenarios to run (always in the order fanout, read, ranked, lists, search, notifications, memory, stream, publish, mixed); ranked (the ranked feed against the latest), lists (list feeds against home feeds), search (finding people against home feeds), notifications (those of a post liked by every follower of a celebrity, against home feeds), stream (the live streams) and mixed (the 90/7/2/1 load) only when named")
	f.str(&o.URL, "url", "", "measure this running deployment instead of starting feedd per model")
	f.str(&o.Label, "label", "", "name of the --url deployment in the report (default: the one --models value, or target)")
	// The deployment's settings: the roles' own, read as bench means them.
	var cfg config
	f.settings(&cfg, "admin-token", "jwt-secret", "redis-url", "redis-cluster", "redis-prefix", "amqp-url", "inbox-max", "inbox-groups")
	f.reword("admin-token", "admin token: the --url deployment's, or the one bench gives its children (generated when empty)")
	f.reword("jwt-secret", "user-token secret given to the children; generated when empty")
	f.reword("redis-url", "Redis of the deployment: bench materializes inboxes, measures baselines and memory there")
	f.reword("redis-cluster", "seed nodes of the deployment's Redis Cluster (host:port,…), when FEEDD_REDIS_URL is not a redis+cluster:// URL")
	f.reword("redis-prefix", "with --url, the deployment's Redis key prefix")
	f.reword("amqp-url", "RabbitMQ of the children, whose queues bench deletes afterwards")
	f.reword("inbox-max", "the deployment's inbox length")
	f.reword("inbox-groups", "the deployment's inbox hash tags")
	f.str(&o.RunPrefix, "run-prefix", o.RunPrefix, "start of every Redis and RabbitMQ prefix bench gives its children and its own keys")
	f.num(&o.Concurrency, "concurrency", o.Concurrency, "concurrent clients of the read scenario")
	f.dur(&o.Duration, "duration", o.Duration, "how long each cohort's reads run, and the mixed load")
	f.dur(&o.BaselineDuration, "baseline-duration", o.BaselineDuration, "how long each cohort's Redis read baseline runs")
	f.float(&o.ReadPacedFraction, "read-paced-fraction", o.ReadPacedFraction, "after the baseline, each cohort's reads run again for --duration, paced: the --concurrency clients offer this share of the baseline's requests/s, open loop (0: no paced run)")
	f.boolean(&o.ReadFloor, "read-floor", o.ReadFloor, "after the baseline, each cohort's HTTP floor: the same clients read one of feedd's pages for --baseline-duration from a server that does nothing else (feedd bench floor)")
	f.num(&maxReq, "max-requests", int(o.MaxRequests), "upper bound on the requests of one read run")
	f.num(&o.PublishCount, "publish-count", o.PublishCount, "publishes per author in the publish scenario")
	f.str(&o.FanoutAuthor, "fanout-author", "", "author id of the fanout scenario (default: the first celebrity)")
	f.dur(&o.FanoutTimeout, "fanout-timeout", o.FanoutTimeout, "give up on a fan-out, or the publish loop, after this long")
	f.num(&o.VerifySample, "verify-sample", o.VerifySample, "inboxes checked for the post after the fan-out")
	f.num(&o.BaselineGoroutines, "baseline-goroutines", workers, "goroutines of the raw ZADD baseline (default: FEEDD_WORKERS, as many as feedd's batch workers)")
	f.num(&o.MemoryReaders, "memory-readers", o.MemoryReaders, "sample readers who read once before the memory is measured")
	f.num(&o.MemoryMaxKeys, "memory-max-keys", o.MemoryMaxKeys, "measure at most this many keys (a random sample) and extrapolate")
	f.num(&o.ListReaders, "list-readers", o.ListReaders, "readers of each cohort who make a list of everyone they follow in the lists scenario (a request per member)")
	f.num(&o.StreamClients, "stream-clients", o.StreamClients, "live streams the stream scenario opens, for followers of the first celebrity and of the most followed ordinary author")
	f.num(&o.StreamPosts, "stream-posts", o.StreamPosts, "posts by those two authors, alternating, in each phase of the stream scenario (with no stream open, then with them open)")
	f.dur(&o.StreamInterval, "stream-interval", o.StreamInterval, "one post of the stream scenario's two authors every this long")
	f.dur(&o.StreamFillerInterval, "stream-filler-interval", o.StreamFillerInterval, "meanwhile, one post by the author nobody follows every this long, for the publish latency's samples (0: none)")
	f.str(&o.StreamTier, "stream-tier", "", "with --work-procs: serve the stream scenario's streams from a second feedd serve child, a streaming tier apart from the API, at a lower CPU priority: nice:N (nice -n N) or idle (chrt --idle 0); empty: from the API child")
	f.str(&workProcs, "work-procs", "", "measure each model once per count in this list (e.g. 1,2,4): a feedd serve child and that many feedd work children instead of one feedd all")
	f.boolean(&o.Keep, "keep", false, "keep each child's Redis keys and queues after its run")
	f.str(&o.LogDir, "log-dir", "", "where the children's logs go (default: a new temporary directory)")
	f.str(&jsonOut, "json", "", "write every figure to this JSON file")
	f.str(&htmlOut, "html", "", "write a self-contained HTML report with SVG charts to this file")
	f.str(&exe, "exe", "", "feedd binary to start per model (default: this one)")
	if err := f.parse(args); err != nil {
		return err
	}
	o.AdminToken, o.JWTSecret, o.RedisURL, o.RedisCluster = cfg.adminToken, cfg.jwtSecret, cfg.redisURL, cfg.redisCluster
	o.RedisPrefix, o.AMQPURL, o.InboxMax, o.InboxGroups = cfg.redisPrefix, cfg.amqpURL, cfg.inboxMax, cfg.inboxGroups
	o.MaxRequests = int64(maxReq)
	for _, s := range list(workProcs) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 64 {
			return usageError{fmt.Errorf("bench run: --work-procs %q: want counts from 1 to 64, e.g. 1,2,4", workProcs)}
		}
		o.WorkProcs = append(o.WorkProcs, n)
	}
	if len(o.WorkProcs) > 0 && o.URL != "" {
		return usageError{errors.New("bench run: --work-procs starts children; it does not go with --url")}
	}
	o.Models, o.Scenarios, o.Command = list(models), list(scenarios), command
	if o.URL != "" && o.Label == "" && len(o.Models) == 1 {
		o.Label = o.Models[0]
	}
	if o.StreamClients < 1 || o.StreamPosts < 1 || o.StreamInterval <= 0 || o.StreamFillerInterval < 0 {
		return usageError{errors.New("bench run: --stream-clients, --stream-posts and --stream-interval must be positive")}
	}
	if o.Concurrency < 1 || o.Duration <= 0 || o.BaselineDuration <= 0 || o.PublishCount < 0 || o.BaselineGoroutines < 1 || o.MaxRequests < 1 {
		return usageError{errors.New("bench run: --concurrency, --duration, --baseline-duration, --baseline-goroutines and --max-requests must be positive")}
	}
	if o.ReadPacedFraction < 0 || math.IsNaN(o.ReadPacedFraction) || math.IsInf(o.ReadPacedFraction, 0) {
		return usageError{fmt.Errorf("bench run: --read-paced-fraction %v: want a share of the baseline's rate, e.g. 0.3, or 0 for no paced run", o.ReadPacedFraction)}
	}

	raw, err := os.ReadFile(graphFile)
	if err != nil {
		return fmt.Errorf("bench run: read the graph manifest (bench graph --out): %w", err)
	}
	o.Manifest = &graph.Manifest{}
	if err := json.Unmarshal(raw, o.Manifest); err != nil {
		return fmt.Errorf("bench run: %s: %w", graphFile, err)
	}

	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("bench run: find the feedd binary: %w", err)
		}
	}
	o.Exe = exe // the children, and the HTTP floor even with --url
	if o.URL == "" {
		o.Env = os.Environ()
		if o.AdminToken == "" {
			o.AdminToken = "bench-" + randomHex(16)
		}
		if o.JWTSecret == "" {
			o.JWTSecret = randomHex(32)
		}
		if o.LogDir == "" {
			if o.LogDir, err = os.MkdirTemp("", "feedd-bench-"); err != nil {
				return err
			}
		}
		fmt.Fprintf(stderr, "bench run: children's logs in %s\n", o.LogDir)
	}
	o.Progress = stderr

	rep, runErr := load.Run(ctx, o)
	if rep == nil {
		return runErr
	}
	fmt.Fprintln(stdout)
	if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("bench run: write %s: %w", jsonOut, err)
		}
		fmt.Fprintf(stdout, "figures: %s\n", jsonOut)
	}
	if htmlOut != "" {
		fh, err := os.Create(htmlOut)
		if err != nil {
			return fmt.Errorf("bench run: %w", err)
		}
		err = rep.WriteHTML(fh)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("bench run: write %s: %w", htmlOut, err)
		}
		fmt.Fprintf(stdout, "report: %s\n", htmlOut)
	}
	if runErr != nil {
		return fmt.Errorf("bench run: some scenarios failed:\n%w", runErr)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
