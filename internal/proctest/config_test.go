package proctest

import (
	"bufio"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestConfigContract: what an operator relies on when configuring feedd
// through FEEDD_* variables.
func TestConfigContract(t *testing.T) {
	t.Parallel()
	t.Logf("feedd built in %v", built.Round(time.Millisecond))

	for _, sql := range []struct{ name, env, dsn string }{
		{"MySQL", "FEEDD_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/feedd_proc_unused"},
		{"PostgreSQL", "FEEDD_POSTGRES_DSN", "postgres://postgres@127.0.0.1:5432/feedd_proc_unused?sslmode=disable"},
	} {
		t.Run("secrets are required with "+sql.name, func(t *testing.T) {
			t.Parallel()
			// Every backend is named, so the missing secret is the only
			// thing wrong; the check comes before any connection is made.
			base := map[string]string{
				sql.env:             sql.dsn,
				"FEEDD_REDIS_URL":   defaultRedis,
				"FEEDD_AMQP_URL":    testenv.AMQPURL(),
				"FEEDD_ADMIN_TOKEN": "admin-" + testenv.RandHex(16),
				"FEEDD_JWT_SECRET":  testenv.RandHex(16),
			}
			for _, missing := range []string{"FEEDD_ADMIN_TOKEN", "FEEDD_JWT_SECRET"} {
				t.Run(missing, func(t *testing.T) {
					env := map[string]string{}
					for k, v := range base {
						if k != missing {
							env[k] = v
						}
					}
					p := startProc(t, "serve without "+missing, env, "serve")
					st := p.wait(20 * time.Second)
					if st.ExitCode() == 0 {
						t.Fatalf("feedd serve without %s: exit status 0; want non-zero", missing)
					}
					if out := p.output(); !strings.Contains(out, missing) {
						t.Fatalf("feedd serve without %s printed %q; want a message naming %s", missing, out, missing)
					}
				})
			}
		})
	}

	t.Run("an unreachable backend is a clear error", func(t *testing.T) {
		t.Parallel()
		s := newStack(t, mariaDB)
		closed := freeAddr(t) // nothing listens there
		for _, c := range []struct{ name, env, value, named string }{
			{"mysql", "FEEDD_MYSQL_DSN", "root@tcp(" + closed + ")/feedd", "mysql"},
			{"postgres", "FEEDD_POSTGRES_DSN", "postgres://postgres@" + closed + "/feedd?sslmode=disable", "postgres"},
			{"redis", "FEEDD_REDIS_URL", "redis://" + closed + "/4", "redis"},
			{"rabbitmq", "FEEDD_AMQP_URL", "amqp://guest:guest@" + closed + "/", "rabbitmq"},
		} {
			t.Run(c.name, func(t *testing.T) {
				// The stack's database is MariaDB's: another SQL backend
				// replaces it, as the two together are refused.
				env := s.with(c.env, c.value)
				if c.env == "FEEDD_POSTGRES_DSN" {
					delete(env, "FEEDD_MYSQL_DSN")
				}
				p := startProc(t, "work without "+c.name, env, "work")
				st := p.wait(30 * time.Second)
				out := p.output()
				if st.ExitCode() == 0 || strings.Contains(out, "panic:") {
					t.Fatalf("feedd work with %s unreachable: got %v; want a non-zero exit without a panic; output:\n%s", c.name, st, out)
				}
				if !strings.Contains(strings.ToLower(out), c.named) {
					t.Fatalf("feedd work with %s unreachable printed %q; want a message naming %s", c.name, out, c.named)
				}
			})
		}
	})

	t.Run("exit statuses, and secrets never printed", func(t *testing.T) {
		t.Parallel()
		admin, password := "adm"+testenv.RandHex(16), "pw"+testenv.RandHex(8)
		secrets := map[string]string{
			"FEEDD_ADMIN_TOKEN": admin,
			"FEEDD_JWT_SECRET":  testenv.RandHex(16),
			"FEEDD_MYSQL_DSN":   "feedd:" + password + "@tcp(" + freeAddr(t) + ")/feedd",
			"FEEDD_AMQP_URL":    "amqp://feedd:" + password + "@127.0.0.1:port/",
		}
		with := func(kv ...string) map[string]string {
			env := maps.Clone(secrets)
			for i := 0; i+1 < len(kv); i += 2 {
				env[kv[i]] = kv[i+1]
			}
			return env
		}
		for _, c := range []struct {
			name   string
			env    map[string]string
			args   []string
			status int
			says   string
		}{
			{"-h", secrets, []string{"-h"}, 0, "(set)"},
			{"-typo", secrets, []string{"-typo"}, 2, "-typo"},
			{"a short admin token", with("FEEDD_ADMIN_TOKEN", "short-"+testenv.RandHex(4)), nil, 2, "FEEDD_ADMIN_TOKEN"},
			{"a short JWT secret", with("FEEDD_JWT_SECRET", "short-"+testenv.RandHex(4)), nil, 2, "FEEDD_JWT_SECRET"},
			{"MySQL unreachable", secrets, nil, 1, "mysql"},
			{"PostgreSQL unreachable", with("FEEDD_MYSQL_DSN", "", "FEEDD_POSTGRES_DSN", "postgres://feedd:"+password+"@"+freeAddr(t)+"/feedd?sslmode=disable"), nil, 1, "postgres"},
			{"MySQL and PostgreSQL both", with("FEEDD_POSTGRES_DSN", "postgres://feedd:"+password+"@127.0.0.1:5432/feedd"), nil, 2, "FEEDD_POSTGRES_DSN"},
			{"a RabbitMQ URL that does not parse", with("FEEDD_MYSQL_DSN", "", "FEEDD_DATA_DIR", t.TempDir()), nil, 1, "amqp://feedd:***@"},
		} {
			t.Run(c.name, func(t *testing.T) {
				status, out := runProc(t, c.env, c.args...)
				if status != c.status || !strings.Contains(out, c.says) {
					t.Errorf("feedd %s: exit status %d; want %d and a message with %q; output:\n%s", strings.Join(c.args, " "), status, c.status, c.says, tail(out))
				}
				for _, s := range []string{admin, password, c.env["FEEDD_ADMIN_TOKEN"], c.env["FEEDD_JWT_SECRET"]} {
					if strings.Contains(out, s) {
						t.Errorf("feedd %s printed the secret %q", strings.Join(c.args, " "), s)
					}
				}
			})
		}
	})

	t.Run("help lists every variable", func(t *testing.T) {
		t.Parallel()
		p := startProc(t, "feedd -h", map[string]string{}, "-h")
		st := p.wait(10 * time.Second)
		out := p.output()
		for _, v := range []string{
			"FEEDD_ADDR", "FEEDD_DATA_DIR", "FEEDD_ADMIN_TOKEN", "FEEDD_JWT_SECRET", "FEEDD_MYSQL_DSN", "FEEDD_POSTGRES_DSN", "FEEDD_POSTGRES_READ_DSN",
			"FEEDD_REDIS_URL", "FEEDD_AMQP_URL", "FEEDD_INBOX_MAX", "FEEDD_DIRECT_FANOUT", "FEEDD_BATCH_SIZE",
		} {
			if !strings.Contains(out, v) {
				t.Errorf("feedd -h does not mention %s; output:\n%s", v, out)
			}
		}
		for _, role := range []string{"all", "serve", "work", "migrate"} {
			if !strings.Contains(out, "  "+role+" ") {
				t.Errorf("feedd -h does not list the role %s; output:\n%s", role, out)
			}
		}
		t.Logf("feedd -h exited with status %d", st.ExitCode())
	})

	t.Run("embedded default", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		env := map[string]string{"FEEDD_DATA_DIR": dir}

		first := startReady(t, "feedd (first start)", env)
		url, token := printed(t, first)
		if url != first.url() {
			t.Errorf("feedd printed the URL %q; want %q (FEEDD_ADDR)", url, first.url())
		}
		if len(token) < 32 {
			t.Fatalf("feedd printed the admin token %q; want a generated secret", token)
		}
		api := first.api()
		user, _ := api.newUser(token, "alice")
		first.signal(syscall.SIGTERM)
		if st := first.wait(20 * time.Second); st.ExitCode() != 0 {
			t.Fatalf("feedd after SIGTERM: got %v; want exit status 0", st)
		}
		if kept, err := os.ReadFile(filepath.Join(dir, "admin_token")); err != nil || strings.TrimSpace(string(kept)) != token {
			t.Errorf("data dir admin_token = %q (%v); want the printed token", kept, err)
		}

		second := startReady(t, "feedd (second start)", env)
		if _, again := printed(t, second); again != token {
			t.Fatalf("second start printed the admin token %q; want the first one, %q", again, token)
		}
		// The data and the token survive the restart.
		second.api().token(token, user)
		second.api().must(200, "GET", "/readyz", "", nil)
	})

	t.Run("work serves health and metrics", func(t *testing.T) {
		t.Parallel()
		s := newStack(t, mariaDB)
		work := startReady(t, "work", s.env, "work")
		api := work.api()
		// The queues are set up once the work process consumes them.
		testenv.Eventually(t, 30*time.Second, "work consumes posts and tasks", func() bool {
			return s.consumers("posts") == 1 && s.consumers("tasks") == 1
		})
		if r := api.must(200, "GET", "/healthz", "", nil); r["status"] != "ok" {
			t.Errorf("GET /healthz = %v; want status ok", r)
		}
		res, err := http.Get(work.url() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("GET /metrics: got status %d, Content-Type %q; want 200 and Prometheus text", res.StatusCode, res.Header.Get("Content-Type"))
		}
		for _, m := range []string{"feedd_relay_events_total", "feedd_fanout_inbox_writes_total", "feedd_outbox_backlog"} {
			if !strings.Contains(string(body), "\n# TYPE "+m+" ") {
				t.Errorf("GET /metrics has no metric %s", m)
			}
		}
		// The work role serves no API.
		if status, _ := api.do("POST", "/v1/users", s.admin, map[string]any{"name": "x"}); status < 400 {
			t.Errorf("POST /v1/users on work: got status %d; want the API absent", status)
		}
	})
}

// printed returns the URL and the admin token a process printed on start.
func printed(t *testing.T, p *proc) (url, token string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(p.stdout.String()))
	for sc.Scan() {
		line := sc.Text()
		if _, after, ok := strings.Cut(line, " listening on "); ok {
			url = strings.TrimSpace(after)
		}
		if after, ok := strings.CutPrefix(line, "admin token: "); ok {
			token = strings.TrimSpace(after)
		}
	}
	if url == "" || token == "" {
		t.Fatalf("%s printed no URL or no admin token; stdout:\n%s", p.name, p.stdout.String())
	}
	return url, token
}
