package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/bench/report/reporttest"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/testenv"
)

// The end-to-end test builds feedd, writes a tiny graph into a fresh
// database (MariaDB, and PostgreSQL in a subtest of its own) with `feedd
// bench graph`, and runs `feedd bench run` over all three models against
// the real Redis (database 5, a random prefix) and RabbitMQ (a random
// prefix), as a user would. Without the services it skips loudly; under
// CI=true it fails.

const e2eRedis = "redis://127.0.0.1:6379/5"

// buildFeedd compiles the feedd command into dir.
func buildFeedd(t *testing.T, dir string) string {
	t.Helper()
	exe := filepath.Join(dir, "feedd")
	cmd := exec.Command("go", "build", "-o", exe, "github.com/feedd/feedd/cmd/feedd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build feedd: %v\n%s", err, out)
	}
	return exe
}

// feeddCmd runs the built feedd with args in env and returns its output.
func feeddCmd(t *testing.T, ctx context.Context, exe string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("feedd %s: %v\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("feedd %s: %v", args[0], err)
	}
	return out.String()
}

// sqlBackend is a SQL database bench's children run on.
type sqlBackend struct {
	name string // the subtest's name
	env  string // the variable that names the database to feedd
	// create makes a database of the test's own, dropped when it ends,
	// and returns its DSN.
	create func(tb testing.TB, prefix string) string
}

var (
	mariaDB  = sqlBackend{"mariadb", "FEEDD_MYSQL_DSN", testenv.CreateDatabase}
	postgres = sqlBackend{"postgres", "FEEDD_POSTGRES_DSN", testenv.CreatePostgresDatabase}
)

// requireServices skips the test loudly (fails it under CI=true) unless
// db's server, Redis and RabbitMQ answer.
func requireServices(t *testing.T, db sqlBackend) {
	t.Helper()
	if db.env != postgres.env {
		feedtest.RequireServices(t)
		return
	}
	u, err := url.Parse(testenv.PostgresDSN())
	if err != nil {
		t.Fatalf("FEEDD_TEST_POSTGRES_DSN: %v", err)
	}
	feedtest.RequireServices(t, u.Host, "127.0.0.1:6379", "127.0.0.1:5672")
}

// childEnv creates a database on db for one test, dropped when it ends,
// and returns the environment of the feedd children bench starts: the
// test's own, less the developer's FEEDD_* settings, plus that database,
// redisURL, the broker, fresh secrets, quiet logs and extra.
func childEnv(t *testing.T, db sqlBackend, dbPrefix, redisURL string, extra ...string) []string {
	t.Helper()
	dsn := db.create(t, dbPrefix)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FEEDD_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		db.env+"="+dsn,
		"FEEDD_REDIS_URL="+redisURL,
		"FEEDD_AMQP_URL="+testenv.AMQPURL(),
		"FEEDD_ADMIN_TOKEN=admin-"+testenv.RandHex(16),
		"FEEDD_JWT_SECRET="+testenv.RandHex(16),
		"FEEDD_LOG_LEVEL=warn",
	)
	return append(env, extra...)
}

func TestBenchEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds feedd and runs it three times")
	}
	for _, db := range []sqlBackend{mariaDB, postgres} {
		t.Run(db.name, func(t *testing.T) { benchEndToEnd(t, db) })
	}
}

