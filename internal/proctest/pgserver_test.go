package proctest

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// defaultPostgresBin is where Debian's PostgreSQL 15 keeps initdb and
// pg_ctl; FEEDD_TEST_POSTGRES_BIN overrides it.
const defaultPostgresBin = "/usr/lib/postgresql/15/bin"

// pgServer is a PostgreSQL server of the test's own, in a temporary
// directory, which the test may crash and start again. The machine's
// server is shared with other suites and is never stopped.
type pgServer struct {
	t    *testing.T
	bin  string // directory of initdb and pg_ctl
	dir  string // data, socket and log, owned by the server's user
	port string
	// asUser, when set, is the operating-system user the server runs as:
	// PostgreSQL refuses to run as root.
	asUser string
	// orphans are the processes of a killed postmaster (kill, waitGone).
	orphans []int
}

// startPostgres creates a cluster in a temporary directory (initdb, trust
// authentication, superuser postgres) and starts it on a free loopback
// port with fsync on, so that a crash is a real one. The server is
// stopped and its directory removed when the test ends.
func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	p := newPgServer(t, "initdb", "pg_ctl")
	if out, err := p.run("initdb", "-D", p.data(), "-A", "trust", "-U", "postgres",
		"--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.start()
	return p
}

// newPgServer readies a directory and a free port for a server, checks
// that the tools it will run are installed, and stops the server and
// removes the directory when the test ends.
func newPgServer(t *testing.T, tools ...string) *pgServer {
	t.Helper()
	bin := testenv.Getenv("FEEDD_TEST_POSTGRES_BIN", defaultPostgresBin)
	for _, tool := range tools {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			feedtest.Missing(t, "PostgreSQL's %s is not in %s (%v): install postgresql-15, or set FEEDD_TEST_POSTGRES_BIN", tool, bin, err)
		}
	}
	// Not t.TempDir: its parents are private to root, and the server's
	// user must reach the directory.
	dir, err := os.MkdirTemp("", "feedd-proctest-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_, port, _ := net.SplitHostPort(freeAddr(t))
	p := &pgServer{t: t, bin: bin, dir: dir, port: port}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			feedtest.Missing(t, "running as root, and there is no postgres user to run PostgreSQL as (%v)", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		p.asUser = "postgres"
	}
	t.Cleanup(func() {
		if out, err := p.run("pg_ctl", "stop", "-D", p.data(), "-m", "immediate"); err != nil && !strings.Contains(out, "Is server running?") && !strings.Contains(out, "No such process") {
			t.Logf("stop the test's PostgreSQL: %v\n%s", err, out)
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
			t.Logf("log of the test's PostgreSQL on port %s:\n%s", p.port, tail(string(log)))
		}
	})
	return p
}

func (p *pgServer) data() string { return filepath.Join(p.dir, "data") }

// run runs one of the server's tools as the server's user.
func (p *pgServer) run(tool string, args ...string) (string, error) {
	name, argv := filepath.Join(p.bin, tool), args
	if p.asUser != "" {
		name, argv = "runuser", append([]string{"-u", p.asUser, "--", filepath.Join(p.bin, tool)}, args...)
	}
	cmd := exec.Command(name, argv...)
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// start starts the server and waits until it accepts connections, which
// after a crash is once its recovery is done.
func (p *pgServer) start() {
	p.t.Helper()
	opts := "-p " + p.port + " -k " + p.dir + " -c listen_addresses=127.0.0.1 -c fsync=on"
	if out, err := p.run("pg_ctl", "start", "-D", p.data(), "-l", filepath.Join(p.dir, "log"), "-w", "-t", "60", "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		p.t.Fatalf("pg_ctl start: %v\n%s\nlog:\n%s", err, out, tail(string(log)))
	}
}

// crash stops the server the way a power cut or a kill -9 would:
// immediate mode, no shutdown checkpoint, every connection dropped; the
// next start recovers from the write-ahead log.
func (p *pgServer) crash() {
	p.t.Helper()
	if out, err := p.run("pg_ctl", "stop", "-D", p.data(), "-m", "immediate"); err != nil {
		p.t.Fatalf("pg_ctl stop -m immediate: %v\n%s", err, out)
	}
}

// url is the server's URL for database db.
func (p *pgServer) url(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: net.JoinHostPort("127.0.0.1", p.port),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// backend is the server as a backend: each stack on it gets a database of
// its own, which goes with the server at the end.
func (p *pgServer) backend() backend {
	return pgBackend("postgres (the test's own server)", p.addr(), p.url)
}

func (p *pgServer) addr() string { return net.JoinHostPort("127.0.0.1", p.port) }

// pgBackend is a backend on the test's own servers, checked at addr and
// reached through the DSNs of url, which names a database.
func pgBackend(name, addr string, url func(db string) string) backend {
	return backend{
		name: name, env: postgres.env,
		addr: func(*testing.T) string { return addr },
		create: func(t *testing.T) string {
			t.Helper()
			root, err := sql.Open("pgx", url("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			db := "feedd_proc_" + testenv.RandHex(6)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := root.ExecContext(ctx, "CREATE DATABASE "+db); err != nil {
				t.Fatalf("create database %s on the test's PostgreSQL: %v", db, err)
			}
			return url(db)
		},
		open: sqlstore.OpenPostgres,
	}
}
