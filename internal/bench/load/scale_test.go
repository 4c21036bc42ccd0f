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
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/testenv"
)

// TestBenchWorkProcsOnCluster runs the fanout scenario the way the scale
// figures of docs/capacity.md were measured: on the Redis Cluster
// (FEEDD_TEST_REDIS_CLUSTER_URL, which .ci/run starts), with one and then
// two `feedd work` processes behind a `feedd serve`. Each run fans the
// celebrity's post out to every follower, counted across the work
// processes, and leaves no key behind.
func TestBenchWorkProcsOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds feedd and starts five processes")
	}
	feedtest.RequireServices(t)
	clusterURL := os.Getenv("FEEDD_TEST_REDIS_CLUSTER_URL")
	if clusterURL == "" {
		feedtest.Missing(t, "FEEDD_TEST_REDIS_CLUSTER_URL is not set: run .ci/redis-cluster.sh, which starts a Redis Cluster, and export what it prints")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	exe := buildFeedd(t, dir)

	runPrefix := "bench" + testenv.RandHex(4) + "-"
	env := childEnv(t, mariaDB, "feedd_bench_", clusterURL, "FEEDD_BATCH_SIZE=200", "FEEDD_DIRECT_FANOUT=500")
	graph := filepath.Join(dir, "graph.json")
	feeddCmd(t, ctx, exe, env, "bench", "graph", "--users", "3000", "--celebrities", "1", "--celebrity-followers", "2000",
		"--posts-per-user", "2", "--cohorts", "50", "--cohort-readers", "5", "--sample-users", "50", "--out", graph)
	jsonOut := filepath.Join(dir, "bench.json")
	out := feeddCmd(t, ctx, exe, env, "bench", "run", "--graph", graph, "--run-prefix", runPrefix,
		"--models", "push", "--scenarios", "fanout", "--work-procs", "1,2", "--log-dir", dir, "--json", jsonOut)
	for _, want := range []string{"push-w1", "push-w2"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench run's table lacks the run %s", want)
		}
	}
	raw, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("bench JSON: %v", err)
	}
	if !rep.Settings.RedisCluster {
		t.Errorf("settings.redis_cluster = false; want true on %s", clusterURL)
	}
	for name, procs := range map[string]int{"push-w1": 1, "push-w2": 2} {
		m := rep.Models[name]
		if m == nil || m.Fanout == nil {
			t.Errorf("%s: no fanout result", name)
			continue
		}
		if m.WorkProcs != procs || m.FanoutMode != "push" || len(m.Errors) > 0 {
			t.Errorf("%s: work_procs %d, mode %s, errors %v; want %d, push, none", name, m.WorkProcs, m.FanoutMode, m.Errors, procs)
		}
		f := m.Fanout
		if f.Followers != 2000 || f.FanoutWritesPerSec <= 0 || f.VerifiedOK != f.VerifySample || f.VerifySample == 0 {
			t.Errorf("%s: %d followers, %.0f writes/s, %d of %d verified; want 2000, > 0, all", name, f.Followers, f.FanoutWritesPerSec, f.VerifiedOK, f.VerifySample)
		}
	}
	rdb, err := rediscache.NewClient(clusterURL, "", 0)
	if err != nil {
		t.Fatal(err)
	}
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
