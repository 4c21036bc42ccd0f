package load

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/testenv"
)

// TestBenchStreamTier runs the stream scenario with its streams served by
// a streaming tier (--stream-tier idle): a second `feedd serve` under
// SCHED_IDLE, apart from the API process that takes the publishes. Every
// post still reaches every stream that follows its author, exactly once,
// across the two processes, and the report says which tier served them.
func TestBenchStreamTier(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds feedd and starts four processes")
	}
	feedtest.RequireServices(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	exe := buildFeedd(t, dir)

	redisURL := testenv.Getenv("FEEDD_TEST_BENCH_REDIS_URL", e2eRedis)
	env := childEnv(t, mariaDB, "feedd_bench_", redisURL)
	graph := filepath.Join(dir, "graph.json")
	feeddCmd(t, ctx, exe, env, "bench", "graph", "--users", "1500", "--celebrities", "1", "--celebrity-followers", "1000",
		"--posts-per-user", "2", "--cohorts", "50", "--cohort-readers", "5", "--sample-users", "50", "--out", graph)
	jsonOut := filepath.Join(dir, "bench.json")
	const streams = 40
	out := feeddCmd(t, ctx, exe, env, "bench", "run", "--graph", graph, "--run-prefix", "bench"+testenv.RandHex(4)+"-",
		"--models", "pull", "--scenarios", "stream", "--work-procs", "1", "--stream-tier", "idle",
		"--stream-clients", "40", "--stream-posts", "4", "--stream-interval", "200ms", "--log-dir", dir, "--json", jsonOut)
	if !strings.Contains(out, "streaming tier") {
		t.Errorf("bench run's output does not say it started the streaming tier")
	}
	raw, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("bench JSON: %v", err)
	}
	m := rep.Models["pull-w1"]
	if m == nil || m.Stream == nil {
		t.Fatalf("pull-w1: no stream result (models %v)", rep.Models)
	}
	if len(m.Errors) > 0 {
		t.Errorf("pull-w1: errors %v", m.Errors)
	}
	s := m.Stream
	if s.Tier != "idle" || s.StreamClients != streams || s.StreamMissed != 0 || s.StreamDuplicates != 0 {
		t.Errorf("tier %q, %d streams, %d missed, %d duplicates; want idle, %d, 0, 0", s.Tier, s.StreamClients, s.StreamMissed, s.StreamDuplicates, streams)
	}
	var want int64
	for _, a := range s.Authors {
		want += int64(a.Streams * a.Posts)
	}
	if want == 0 || s.StreamDeliveries != want {
		t.Errorf("%d deliveries; want every post on each stream that follows its author, %d", s.StreamDeliveries, want)
	}
	// The tier served the streams: its log is there, and it listened.
	log, err := os.ReadFile(filepath.Join(dir, "feedd-bench-pull-w1-streams.log"))
	if err != nil || !strings.Contains(string(log), "listening on") {
		t.Errorf("the streaming tier's log: %v; want its listening line", err)
	}
}

// TestStreamTierSpec: --stream-tier takes idle or nice:0..19 and refuses
// anything else, before any child starts.
func TestStreamTierSpec(t *testing.T) {
	for spec, want := range map[string]string{"idle": "chrt --idle 0", "nice:10": "nice -n 10", "nice:0": "nice -n 0"} {
		l, args, err := tierLauncher(spec)
		if got := strings.Join(append([]string{l}, args...), " "); err != nil || got != want {
			t.Errorf("tierLauncher(%q) = %q, %v; want %q", spec, got, err, want)
		}
	}
	for _, spec := range []string{"nice:20", "nice:-1", "nice:", "fast", "IDLE"} {
		if _, _, err := tierLauncher(spec); err == nil {
			t.Errorf("tierLauncher(%q) took it; want an error", spec)
		}
	}
}
