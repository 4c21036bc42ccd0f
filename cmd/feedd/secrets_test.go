package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// runOnce runs the real program with args and env to its end and returns
// everything it wrote and its error, as main would print it.
func runOnce(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out testenv.SyncBuffer
	err := run(ctx, args, func(k string) string { return env[k] }, nil, &out, &out)
	if ctx.Err() != nil {
		t.Fatalf("feedd %s did not end within 60s; output:\n%s", strings.Join(args, " "), out.String())
	}
	text := out.String()
	if err != nil {
		text += "\nfeedd: " + err.Error()
	}
	return text, err
}

// runUntilStopped starts the real program with env, waits until it
// listens, calls use with its URL, then stops it and returns its output.
func runUntilStopped(t *testing.T, env map[string]string, use func(url string), args ...string) string {
	t.Helper()
	env["FEEDD_ADDR"] = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testenv.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, func(k string) string { return env[k] }, nil, &out, &out) }()
	var url string
	testenv.Eventually(t, 30*time.Second, "feedd listens", func() bool {
		select {
		case err := <-done:
			t.Fatalf("feedd exited at start: %v; output:\n%s", err, out.String())
		default:
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if _, after, ok := strings.Cut(line, "listening on "); ok {
				url = strings.TrimSpace(after)
			}
		}
		return url != ""
	})
	use(url)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("feedd stopped with %v; output:\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("feedd did not stop within 30s")
	}
	return out.String()
}

