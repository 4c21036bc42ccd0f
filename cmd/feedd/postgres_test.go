package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestPostgresDeployment: on a fresh PostgreSQL database, `feedd migrate`
// creates the schema, then `feedd all` (not migrating at start, so the
// schema is migrate's) serves a user's follow, post and home feed over
// HTTP, says it runs on postgres, and is ready; `feedd import` and
// `feedd export` work on the same database.
func TestPostgresDeployment(t *testing.T) {
	env := stackEnv(t, "postgres")
	env["FEEDD_AUTO_MIGRATE"] = "false"
	env["FEEDD_REFRESH_INTERVAL"] = "1ms"

	if out, err := runOnce(t, env, "migrate"); err != nil || !strings.Contains(out, "migrations applied") {
		t.Fatalf("feedd migrate: %v; output:\n%s", err, out)
	}

	var alice, post string
	out := runUntilStopped(t, env, func(url string) {
		in := &instance{t: t, url: url, admin: env["FEEDD_ADMIN_TOKEN"], api: newAPI(t, url, env["FEEDD_ADMIN_TOKEN"]), http: &http.Client{Timeout: 30 * time.Second}}
		var aliceTok, bobTok string
		alice, aliceTok = in.user("alice")
		_, bobTok = in.user("bob")
		in.follow(bobTok, alice)
		post = in.post(aliceTok, "hello from postgres")
		in.feedEventually(bobTok, 20, []string{post})
		r := in.must(200, "GET", "/v1/me/feed", bobTok, nil)
		items := r.items()
		if len(items) != 1 || items[0]["author_id"] != alice || items[0]["content"] != "hello from postgres" {
			t.Fatalf("bob's feed = %s; want alice's one post", r.raw)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", items[0]["created_at"].(string)); err != nil {
			t.Errorf("created_at %q is not RFC 3339 UTC with milliseconds: %v", items[0]["created_at"], err)
		}
		if u := in.must(200, "GET", "/v1/users/"+alice, bobTok, nil); u.body["follower_count"] != float64(1) {
			t.Errorf("alice = %s; want 1 follower", u.raw)
		}
		in.must(200, "GET", "/readyz", "", nil)
	})
	if !strings.Contains(out, `"sql":"postgres"`) {
		t.Errorf("the start line does not say the SQL store is postgres; output:\n%s", out)
	}

	// The commands on the same database: a user imported, then exported
	// with alice's post.
	users := filepath.Join(t.TempDir(), "users.jsonl")
	if err := os.WriteFile(users, []byte(`{"id":"9001","name":"carol"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runOnce(t, env, "import", "-users", users); err != nil || !strings.Contains(out, "users") {
		t.Fatalf("feedd import: %v; output:\n%s", err, out)
	}
	out, err := runOnce(t, env, "export", "-user", alice)
	if err != nil {
		t.Fatalf("feedd export: %v; output:\n%s", err, out)
	}
	var posts int
	for _, line := range strings.Split(out, "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["kind"] == "post" && l["content"] == "hello from postgres" {
			posts++
		}
	}
	if posts != 1 {
		t.Errorf("feedd export -user %s has %d lines of alice's post; want 1; output:\n%s", alice, posts, out)
	}
}

// TestPostgresTimeouts: the statement timeouts of the settings reach the
// server as the write pool's session settings, and the ops console
// answers on PostgreSQL.
func TestPostgresTimeouts(t *testing.T) {
	env := stackEnv(t, "postgres")
	in := startFeedd(t, env, nil, "FEEDD_SQL_WRITE_TIMEOUT", "7s", "FEEDD_SQL_LOCK_TIMEOUT", "3s")
	for setting, want := range map[string]string{"statement_timeout": "7s", "lock_timeout": "3s"} {
		var got string
		if err := in.sql().DB().QueryRowContext(t.Context(), "SHOW "+setting).Scan(&got); err != nil {
			t.Fatalf("SHOW %s: %v", setting, err)
		}
		if got != want {
			t.Errorf("%s = %s; want %s (the setting's)", setting, got, want)
		}
	}
	in.must(200, "GET", "/v1/admin/overview", in.admin, nil)
}

// TestPostgresRelayWoken: with serve and work apart on PostgreSQL, the
// work process listens for outbox notifications on one connection, the
// serve process notifies after a post commits, and the post reaches a
// follower's feed; the listening connection ends with the work process.
func TestPostgresRelayWoken(t *testing.T) {
	env := servicesEnv(t, postgreSQL, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
	work := startRole(t, "work", env, nil)
	serve := startRole(t, "serve", env, nil)
	listeners := func() int {
		var n int
		if err := serve.sql().DB().QueryRowContext(t.Context(),
			"SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?",
			"feedd outbox listener").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testenv.Eventually(t, 10*time.Second, "the work process listens", func() bool { return listeners() == 1 })

	// A listener of the test's own hears what the serve process sends.
	ctx, cancel := context.WithCancel(t.Context())
	wakes := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serve.sql().ListenOutbox(ctx, func() {
			select {
			case wakes <- struct{}{}:
			default:
			}
		})
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-wakes: // listening
	case <-time.After(10 * time.Second):
		t.Fatal("the test's listener did not start")
	}

	alice, aliceTok := serve.user("alice")
	_, bobTok := serve.user("bob")
	serve.follow(bobTok, alice)
	select {
	case <-wakes:
		t.Fatal("a notification before any post")
	default:
	}
	post := serve.post(aliceTok, "woken")
	select {
	case <-wakes:
	case <-time.After(5 * time.Second):
		t.Fatal("the serve process did not notify within 5 s of a post")
	}
	serve.feedEventually(bobTok, 20, []string{post})

	cancel()
	<-done
	work.stop()
	testenv.Eventually(t, 10*time.Second, "the listening connection ends with the work process", func() bool { return listeners() == 0 })
}
