package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/bench/graph"
	"github.com/feedd/feedd/internal/sqlstore"
)

// TestBenchGraph runs `feedd bench graph` on the embedded SQLite and on
// PostgreSQL and checks the tables against the manifest: exact counts,
// stored follower and following counts that match the edges, and no
// outbox events (nothing must fan out). The e2e test in
// internal/bench/load does the same on MariaDB through bench run.
func TestBenchGraph(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		testBenchGraph(t, map[string]string{"FEEDD_DATA_DIR": dir}, "sqlite", func() (*sqlstore.Store, error) {
			return sqlstore.OpenSQLite(context.Background(), filepath.Join(dir, "feedd.db"))
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := createDatabase(t, postgreSQL)
		testBenchGraph(t, map[string]string{"FEEDD_POSTGRES_DSN": dsn}, "postgres", func() (*sqlstore.Store, error) {
			return sqlstore.OpenPostgres(context.Background(), dsn)
		})
	})
}

func testBenchGraph(t *testing.T, env map[string]string, wantStore string, open func() (*sqlstore.Store, error)) {
	out := filepath.Join(t.TempDir(), "graph.json")
	env["FEEDD_BENCH_SEED"] = "7"
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "graph", "--users", "600", "--celebrities", "2", "--celebrity-followers", "300",
		"--posts-per-user", "2", "--cohorts", "20,100", "--cohort-readers", "4", "--out", out},
		func(k string) string { return env[k] }, nil, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench graph: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "600 users") {
		t.Fatalf("stdout does not summarize the graph: %s", stdout.String())
	}
	var m graph.Manifest
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Options.Seed != 7 || m.Store != wantStore || len(m.Celebrities) != 2 || len(m.Cohorts) != 2 {
		t.Fatalf("manifest: seed %d, store %s, %d celebrities, %d cohorts", m.Options.Seed, m.Store, len(m.Celebrities), len(m.Cohorts))
	}

	store, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	db := store.DB()
	one := func(q string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if got := one("SELECT COUNT(*) FROM users"); got != 600 {
		t.Errorf("%d users; want 600", got)
	}
	if got := one("SELECT COUNT(*) FROM follows"); got != m.Follows {
		t.Errorf("%d follows; manifest %d", got, m.Follows)
	}
	if got := one("SELECT COUNT(*) FROM posts"); got != m.Posts || got != 1200 {
		t.Errorf("%d posts; manifest %d, want 1200", got, m.Posts)
	}
	if got := one("SELECT COUNT(*) FROM outbox"); got != 0 {
		t.Errorf("%d outbox events; want none", got)
	}
	if bad := one(`SELECT COUNT(*) FROM users u WHERE follower_count <> (SELECT COUNT(*) FROM follows f WHERE f.followee_id = u.id)
		OR following_count <> (SELECT COUNT(*) FROM follows f WHERE f.follower_id = u.id)`); bad != 0 {
		t.Errorf("%d users whose counts differ from their edges", bad)
	}
	for _, c := range m.Celebrities {
		if got := one("SELECT follower_count FROM users WHERE id = ?", c.ID); got != 300 {
			t.Errorf("celebrity %s has %d followers; want 300", c.ID, got)
		}
	}

	// A second graph into the same database is refused.
	err = run(context.Background(), []string{"bench", "graph", "--users", "10", "--celebrities", "0", "--out", out},
		func(k string) string { return env[k] }, nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "already holds users") {
		t.Fatalf("second bench graph: err %v; want a refusal", err)
	}
}

func TestBenchUsage(t *testing.T) {
	getenv := func(string) string { return "" }
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"bench"}, getenv, nil, &stdout, &stderr); err == nil || !strings.Contains(stderr.String(), "graph") {
		t.Errorf("feedd bench: err %v, usage %q; want an error and the usage", err, stderr.String())
	}
	if err := run(context.Background(), []string{"bench", "-h"}, getenv, nil, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("feedd bench -h: err %v; want flag.ErrHelp", err)
	}
	if err := run(context.Background(), []string{"bench", "run", "--graph", filepath.Join(t.TempDir(), "none.json")}, getenv, nil, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "manifest") {
		t.Errorf("bench run without a manifest: err %v", err)
	}
	for _, f := range []string{"-0.3", "NaN"} {
		if err := run(context.Background(), []string{"bench", "run", "--read-paced-fraction", f}, getenv, nil, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "read-paced-fraction") {
			t.Errorf("bench run --read-paced-fraction %s: err %v; want it refused", f, err)
		}
	}
	if err := run(context.Background(), []string{"bench", "floor", "--body", filepath.Join(t.TempDir(), "none.json")}, getenv, nil, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--body") {
		t.Errorf("bench floor without its body file: err %v; want it named", err)
	}
	env := map[string]string{"FEEDD_BENCH_USERS": "many"}
	if err := run(context.Background(), []string{"bench", "graph"}, func(k string) string { return env[k] }, nil, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "FEEDD_BENCH_USERS") {
		t.Errorf("bad FEEDD_BENCH_USERS: err %v; want it named", err)
	}
}