// TestSecretsNeverPrinted runs feedd with secrets in its environment (and
// on its command line) every way that prints something — help, flag
// errors, bad values, backends that cannot be reached or whose URL does
// not parse (parsers quote it), a normal start at debug level — and checks
// that no secret appears in its output or in the error main prints.
func TestSecretsNeverPrinted(t *testing.T) {
	const closed = "127.0.0.1:1" // nothing listens there
	admin, jwt := "adm"+testenv.RandHex(16), "jwt"+testenv.RandHex(16)
	pw := func(tag string) string { return "pw" + tag + testenv.RandHex(4) }
	mysqlPW, readPW, redisPW, clusterPW, amqpPW, amqpPW2, argPW := pw("mysql"), pw("read"), pw("redis"), pw("cluster"), pw("amqp"), pw("amqptwo"), pw("arg")
	pgPW, pgReadPW, pgKeyPW, pgArgPW := pw("pg"), pw("pgread"), pw("pgkey"), pw("pgarg")
	argAdmin, shortAdmin := "argadm"+testenv.RandHex(16), "short"+testenv.RandHex(4)
	secrets := []string{admin, jwt, mysqlPW, readPW, redisPW, clusterPW, amqpPW, amqpPW2, argPW, argAdmin, shortAdmin, pgPW, pgReadPW, pgKeyPW, pgArgPW}

	mysqlDSN := "feedd:" + mysqlPW + "@tcp(" + closed + ")/feedd"
	// A password with an escaped "@" and ":", as RFC 3986 wants them.
	amqpURL := "amqp://u:" + amqpPW + "%40%3A@" + closed + "/,amqp://v:" + amqpPW2 + "@127.0.0.1:2/"
	every := map[string]string{
		"FEEDD_ADMIN_TOKEN":    admin,
		"FEEDD_JWT_SECRET":     jwt,
		"FEEDD_MYSQL_DSN":      mysqlDSN,
		"FEEDD_MYSQL_READ_DSN": "feedd:" + readPW + "@tcp(" + closed + ")/feedd",
		"FEEDD_REDIS_URL":      "redis://:" + redisPW + "@" + closed + "/0",
		"FEEDD_AMQP_URL":       amqpURL,
		"FEEDD_LOG_LEVEL":      "debug",
	}
	// pg is every with PostgreSQL in MySQL's place: a URL primary, a
	// keyword replica whose password is quoted (it has a space).
	pg := map[string]string{
		"FEEDD_POSTGRES_DSN":      "postgres://feedd:" + pgPW + "@" + closed + "/feedd?sslmode=disable",
		"FEEDD_POSTGRES_READ_DSN": "host=127.0.0.1 port=1 user=feedd password='" + pgReadPW + " x' dbname=feedd",
	}
	for k, v := range every {
		if !strings.HasPrefix(k, "FEEDD_MYSQL_") {
			pg[k] = v
		}
	}
	// embedded leaves SQL embedded and sets one other backend.
	embedded := func(kv ...string) map[string]string {
		env := map[string]string{"FEEDD_ADMIN_TOKEN": admin, "FEEDD_JWT_SECRET": jwt, "FEEDD_DATA_DIR": t.TempDir(), "FEEDD_LOG_LEVEL": "debug"}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	with := func(env map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	cases := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
	}{
		{"-h", every, []string{"-h"}, 0},
		{"serve -h", every, []string{"serve", "-h"}, 0},
		{"work -help", every, []string{"work", "-help"}, 0},
		{"-typo", every, []string{"-typo"}, 2},
		{"migrate -typo", every, []string{"migrate", "-typo"}, 2},
		{"a bad flag value", every, []string{"-inbox-max", "many"}, 2},
		{"a bad variable", with(every, "FEEDD_INBOX_MAX", "many"), nil, 2},
		{"an unknown role", every, []string{"serf"}, 2},
		{"secrets on the command line", every, []string{"-admin-token", argAdmin, "-mysql-dsn=u:" + argPW + "@tcp(" + closed + ")/x", "-typo"}, 2},
		{"a short admin token", with(every, "FEEDD_ADMIN_TOKEN", shortAdmin), nil, 2},
		{"bench -h", every, []string{"bench", "-h"}, 0},
		{"bench run -h", every, []string{"bench", "run", "-h"}, 0},
		{"bench graph -typo", every, []string{"bench", "graph", "-typo"}, 2},
		{"requeue-dead -h", every, []string{"requeue-dead", "-h"}, 0},
		{"requeue-dead -typo", every, []string{"requeue-dead", "-typo"}, 2},
		{"requeue-dead, RabbitMQ unreachable", every, []string{"requeue-dead"}, 1},
		{"MySQL unreachable", every, nil, 1},
		{"MySQL unreachable, text logs", with(every, "FEEDD_LOG_FORMAT", "text"), []string{"serve"}, 1},
		{"migrate, MySQL unreachable", every, []string{"migrate"}, 1},
		{"a MySQL DSN that does not parse", with(every, "FEEDD_MYSQL_DSN", "feedd:"+mysqlPW+"@tcp("+closed+"/feedd"), nil, 1},
		{"PostgreSQL unreachable", pg, nil, 1},
		{"PostgreSQL unreachable, text logs", with(pg, "FEEDD_LOG_FORMAT", "text"), []string{"serve"}, 1},
		{"migrate, PostgreSQL unreachable", pg, []string{"migrate"}, 1},
		{"export, PostgreSQL unreachable", pg, []string{"export", "-user", "1"}, 1},
		{"import, PostgreSQL unreachable", pg, []string{"import", "-users", os.DevNull}, 1},
		{"bench graph, PostgreSQL unreachable", pg, []string{"bench", "graph", "-out", os.DevNull}, 1},
		{"PostgreSQL unreachable, a keyword string", with(pg, "FEEDD_POSTGRES_DSN", "host=127.0.0.1 port=1 user=feedd password="+pgKeyPW+" dbname=feedd"), nil, 1},
		{"PostgreSQL unreachable, several hosts", with(pg, "FEEDD_POSTGRES_DSN", "postgresql://feedd:"+pgPW+"@"+closed+",127.0.0.1:2/feedd?target_session_attrs=read-write"), nil, 1},
		{"PostgreSQL unreachable, the password a parameter", with(pg, "FEEDD_POSTGRES_DSN", "postgres://feedd@"+closed+"/feedd?password="+pgPW+"&sslmode=disable"), nil, 1},
		{"a PostgreSQL URL that does not parse", with(pg, "FEEDD_POSTGRES_DSN", "postgres://feedd:"+pgPW+"@127.0.0.1:port/feedd"), nil, 1},
		{"a PostgreSQL keyword string that does not parse", with(pg, "FEEDD_POSTGRES_DSN", "host=127.0.0.1 port=1 password='"+pgKeyPW), nil, 1},
		{"PostgreSQL secrets on the command line", pg, []string{"-postgres-dsn", "host=db password=" + pgArgPW, "-typo"}, 2},
		{"MySQL and PostgreSQL both set", with(every, "FEEDD_POSTGRES_DSN", pg["FEEDD_POSTGRES_DSN"]), nil, 2},
		{"Redis unreachable", embedded("FEEDD_REDIS_URL", "redis://:"+redisPW+"@"+closed+"/0"), nil, 1},
		{"a Redis URL that does not parse", embedded("FEEDD_REDIS_URL", "redis://u:"+redisPW+"@127.0.0.1:port/0"), nil, 1},
		{"a Redis Cluster URL with a database", embedded("FEEDD_REDIS_URL", "redis+cluster://u:"+clusterPW+"@"+closed+",127.0.0.1:2/5"), nil, 1},
		{"a Redis Cluster unreachable", embedded("FEEDD_REDIS_CLUSTER", closed+",127.0.0.1:2", "FEEDD_REDIS_URL", "redis://u:"+clusterPW+"@"), nil, 1},
		{"RabbitMQ unreachable", embedded("FEEDD_AMQP_URL", amqpURL), nil, 1},
		{"a RabbitMQ URL that does not parse", embedded("FEEDD_AMQP_URL", "amqp://u:"+amqpPW+"@127.0.0.1:port/"), nil, 1},
		{"a RabbitMQ URL with a raw @ in its password", embedded("FEEDD_AMQP_URL", "amqp://u:"+amqpPW+"@x@127.0.0.1:port/"), nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runOnce(t, c.env, c.args...)
			if got := exitCode(err); got != c.wantCode {
				t.Errorf("exit status %d (err %v); want %d", got, err, c.wantCode)
			}
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("the output shows the secret %q:\n%s", s, out)
				}
			}
		})
	}

	t.Run("a normal start and stop", func(t *testing.T) {
		forEachStack(t, func(t *testing.T, env map[string]string) {
			env = with(env, "FEEDD_ADMIN_TOKEN", admin, "FEEDD_JWT_SECRET", jwt, "FEEDD_LOG_LEVEL", "debug")
			out := runUntilStopped(t, env, func(url string) {
				for _, token := range []string{admin, "not-" + admin, jwt} {
					req, _ := http.NewRequest("POST", url+"/v1/users", strings.NewReader(`{"name":"ann"}`))
					req.Header.Set("Authorization", "Bearer "+token)
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					res.Body.Close()
				}
			})
			if !strings.Contains(out, "feedd started") {
				t.Fatalf("no start logged; output:\n%s", out)
			}
			for _, s := range []string{admin, jwt} {
				if strings.Contains(out, s) {
					t.Errorf("the output shows the secret %q:\n%s", s, out)
				}
			}
		})
	})
}

