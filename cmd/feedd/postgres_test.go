package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		if err := in.d.store.DB().QueryRowContext(t.Context(), "SHOW "+setting).Scan(&got); err != nil {
			t.Fatalf("SHOW %s: %v", setting, err)
		}
		if got != want {
			t.Errorf("%s = %s; want %s (the setting's)", setting, got, want)
		}
	}
	in.must(200, "GET", "/v1/admin/overview", in.admin, nil)
}
