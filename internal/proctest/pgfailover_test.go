package proctest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestPostgresFailover: feedd runs on a PostgreSQL primary and its
// synchronous streaming standby through one multi-host DSN with
// target_session_attrs=read-write, under the load of TestPostgresRestart
// (steadyLoad).
// The primary's postmaster is killed with SIGKILL and, 1s later, the
// standby promoted (pg_ctl promote), as a failover manager would. The old
// primary then rejoins as a standby of the new one (a fresh
// pg_basebackup), and the same is done the other way round: the new
// primary is killed and the old one promoted, so feedd writes to the node
// that was killed first again, with nothing changed on feedd's side.
//
// Every write answered 2xx is there afterwards (posts once each, although
// clients retried 503s with the same Idempotency-Key; follows, likes and
// counts exact; the outbox drained; every feed whole); each failure was a
// 503 with Retry-After, never a 500; the outbox listener reconnects to each
// new primary; the window without a successful write is printed per
// failover and is at most 8s: the target is 5s, 0.9-2.3s were measured
// (docs/clusters.md), and the bound leaves room for a loaded machine.
func TestPostgresFailover(t *testing.T) {
	t.Parallel()
	const (
		promoteAfter = time.Second // a failover manager's detection time
		settle       = 6 * time.Second
		maxWindow    = 8 * time.Second
	)
	pair := startPostgresPair(t)
	a, b := pair.nodes[0], pair.nodes[1]
	s := newStack(t, pgBackend("postgres (a primary and a standby of the test's own)", a.addr(), pair.url))
	// The SQL breaker probes every second rather than every 5s (the
	// default), as docs/clusters.md advises with a failover manager: the
	// first probe after the promotion closes it.
	s.env["FEEDD_BREAKER_COOLDOWN"] = testenv.Getenv("FEEDD_TEST_BREAKER_COOLDOWN", "1s")
	load := startSteadyLoad(t, s, 2000, 20, 13)
	dsn, err := url.Parse(s.env[postgres.env])
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(dsn.Path, "/")
	time.Sleep(4 * time.Second)

	// failover kills from and promotes to, as a failover manager would, and
	// waits until feedd's outbox listener is on to.
	failover := func(from, to *pgServer) (killed, promoted time.Time) {
		t.Logf("SIGKILL the primary's postmaster (port %s)", from.port)
		killed = time.Now()
		from.kill()
		time.Sleep(promoteAfter)
		to.promote()
		promoted = time.Now()
		t.Logf("promoted the standby (port %s) %v after the kill", to.port, promoted.Sub(killed).Round(time.Millisecond))
		testenv.Eventually(t, 30*time.Second, "the outbox listener is on the new primary", func() bool {
			return to.listeners(db) > 0
		})
		t.Logf("the outbox listener is on the new primary %v after the kill", time.Since(killed).Round(time.Millisecond))
		time.Sleep(time.Until(killed.Add(settle)))
		return killed, promoted
	}

	killed1, _ := failover(a, b)
	// The old primary rejoins as a standby of the new one, and becomes its
	// synchronous standby again.
	rejoin := time.Now()
	a.waitGone()
	a.follow(b)
	b.syncStandby()
	t.Logf("the old primary (port %s) is a synchronous standby of the new one %v after it began to rejoin", a.port, time.Since(rejoin).Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	killed2, promoted2 := failover(b, a)
	stopped := time.Now()
	all := load.finish()

	// Every failure a clean 503 with Retry-After (or a 409 for a key in
	// flight), every answer prompt, and none failing long after the last
	// promotion.
	var failed int
	var last time.Time
	for _, ans := range all {
		if ans.took > 5*time.Second {
			t.Errorf("%s at %v after the first kill took %v (status %d); want every answer within 5s",
				ans.what, ans.at.Sub(killed1).Round(time.Millisecond), ans.took, ans.status)
		}
		if ans.ok() {
			continue
		}
		failed++
		last = ans.at
		if !ans.clean() {
			t.Errorf("%s at %v after the first kill: status %d, body %q; want a 503 (or 409 idempotency_key_in_flight) with a JSON error",
				ans.what, ans.at.Sub(killed1).Round(time.Millisecond), ans.status, ans.body)
		}
	}
	if n := load.w.noRetryAfter.Load(); n > 0 {
		t.Errorf("%d answers were a 503 without Retry-After; want each to say when to retry", n)
	}
	if failed == 0 {
		t.Fatal("no request failed during the failovers; want them seen (503s)")
	}
	if d := last.Sub(promoted2); d > 15*time.Second {
		t.Errorf("requests still failed %v after the last promotion; want the processes serving again within 15s", d.Round(time.Millisecond))
	}
	authorPosts, streamPosts, follows, likes, reads := load.summary()
	t.Logf("load: %d author posts, %d stream posts, %d follows, %d likes, %d feed reads; %d answers, %d of them 503/409; the last failure %v after the last promotion",
		authorPosts, streamPosts, follows, likes, reads, len(all), failed, last.Sub(promoted2).Round(time.Millisecond))

	for i, span := range [][2]time.Time{{killed1, rejoin}, {killed2, stopped}} {
		k := span[0]
		gap, from, to := writeWindow(all, k.Add(-2*time.Second), span[1])
		t.Logf("failover %d: no successful write for %v (from %v to %v after the kill)", i+1,
			gap.Round(time.Millisecond), from.Sub(k).Round(time.Millisecond), to.Sub(k).Round(time.Millisecond))
		if gap > maxWindow {
			t.Errorf("failover %d: no successful write for %v; want at most %v", i+1, gap.Round(time.Millisecond), maxWindow)
		}
	}
	// The rejoin's base backup forces a checkpoint on the primary, and its
	// commits wait for the new synchronous standby: writes may pause.
	gap, _, _ := writeWindow(all, rejoin, killed2)
	t.Logf("the rejoin: the longest time without a successful write was %v", gap.Round(time.Millisecond))
	var retried int
	for _, ans := range all {
		if ans.what == "POST /v1/posts" && (ans.status == 0 || ans.status == 503) {
			retried++
		}
	}
	if retried == 0 {
		t.Error("no publish failed during the failovers; want some retried with their Idempotency-Key")
	}
	t.Logf("%d publishes answered 503 or cut were retried with their Idempotency-Key", retried)

	ctx := context.Background()
	testenv.Eventually(t, 30*time.Second, "the test's store reaches the new primary", func() bool {
		return s.store.DB().PingContext(ctx) == nil
	})
	load.checkEnd(ctx)
}

// writeWindow is the longest time without a successful write (a 2xx to
// anything but a GET) among the answers that came between since and until.
func writeWindow(answers []answer, since, until time.Time) (gap time.Duration, from, to time.Time) {
	var ok []time.Time
	for _, a := range answers {
		if !strings.HasPrefix(a.what, "GET ") && a.ok() && a.at.After(since) && a.at.Before(until) {
			ok = append(ok, a.at)
		}
	}
	slices.SortFunc(ok, func(x, y time.Time) int { return x.Compare(y) })
	for i := 1; i < len(ok); i++ {
		if d := ok[i].Sub(ok[i-1]); d > gap {
			gap, from, to = d, ok[i-1], ok[i]
		}
	}
	return gap, from, to
}

// pgPair is a PostgreSQL primary and its synchronous streaming standby, of
// the test's own; which is which changes as the test fails over.
type pgPair struct {
	nodes [2]*pgServer // in the order of the DSN's hosts; nodes[0] starts as the primary
}

// startPostgresPair starts a primary and a standby made from it by
// pg_basebackup, and makes the standby synchronous: a commit returns once
// the standby has it, so a failover loses no write that was acknowledged.
func startPostgresPair(t *testing.T) *pgPair {
	t.Helper()
	primary := startPostgres(t)
	standby := newPgServer(t, "pg_basebackup", "pg_ctl")
	standby.follow(primary)
	primary.syncStandby()
	return &pgPair{nodes: [2]*pgServer{primary, standby}}
}

// url is the pair's DSN for database db: both hosts, and
// target_session_attrs=read-write, so that feedd finds the primary itself.
func (pp *pgPair) url(db string) string {
	return "postgres://postgres@" + pp.nodes[0].addr() + "," + pp.nodes[1].addr() + "/" + db +
		"?sslmode=disable&target_session_attrs=read-write"
}

// follow makes p a streaming standby of primary: a fresh base backup in
// place of whatever p held (a node that was a primary may have written
// what its successor never got), started on p's port.
func (p *pgServer) follow(primary *pgServer) {
	p.t.Helper()
	if err := os.RemoveAll(p.data()); err != nil {
		p.t.Fatal(err)
	}
	if out, err := p.run("pg_basebackup", "-h", "127.0.0.1", "-p", primary.port, "-U", "postgres",
		"-D", p.data(), "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		p.t.Fatalf("pg_basebackup from port %s: %v\n%s", primary.port, err, out)
	}
	p.start()
}

// syncStandby makes p's commits wait for its standby, and waits until the
// standby streams synchronously.
func (p *pgServer) syncStandby() {
	p.t.Helper()
	p.exec("ALTER SYSTEM SET synchronous_standby_names = '*'")
	p.exec("SELECT pg_reload_conf()")
	testenv.Eventually(p.t, 30*time.Second, "the standby of port "+p.port+" is synchronous", func() bool {
		return p.count("SELECT COUNT(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1
	})
}

// kill sends SIGKILL to the postmaster, as the death of its machine would
// stop it. Its backends notice soon after and end their sessions
// (57P01); waitGone waits for them.
func (p *pgServer) kill() {
	p.t.Helper()
	pid := p.postmaster()
	p.orphans = childrenOf(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		p.t.Fatalf("kill the postmaster %d: %v", pid, err)
	}
}

// waitGone waits until the processes of a killed server have ended, so
// that its directory may be replaced, and kills those that linger.
func (p *pgServer) waitGone() {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range p.orphans {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			p.t.Logf("process %d of the killed server on port %s still runs: SIGKILL", pid, p.port)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	p.orphans = nil
}

// promote ends recovery on a standby: it becomes a primary.
func (p *pgServer) promote() {
	p.t.Helper()
	if out, err := p.run("pg_ctl", "promote", "-D", p.data(), "-w", "-t", "60"); err != nil {
		p.t.Fatalf("pg_ctl promote: %v\n%s", err, out)
	}
}

// listeners counts the sessions of feedd's outbox listener in database db.
func (p *pgServer) listeners(db string) int {
	return p.count("SELECT COUNT(*) FROM pg_stat_activity WHERE datname = '" + db +
		"' AND application_name = 'feedd outbox listener'")
}

// exec runs a statement on p itself (not through the pair's DSN).
func (p *pgServer) exec(query string) {
	p.t.Helper()
	if err := p.query(query, nil); err != nil {
		p.t.Fatalf("on port %s: %s: %v", p.port, query, err)
	}
}

// count runs a query of one number on p; -1 if it fails.
func (p *pgServer) count(query string) int {
	var n int
	if err := p.query(query, &n); err != nil {
		return -1
	}
	return n
}

func (p *pgServer) query(query string, into *int) error {
	db, err := sql.Open("pgx", p.url("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if into == nil {
		_, err = db.ExecContext(ctx, query)
		return err
	}
	return db.QueryRowContext(ctx, query).Scan(into)
}

// postmaster is the pid of p's postmaster, the first line of its pid file.
func (p *pgServer) postmaster() int {
	p.t.Helper()
	b, err := os.ReadFile(filepath.Join(p.data(), "postmaster.pid"))
	if err != nil {
		p.t.Fatalf("the postmaster of port %s: %v", p.port, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		p.t.Fatalf("the postmaster of port %s: pid file starts with %q", p.port, first)
	}
	return pid
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, err := procStat(child); err == nil && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	_, state, err := procStat(pid)
	return err == nil && state != "Z" && state != "X"
}

// procStat reads the parent and the state of pid from /proc/pid/stat.
func procStat(pid int) (ppid int, state string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", err
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, "", errors.New("no command name in " + string(b))
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, "", errors.New("short stat: " + string(b))
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err
}