// TestSecretsShownHidden: -h shows a set token as "(set)" and a URL or DSN
// with "***" for its password, so an operator still sees what is set.
func TestSecretsShownHidden(t *testing.T) {
	env := map[string]string{
		"FEEDD_ADMIN_TOKEN": strings.Repeat("a", 40),
		"FEEDD_MYSQL_DSN":   "feedd:" + strings.Repeat("b", 12) + "@tcp(db:3306)/feedd",
		"FEEDD_AMQP_URL":    "amqp://u:" + strings.Repeat("c", 12) + "@mq1:5672/,amqp://u:" + strings.Repeat("c", 12) + "@mq2:5672/",
		"FEEDD_REDIS_URL":   "redis://cache:6379/0",
		// Help shows them even though both SQL servers are set.
		"FEEDD_POSTGRES_DSN":      "postgres://feedd:" + strings.Repeat("d", 12) + "@db1:5432,db2:5432/feedd",
		"FEEDD_POSTGRES_READ_DSN": "host=replica password='" + strings.Repeat("e", 6) + " " + strings.Repeat("e", 6) + "' dbname=feedd",
	}
	out, _ := runOnce(t, env, "-h")
	for _, want := range []string{
		`(default "postgres://feedd:***@db1:5432,db2:5432/feedd")`,
		`(default "host=replica password=*** dbname=feedd")`,
		`(FEEDD_ADMIN_TOKEN) (default "(set)")`,
		`(default "feedd:***@tcp(db:3306)/feedd")`,
		`(default "amqp://u:***@mq1:5672/,amqp://u:***@mq2:5672/")`,
		`(default "redis://cache:6379/0")`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("feedd -h does not show %s; output:\n%s", want, out)
		}
	}
}

