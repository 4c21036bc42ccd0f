package main

import (
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/testenv"
)

// pgBouncerPoolSize is the server connections PgBouncer keeps per
// database and user in TestPgBouncer: fewer than feedd's pools, so that
// clients share them, transaction by transaction.
const pgBouncerPoolSize = 3

// startPgBouncer starts a PgBouncer of its own in transaction mode in
// front of the PostgreSQL database of dsn (trusting its user, as the
// tests' server does) and returns dsn through it. Without pgbouncer the
// test skips on a laptop and fails under CI=true.
func startPgBouncer(t *testing.T, dsn string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if bin, err = exec.LookPath("/usr/sbin/pgbouncer"); err != nil {
			feedtest.Missing(t, "pgbouncer is not installed (apt-get install pgbouncer)")
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	user := u.User.Username()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	dir := t.TempDir()
	users := filepath.Join(dir, "users.txt")
	ini := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(users, []byte(strconv.Quote(user)+` ""`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The startup parameters feedd sets are ignored: PgBouncer refuses
	// a connection with any it does not know, and would not keep a
	// setting of one client's session apart from the others' anyway.
	// The timeouts are the database's own settings instead; exec mode
	// plans every statement with its values, as plan_cache_mode asks.
	conf := fmt.Sprintf(`[databases]
* = host=%s port=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 500
admin_users = %s
ignore_startup_parameters = statement_timeout, lock_timeout, idle_in_transaction_session_timeout, plan_cache_mode
`, u.Hostname(), u.Port(), port, users, pgBouncerPoolSize, user)
	if err := os.WriteFile(ini, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{ini}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root: it reads its files as root,
		// then becomes the server's user.
		args = []string{"-u", "postgres", ini}
	}
	out := &testenv.SyncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("pgbouncer's log:\n%s", out.String())
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	testenv.Eventually(t, 10*time.Second, "pgbouncer listens", func() bool {
		select {
		case <-done:
			t.Fatalf("pgbouncer exited at start:\n%s", out.String())
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	u.Host = addr
	return u.String()
}

// TestPgBouncer: feedd behind PgBouncer in transaction mode, with pgx's
// exec mode (default_query_exec_mode=exec in the DSN: no named prepared
// statements, which 1.18 cannot keep across clients) and the statement
// timeouts set on the database. Two migrations at once, then users,
// follows, posts, likes, feed pages and an edit, then many clients at
// once on a few server connections, then an import and an export:
// everything answers, the counts are exact and no migration lock is left
// behind.
func TestPgBouncer(t *testing.T) {
	env := servicesEnv(t, postgreSQL, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
	direct := env["FEEDD_POSTGRES_DSN"]
	bouncer := startPgBouncer(t, direct)
	name := strings.TrimPrefix(mustParseURL(t, direct).Path, "/")
	db, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// What feedd would set at connect time, it cannot through PgBouncer:
	// the database (or the role) sets it for every session.
	for _, s := range []string{"statement_timeout = '30s'", "lock_timeout = '10s'", "idle_in_transaction_session_timeout = '1min'"} {
		if _, err := db.ExecContext(t.Context(), `ALTER DATABASE "`+name+`" SET `+s); err != nil {
			t.Fatalf("ALTER DATABASE %s SET %s: %v", name, s, err)
		}
	}

	env["FEEDD_POSTGRES_DSN"] = bouncer + "&default_query_exec_mode=exec"
	env["FEEDD_RATE_USER_READ"], env["FEEDD_RATE_USER_WRITE"], env["FEEDD_USER_MAX_INFLIGHT"] = "0", "0", "0"
	env["FEEDD_FANOUT_MODE"], env["FEEDD_PULL_THRESHOLD"] = "hybrid", "5"

	// Two migrations at once through the pooler: one waits for the
	// other's lock, and neither leaves it held.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if out, err := runOnce(t, env, "migrate"); err != nil || !strings.Contains(out, "migrations applied") {
				t.Errorf("feedd migrate through pgbouncer: %v; output:\n%s", err, out)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var locks int
	if err := db.QueryRowContext(t.Context(), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = $1)", name).Scan(&locks); err != nil {
		t.Fatal(err)
	}
	if locks != 0 {
		t.Errorf("%d advisory locks held on %s after the migrations; want 0", locks, name)
	}

	in := startFeedd(t, env, nil)
	var timeout string
	if err := in.sql().DB().QueryRowContext(t.Context(), "SHOW statement_timeout").Scan(&timeout); err != nil || timeout != "30s" {
		t.Errorf("SHOW statement_timeout through pgbouncer = %q, %v; want 30s (the database's)", timeout, err)
	}

	// One of everything, in order.
	const n = 12
	ids, toks := make([]string, n), make([]string, n)
	for i := range n {
		ids[i], toks[i] = in.user(fmt.Sprintf("u%d", i))
	}
	for i := 1; i < n; i++ {
		in.follow(toks[i], ids[0]) // ids[0]: over the pull threshold
		if i > 1 {
			in.follow(toks[i], ids[1])
		}
	}
	first := in.post(toks[0], "first")
	second := in.post(toks[1], "second")
	in.must(200, "PUT", "/v1/posts/"+first+"/like", toks[2], nil)
	in.must(200, "PATCH", "/v1/posts/"+second, toks[1], map[string]string{"content": "second, edited"})
	in.feedEventually(toks[2], 1, []string{second, first})
	if r := in.must(200, "GET", "/v1/posts/"+second, toks[2], nil); r.str("content") != "second, edited" || r.str("edited_at") == "" {
		t.Errorf("the edited post = %s", r.raw)
	}

	// Then every user at once: posts, likes of both first posts, follow
	// lists and feed pages, many more clients than server connections.
	posts := make([][]string, n)
	var mu sync.Mutex
	for i := range n {
		wg.Go(func() {
			for k := range 4 {
				p := in.do("POST", "/v1/posts", toks[i], map[string]string{"content": fmt.Sprintf("u%d post %d", i, k)})
				if p.status != 201 {
					t.Errorf("u%d post %d: %d %s", i, k, p.status, p.raw)
					return
				}
				mu.Lock()
				posts[i] = append(posts[i], p.str("id"))
				mu.Unlock()
				for _, r := range []resp{
					in.do("GET", "/v1/me/feed?limit=5", toks[i], nil),
					in.do("GET", "/v1/users/"+ids[0]+"/followers?limit=5", toks[i], nil),
					in.do("GET", "/v1/users/"+ids[i]+"/posts", toks[i], nil),
				} {
					if r.status != 200 {
						t.Errorf("u%d: a read answered %d %s", i, r.status, r.raw)
					}
				}
			}
			for _, p := range []string{first, second} {
				if r := in.do("PUT", "/v1/posts/"+p+"/like", toks[i], nil); r.status != 200 {
					t.Errorf("u%d like %s: %d %s", i, p, r.status, r.raw)
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// The counts are exact, and a follower of both sees every post of
	// theirs.
	testenv.Eventually(t, 20*time.Second, "every like counted", func() bool {
		a := in.must(200, "GET", "/v1/posts/"+first, toks[3], nil)
		b := in.must(200, "GET", "/v1/posts/"+second, toks[3], nil)
		return a.body["like_count"] == float64(n) && b.body["like_count"] == float64(n)
	})
	if r := in.must(200, "GET", "/v1/users/"+ids[0], toks[3], nil); r.body["follower_count"] != float64(n-1) {
		t.Errorf("u0 = %s; want %d followers", r.raw, n-1)
	}
	want := slices.Concat([]string{first, second}, posts[0], posts[1], posts[5])
	slices.SortFunc(want, func(a, b string) int { return cmpID(b, a) })
	in.feedEventually(toks[5], 4, want)

	// The commands through the pooler: an import (its batches, counts
	// and cache drops) and an export.
	if out, err := runOnce(t, env, "import", "--export", writeSameData(t)); err != nil {
		t.Fatalf("feedd import through pgbouncer: %v; output:\n%s", err, out)
	}
	if r := in.must(200, "GET", "/v1/users/101", toks[3], nil); r.body["follower_count"] != float64(9) {
		t.Errorf("imported user 101 = %s; want 9 followers", r.raw)
	}
	if out, err := runOnce(t, env, "export", "-user", "101"); err != nil || strings.Count(out, `"kind":"post"`) != 14 {
		t.Errorf("feedd export -user 101 through pgbouncer: %v; want 14 posts; output:\n%s", err, out)
	}

	// The server connections were shared: PgBouncer kept more client
	// connections of feedd's pools than server connections.
	clients, servers := pgBouncerPool(t, bouncer, name)
	t.Logf("PgBouncer's pool of %s: %d client connections, %d server connections (pool size %d)", name, clients, servers, pgBouncerPoolSize)
	if servers > pgBouncerPoolSize || clients <= servers {
		t.Errorf("PgBouncer's pool: %d clients on %d servers; want more clients than servers, at most %d servers", clients, servers, pgBouncerPoolSize)
	}
}

// pgBouncerPool asks the admin console of the PgBouncer at bouncer for
// its pool of database: client and server connections.
func pgBouncerPool(t *testing.T, bouncer, database string) (clients, servers int) {
	t.Helper()
	u := mustParseURL(t, bouncer)
	u.Path = "/pgbouncer"
	// The console speaks only the simple query protocol.
	console, err := sql.Open("pgx", u.String()+"&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatal(err)
	}
	defer console.Close()
	rows, err := console.QueryContext(t.Context(), "SHOW POOLS")
	if err != nil {
		t.Fatalf("pgbouncer SHOW POOLS: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i].String
		}
		if row["database"] != database {
			continue
		}
		for c, v := range row {
			n, _ := strconv.Atoi(v)
			switch c {
			case "cl_active", "cl_waiting":
				clients += n
			case "sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login":
				servers += n
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return clients, servers
}

func mustParseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