func benchEndToEnd(t *testing.T, db sqlBackend) {
	requireServices(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	exe := buildFeedd(t, dir)

	redisURL := testenv.Getenv("FEEDD_TEST_BENCH_REDIS_URL", e2eRedis)
	runPrefix := "bench" + testenv.RandHex(4) + "-"
	env := childEnv(t, db, "feedd_bench_", redisURL,
		// The celebrity's 1,500 followers are above it: hybrid pulls it.
		"FEEDD_PULL_THRESHOLD=1000",
	)

	graph := filepath.Join(dir, "graph.json")
	out := feeddCmd(t, ctx, exe, env, "bench", "graph", "--users", "2000", "--celebrities", "1", "--celebrity-followers", "1500",
		"--posts-per-user", "3", "--cohorts", "50,500", "--cohort-readers", "10", "--sample-users", "200", "--out", graph)
	if !strings.Contains(out, "celebrity") || !strings.Contains(out, "following_500") {
		t.Fatalf("bench graph output does not name the celebrity and cohorts")
	}

	jsonOut, htmlOut := filepath.Join(dir, "bench.json"), filepath.Join(dir, "bench.html")
	const streams = 60
	out = feeddCmd(t, ctx, exe, env, "bench", "run", "--graph", graph, "--run-prefix", runPrefix,
		"--scenarios", "fanout,publish,read,ranked,lists,search,notifications,memory,stream",
		"--duration", "1s", "--baseline-duration", "500ms", "--concurrency", "4", "--publish-count", "20",
		"--memory-readers", "100", "--list-readers", "2", "--stream-clients", fmt.Sprint(streams), "--stream-posts", "6", "--stream-interval", "200ms",
		"--log-dir", dir, "--json", jsonOut, "--html", htmlOut)
	for _, want := range []string{"fanout_writes_per_sec", "read following_500", "redis_bytes_per_entry", "memory_hybrid_vs_push", "paced rps (offered)",
		"delivery p50 / p99 / max ms", "ranked following_500 (p50 / p99 ms)", "ranked_first_p99_vs_latest[push][following_500]", "lists following_500 (p50 / p99 ms)", "list_first_p99_vs_home[hybrid][following_500]", "notifications_p99_vs_home[push]", "stream_delivery_p99_ms[hybrid,celebrity]", "stream_bytes_per_client[push]", "stream_publish_p99_vs_no_streams[pull]"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench run's table lacks %q", want)
		}
	}

	raw, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatalf("bench JSON: %v", err)
	}
	doc, err := os.ReadFile("../../../docs/BENCH.md")
	if err != nil {
		t.Fatal(err)
	}
	num := func(path string, subs map[string]string) float64 {
		t.Helper()
		v, ok := reporttest.Lookup(tree, path, subs)
		if !ok {
			t.Errorf("%v: %s missing", subs, path)
			return 0
		}
		f, _ := v.(float64)
		return f
	}
	// How many paced runs were made depends on the machine's load: on a
	// busy one every closed loop may answer less than the paced rate.
	pacedRuns := 0
	for _, model := range []string{"push", "pull", "hybrid"} {
		for _, cohort := range []string{"following_50", "following_500"} {
			subs := map[string]string{"<model>": model, "<cohort>": cohort}
			for _, p := range reporttest.DocumentedPaths(string(doc)) {
				if _, ok := reporttest.Lookup(tree, p, subs); !ok {
					// A model without inboxes has no entries to break down.
					if model == "pull" && strings.Contains(p, ".memory.by_") {
						continue
					}
					t.Errorf("%s/%s: documented field %s missing", model, cohort, p)
				}
			}
			pre := "models." + model + ".read." + cohort + "."
			for _, f := range []string{"read_rps", "read_p50_ms", "read_p99_ms", "read_baseline_rps", "read_baseline_p99_ms", "read_floor_rps", "read_floor_p99_ms", "items_per_page", "requests"} {
				if v := num(pre+f, subs); v <= 0 {
					t.Errorf("%s%s = %v; want > 0", pre, f, v)
				}
			}
			if e := num(pre+"errors", subs); e != 0 {
				t.Errorf("%serrors = %v; want 0", pre, e)
			}
			// The paced run is made unless its rate is above what the
			// closed loop answered (a slow model on this tiny graph).
			rate := 0.3 * num(pre+"read_baseline_rps", subs)
			if skipped, _ := reporttest.Lookup(tree, pre+"read_paced_skipped", subs); skipped != "" {
				if rate <= num(pre+"read_rps", subs) {
					t.Errorf("%sread_paced_skipped = %q, yet %.0f/s is within the closed loop's %.0f/s", pre, skipped, rate, num(pre+"read_rps", subs))
				}
				continue
			}
			pacedRuns++
			for _, f := range []string{"read_paced_rps_target", "read_paced_rps", "read_paced_p50_ms", "read_paced_p99_ms", "read_paced_requests"} {
				if v := num(pre+f, subs); v <= 0 {
					t.Errorf("%s%s = %v; want > 0", pre, f, v)
				}
			}
			if e := num(pre+"read_paced_errors", subs); e != 0 {
				t.Errorf("%sread_paced_errors = %v; want 0", pre, e)
			}
			if target, base := num(pre+"read_paced_rps_target", subs), num(pre+"read_baseline_rps", subs); target < 0.299*base || target > 0.301*base {
				t.Errorf("%sread_paced_rps_target = %v; want 0.3 × the baseline's %v", pre, target, base)
			}
		}
		pre := "models." + model + "."
		for _, who := range []string{"zero_followers", "celebrity"} {
			p := pre + "publish." + who + "."
			p50, p99 := num(p+"publish_p50_ms", nil), num(p+"publish_p99_ms", nil)
			if p50 <= 0 || p99 < p50 || num(p+"samples", nil) != 20 {
				t.Errorf("%s: p50 %v, p99 %v, %v samples; want 0 < p50 <= p99 and 20 samples", p, p50, p99, num(p+"samples", nil))
			}
		}
		if v := num(pre+"fanout.fanout_baseline_writes_per_sec", nil); v <= 0 {
			t.Errorf("%s baseline writes/s = %v; want > 0", model, v)
		}
		if v := num(pre+"memory.redis_bytes_total", nil); v <= 0 {
			t.Errorf("%s redis_bytes_total = %v; want > 0", model, v)
		}
		checkStream(t, tree, model, streams)
		// Every follower of the celebrity likes its newest post: one group.
		if n := num(pre+"notifications.actor_count", nil); n != 1500 {
			t.Errorf("%snotifications.actor_count = %v; want the celebrity's 1500 followers", pre, n)
		}
		if errs, _ := reporttest.Lookup(tree, pre+"errors", nil); errs != nil && len(errs.([]any)) > 0 {
			t.Errorf("%s errors: %v", model, errs)
		}
	}
	if pacedRuns > 0 && !strings.Contains(out, "paced p50 / p99 ms") {
		t.Errorf("bench run made %d paced runs, yet its table lacks %q", pacedRuns, "paced p50 / p99 ms")
	}
	// Push fans the celebrity out; pull and hybrid (above the lowered
	// threshold) pull it.
	if v, _ := reporttest.Lookup(tree, "models.push.fanout.fanned_out", nil); v != true {
		t.Errorf("push did not fan out")
	}
	for _, f := range []string{"fanout_seconds", "fanout_writes_per_sec", "fanout_vs_baseline", "verified_ok"} {
		if v := num("models.push.fanout."+f, nil); v <= 0 {
			t.Errorf("push fanout.%s = %v; want > 0", f, v)
		}
	}
	if ok, n := num("models.push.fanout.verified_ok", nil), num("models.push.fanout.verify_sample", nil); ok != n || n < 1000 {
		t.Errorf("push: %v of %v sampled inboxes hold the post; want all of at least 1000", ok, n)
	}
	for _, model := range []string{"pull", "hybrid"} {
		if v, _ := reporttest.Lookup(tree, "models."+model+".fanout.delivery_mode", nil); v != "pull" {
			t.Errorf("%s: the celebrity's delivery_mode is %v; want pull", model, v)
		}
	}
	for _, model := range []string{"push", "hybrid"} {
		if v := num("models."+model+".memory.redis_entries", nil); v <= 0 {
			t.Errorf("%s redis_entries = %v; want > 0", model, v)
		}
		if v := num("models."+model+".memory.redis_bytes_per_entry", nil); v <= 0 {
			t.Errorf("%s redis_bytes_per_entry = %v; want > 0", model, v)
		}
	}
	targets, _ := tree["targets"].([]any)
	measured := 0
	for _, x := range targets {
		if x.(map[string]any)["value"] != nil {
			measured++
		}
	}
	if measured < 10 {
		t.Errorf("%d targets measured; want the target ratios (at least 10)", measured)
	}

	page, err := os.ReadFile(htmlOut)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), "<svg"); n < 8 {
		t.Errorf("HTML report has %d charts; want at least 8", n)
	}

	// Every key bench and its children wrote is gone.
	opt, _ := redis.ParseURL(redisURL)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	left, err := scanKeys(ctx, rdb, runPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("%d keys left under %s, e.g. %s", len(left), runPrefix, left[0])
		_ = unlinkKeys(ctx, rdb, left)
	}
}