func TestRedactURLs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"root@tcp(127.0.0.1:3306)/feedd", "root@tcp(127.0.0.1:3306)/feedd"},
		{"feedd:pw@tcp(db:3306)/feedd?parseTime=true", "feedd:***@tcp(db:3306)/feedd?parseTime=true"},
		{"feedd:p@ss:w@tcp(db:3306)/feedd", "feedd:***@tcp(db:3306)/feedd"},
		{"redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"redis://:pw@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"},
		{"redis://user@127.0.0.1:6379/0", "redis://user@127.0.0.1:6379/0"},
		{"rediss+cluster://u:p%40w@h1:7000,h2:7000/0", "rediss+cluster://u:***@h1:7000,h2:7000/0"},
		{"amqp://u:a@b@h1/,amqp://v:c@h2/", "amqp://u:***@h1/,amqp://v:***@h2/"},
		{"amqp://u:a@h1/ amqp://v:c@h2/", "amqp://u:***@h1/ amqp://v:***@h2/"},
		{"h1:7000,h2:7000", "h1:7000,h2:7000"},
	} {
		if got, _ := redactURLs(c.in); got != c.want {
			t.Errorf("redactURLs(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestRedactConnString(t *testing.T) {
	for _, c := range []struct {
		in, want  string
		passwords []string
	}{
		{"postgres://feedd@127.0.0.1:5432/feedd?sslmode=disable", "postgres://feedd@127.0.0.1:5432/feedd?sslmode=disable", nil},
		{"postgres://feedd:pw@db:5432/feedd", "postgres://feedd:***@db:5432/feedd", []string{"pw"}},
		{"postgresql://feedd:p%40w@db1:5432,db2:5433/feedd?target_session_attrs=read-write", "postgresql://feedd:***@db1:5432,db2:5433/feedd?target_session_attrs=read-write", []string{"p%40w"}},
		{"postgres://feedd@db/feedd?password=p%26w&sslmode=disable", "postgres://feedd@db/feedd?password=***&sslmode=disable", []string{"p%26w", "p&w"}},
		{"postgres://u:a@db/feedd?sslpassword=k3y", "postgres://u:***@db/feedd?sslpassword=***", []string{"a", "k3y"}},
		{"host=db dbname=feedd user=feedd", "host=db dbname=feedd user=feedd", nil},
		{"host=db password=pw dbname=feedd", "host=db password=*** dbname=feedd", []string{"pw"}},
		{"host=db password = pw", "host=db password = ***", []string{"pw"}},
		{"host=db password='p w' dbname=feedd", "host=db password=*** dbname=feedd", []string{"p w"}},
		{`password='it\'s' host=db`, "password=*** host=db", []string{`it\'s`, "it's"}},
		{`password=a\ b host=db`, "password=*** host=db", []string{`a\ b`, "a b"}},
		{"host=db password=''", "host=db password=''", nil},
		{"host=a,b password=pw", "host=a,b password=***", []string{"pw"}},
		// Not a string the driver reads, but its password hidden all the same.
		{"host=db password='unterminated dbname=feedd", "host=db password=***", []string{"unterminated dbname=feedd"}},
	} {
		got, passwords := redactConnString(c.in)
		if got != c.want || !slices.Equal(passwords, c.passwords) {
			t.Errorf("redactConnString(%q) = %q, %q; want %q, %q", c.in, got, passwords, c.want, c.passwords)
		}
	}
}

// TestExitStatus: a command line or environment that is wrong (a flag, a
// value, a secret too short) exits 2 with a message naming what is
// wrong; -h exits 0; a failure at run time exits 1.
func TestExitStatus(t *testing.T) {
	long := strings.Repeat("x", minSecretLen)
	short := strings.Repeat("x", minSecretLen-1)
	for _, c := range []struct {
		name  string
		env   map[string]string
		args  []string
		code  int
		names string
	}{
		{"-h", nil, []string{"-h"}, 0, ""},
		{"-typo", nil, []string{"-typo"}, 2, "-typo"},
		{"a short FEEDD_ADMIN_TOKEN", map[string]string{"FEEDD_ADMIN_TOKEN": short}, nil, 2, "FEEDD_ADMIN_TOKEN"},
		{"a short FEEDD_JWT_SECRET", map[string]string{"FEEDD_ADMIN_TOKEN": long, "FEEDD_JWT_SECRET": short}, nil, 2, "FEEDD_JWT_SECRET"},
		{"a short -jwt-secret", nil, []string{"serve", "-jwt-secret", short}, 2, "-jwt-secret"},
		{"a short secret for bench's children", map[string]string{"FEEDD_JWT_SECRET": short}, []string{"bench", "run", "-graph", "/nonexistent"}, 2, "FEEDD_JWT_SECRET"},
		{"MySQL unreachable", map[string]string{"FEEDD_ADMIN_TOKEN": long, "FEEDD_JWT_SECRET": long, "FEEDD_MYSQL_DSN": "root@tcp(127.0.0.1:1)/feedd"}, nil, 1, "127.0.0.1:1"},
		{"PostgreSQL unreachable", map[string]string{"FEEDD_ADMIN_TOKEN": long, "FEEDD_JWT_SECRET": long, "FEEDD_POSTGRES_DSN": "postgres://feedd@127.0.0.1:1/feedd"}, nil, 1, "127.0.0.1:1"},
		{"PostgreSQL without the secrets", map[string]string{"FEEDD_POSTGRES_DSN": "postgres://feedd@127.0.0.1:1/feedd"}, nil, 1, "FEEDD_ADMIN_TOKEN and FEEDD_JWT_SECRET must be set when FEEDD_POSTGRES_DSN is"},
		{"MySQL and PostgreSQL both set", map[string]string{"FEEDD_MYSQL_DSN": "root@tcp(127.0.0.1:1)/feedd", "FEEDD_POSTGRES_DSN": "host=127.0.0.1 port=1"}, nil, 2, "FEEDD_MYSQL_DSN and FEEDD_POSTGRES_DSN are both set"},
		{"migrate, both set", map[string]string{"FEEDD_MYSQL_DSN": "root@tcp(127.0.0.1:1)/feedd", "FEEDD_POSTGRES_DSN": "host=127.0.0.1 port=1"}, []string{"migrate"}, 2, "FEEDD_MYSQL_DSN and FEEDD_POSTGRES_DSN are both set"},
		{"import, both set", map[string]string{"FEEDD_MYSQL_DSN": "root@tcp(127.0.0.1:1)/feedd"}, []string{"import", "-postgres-dsn", "host=127.0.0.1 port=1", "-users", os.DevNull}, 2, "FEEDD_MYSQL_DSN and FEEDD_POSTGRES_DSN are both set"},
		{"export, both set", map[string]string{"FEEDD_MYSQL_DSN": "root@tcp(127.0.0.1:1)/feedd", "FEEDD_POSTGRES_DSN": "host=127.0.0.1 port=1"}, []string{"export", "-user", "1"}, 2, "FEEDD_MYSQL_DSN and FEEDD_POSTGRES_DSN are both set"},
		{"bench graph, both set", map[string]string{"FEEDD_MYSQL_DSN": "root@tcp(127.0.0.1:1)/feedd", "FEEDD_POSTGRES_DSN": "host=127.0.0.1 port=1"}, []string{"bench", "graph", "-out", os.DevNull}, 2, "FEEDD_MYSQL_DSN and FEEDD_POSTGRES_DSN are both set"},
		{"a PostgreSQL replica without its primary", map[string]string{"FEEDD_POSTGRES_READ_DSN": "host=127.0.0.1 port=1"}, nil, 2, "FEEDD_POSTGRES_READ_DSN needs FEEDD_POSTGRES_DSN"},
		{"a MySQL replica with a PostgreSQL primary", map[string]string{"FEEDD_MYSQL_READ_DSN": "root@tcp(127.0.0.1:1)/feedd", "FEEDD_POSTGRES_DSN": "host=127.0.0.1 port=1"}, nil, 2, "FEEDD_MYSQL_READ_DSN needs FEEDD_MYSQL_DSN"},
		{"a negative statement timeout", map[string]string{"FEEDD_SQL_READ_TIMEOUT": "-1s"}, nil, 2, "FEEDD_SQL_READ_TIMEOUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env == nil {
				c.env = map[string]string{}
			}
			c.env["FEEDD_DATA_DIR"] = t.TempDir()
			out, err := runOnce(t, c.env, c.args...)
			if got := exitCode(err); got != c.code {
				t.Fatalf("exit status %d (err %v); want %d; output:\n%s", got, err, c.code, out)
			}
			if err != nil && !strings.Contains(err.Error(), c.names) {
				t.Errorf("error %q does not name %s", err, c.names)
			}
		})
	}
	// A secret of exactly the minimum length is accepted.
	env := map[string]string{"FEEDD_ADMIN_TOKEN": long, "FEEDD_JWT_SECRET": long}
	if _, err := parseConfig(nil, func(k string) string { return env[k] }, &testenv.SyncBuffer{}); err != nil {
		t.Errorf("secrets of %d bytes: %v; want accepted", minSecretLen, err)
	}
}

// TestKeptSecret: the secrets generated into the data dir.
func TestKeptSecret(t *testing.T) {
	t.Run("generated once, whole, private", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "jwt_secret")
		// Processes starting together on one data dir agree on it.
		const n = 8
		got := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				s, err := keptSecret(path)
				if err != nil {
					t.Error(err)
				}
				got[i] = s
			})
		}
		wg.Wait()
		for _, s := range got[1:] {
			if s != got[0] {
				t.Fatalf("concurrent starts got %q; want one secret", got)
			}
		}
		if len(got[0]) != 64 {
			t.Errorf("secret %q; want 64 hex digits", got[0])
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %#o; want 0600", path, fi.Mode().Perm())
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Errorf("data dir holds %v; want only jwt_secret (no temporary file left)", names)
		}
		if again, err := keptSecret(path); err != nil || again != got[0] {
			t.Errorf("second read: %q, %v; want %q", again, err, got[0])
		}
	})

	t.Run("a loose file is tightened", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "admin_token")
		if err := os.WriteFile(path, []byte(strings.Repeat("k", 40)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := keptSecret(path); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %#o; want 0600", fi.Mode().Perm())
		}
	})

	// Each broken file is a clear error from the real program, naming the
	// file: never a crash, and never a new secret that would silently
	// invalidate the tokens signed with the old one.
	for _, c := range []struct {
		name  string
		file  string
		spoil func(path string) error
		want  string
	}{
		{"an empty admin_token", "admin_token", func(p string) error { return os.WriteFile(p, nil, 0o600) }, "is empty"},
		{"a blank jwt_secret", "jwt_secret", func(p string) error { return os.WriteFile(p, []byte(" \n"), 0o600) }, "is empty"},
		{"a short jwt_secret", "jwt_secret", func(p string) error { return os.WriteFile(p, []byte("abc\n"), 0o600) }, "at least 32"},
		// A directory cannot be read as a file, even by root.
		{"an unreadable admin_token", "admin_token", func(p string) error { return os.Mkdir(p, 0o700) }, "read "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			if err := c.spoil(path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			out, err := runOnce(t, map[string]string{"FEEDD_DATA_DIR": dir, "FEEDD_ADDR": "127.0.0.1:0"})
			if err == nil || exitCode(err) != 1 {
				t.Fatalf("feedd with %s: err %v (exit status %d); want a startup error, exit status 1; output:\n%s", c.name, err, exitCode(err), out)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q; want it to name %s and say %q", err, path, c.want)
			}
			if after, _ := os.ReadFile(path); string(after) != string(before) {
				t.Errorf("%s changed from %q to %q; want it left for the operator", c.file, before, after)
			}
		})
	}
}