// checkStream checks one model's stream scenario: every stream opened,
// got every post of the authors its reader follows once and in time, and
// the memory and publish figures are there. The celebrity is pulled but
// by push; the ordinary author pushed but by pull.
func checkStream(t *testing.T, tree map[string]any, model string, streams int) {
	t.Helper()
	pre := "models." + model + ".stream."
	get := func(path string) any {
		t.Helper()
		v, ok := reporttest.Lookup(tree, pre+path, nil)
		if !ok {
			t.Errorf("%s%s missing", pre, path)
		}
		return v
	}
	num := func(path string) float64 { f, _ := get(path).(float64); return f }
	if n := num("stream_clients"); n != float64(streams) {
		t.Errorf("%sstream_clients = %v; want %d", pre, n, streams)
	}
	if tier := get("stream_tier"); tier != "api" {
		t.Errorf("%sstream_tier = %v; want api (no --stream-tier)", pre, tier)
	}
	for _, f := range []string{"stream_open_errors", "stream_missed", "stream_duplicates", "stream_publish_errors"} {
		if v := num(f); v != 0 {
			t.Errorf("%s%s = %v; want 0", pre, f, v)
		}
	}
	p50, p99 := num("stream_delivery_p50_ms"), num("stream_delivery_p99_ms")
	if p50 <= 0 || p99 < p50 || p99 > 10_000 {
		t.Errorf("%sdelivery p50 %v ms, p99 %v ms; want 0 < p50 <= p99 <= 10 s", pre, p50, p99)
	}
	// Each idle stream holds some memory of the serve process, and
	// surely less than a megabyte.
	if b := num("stream_bytes_per_client"); b <= 0 || b > 1<<20 {
		t.Errorf("%sstream_bytes_per_client = %v; want within (0, 1 MiB]", pre, b)
	}
	for _, f := range []string{"stream_publish_p99_ms", "stream_publish_no_streams_p99_ms", "stream_publish_vs_no_streams",
		"stream_publish_no_streams_before_p99_ms", "stream_publish_no_streams_after_p99_ms", "stream_publish_no_streams_after_vs_before"} {
		if v := num(f); v <= 0 {
			t.Errorf("%s%s = %v; want > 0", pre, f, v)
		}
	}
	// The baseline is the phases before and after the streams together:
	// its p99 lies within theirs, and it has the samples of both.
	before, after, both := num("stream_publish_no_streams_before_p99_ms"), num("stream_publish_no_streams_after_p99_ms"), num("stream_publish_no_streams_p99_ms")
	if lo, hi := min(before, after), max(before, after); both < lo*0.9 || both > hi*1.1 {
		t.Errorf("%sno-streams p99 %v ms; want it between the phase before (%v ms) and the one after (%v ms)", pre, both, before, after)
	}
	if n, live := num("stream_publish_no_streams_samples"), num("stream_publish_samples"); n < 2*live*0.9 {
		t.Errorf("%sstream_publish_no_streams_samples = %v; want those of two phases like the one with streams (%v each)", pre, n, live)
	}
	if n := num("stream_publish_samples"); n < 6 {
		t.Errorf("%sstream_publish_samples = %v; want at least the 6 posts", pre, n)
	}
	mode := map[string]string{"push": "push", "pull": "pull", "hybrid": "pull"}[model]
	ordMode := map[string]string{"push": "push", "pull": "pull", "hybrid": "push"}[model]
	var deliveries float64
	for kind, want := range map[string]string{"celebrity": mode, "ordinary": ordMode} {
		a := "authors." + kind + "."
		if m := get(a + "delivery_mode"); m != want {
			t.Errorf("%s%sdelivery_mode = %v; want %s", pre, a, m, want)
		}
		n, posts, got := num(a+"streams"), num(a+"posts"), num(a+"stream_deliveries")
		if n <= 0 || posts != 3 || got != n*posts {
			t.Errorf("%s%s: %v streams, %v posts, %v deliveries; want every post on each stream that follows the author, 3 posts", pre, a, n, posts, got)
		}
		if v := num(a + "stream_delivery_p99_ms"); v <= 0 {
			t.Errorf("%s%sstream_delivery_p99_ms = %v; want > 0", pre, a, v)
		}
		deliveries += got
	}
	if total := num("stream_deliveries"); total != deliveries {
		t.Errorf("%sstream_deliveries = %v; want the authors' sum %v", pre, total, deliveries)
	}
}