// TestDataDirPrivate: on the embedded default, the data dir feedd
// creates is 0700 and every file in it (database, -wal, -shm, generated
// secrets) 0600, whatever the umask.
func TestDataDirPrivate(t *testing.T) {
	// The umask is the process's; no test of this package runs in
	// parallel with this one.
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	dir := filepath.Join(t.TempDir(), "new", "data")
	runUntilStopped(t, map[string]string{"FEEDD_DATA_DIR": dir}, func(string) {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("data dir has mode %#o; want 0700", fi.Mode().Perm())
		}
		for _, name := range []string{"feedd.db", "feedd.db-wal", "feedd.db-shm", "admin_token", "jwt_secret"} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %#o; want 0600", name, fi.Mode().Perm())
			}
		}
	})
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("data dir holds %s; want no temporary file left", e.Name())
			}
		}
	}
}

// TestProfilesCmdlineHidesSecrets: /debug/pprof/cmdline serves the command
// line with the secrets passed as flags hidden (pprof.Cmdline served them
// as typed), and the other flags as they were.
func TestProfilesCmdlineHidesSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pprofAddr := ln.Addr().String()
	ln.Close()
	admin, jwt, pw := "adm"+testenv.RandHex(16), "jwt"+testenv.RandHex(16), "pw"+testenv.RandHex(6)
	env := map[string]string{"FEEDD_DATA_DIR": t.TempDir()}
	args := []string{"-pprof-addr", pprofAddr, "-admin-token", admin, "-jwt-secret=" + jwt, "-redis-prefix", "p" + pw[:2] + ":"}
	runUntilStopped(t, env, func(string) {
		res, err := http.Get("http://" + pprofAddr + "/debug/pprof/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got := string(body)
		for _, s := range []string{admin, jwt} {
			if strings.Contains(got, s) {
				t.Errorf("/debug/pprof/cmdline shows the secret %q: %q", s, got)
			}
		}
		want := strings.Join([]string{"feedd", "all", "-pprof-addr", pprofAddr, "-admin-token", "***", "-jwt-secret=***", "-redis-prefix", "p" + pw[:2] + ":"}, "\x00")
		if got != want {
			t.Errorf("/debug/pprof/cmdline = %q; want %q", got, want)
		}
	}, args...)
}
