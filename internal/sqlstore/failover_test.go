package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/testenv"
)

func TestSplitHosts(t *testing.T) {
	for _, c := range []struct {
		dsn, first string
		hosts      []string
	}{
		{"root@tcp(127.0.0.1:3306)/feedd", "root@tcp(127.0.0.1:3306)/feedd", nil},
		{"root@tcp(a:1,b:2,c:3)/feedd", "root@tcp(a:1)/feedd", []string{"a:1", "b:2", "c:3"}},
		{"u:p@ss@tcp(a:1, b:2)/feedd?timeout=1s&loc=UTC", "u:p@ss@tcp(a:1)/feedd?timeout=1s&loc=UTC", []string{"a:1", "b:2"}},
		{"root@tcp(a:1,b:2)/", "root@tcp(a:1)/", []string{"a:1", "b:2"}},
		{"root@unix(/run/mysqld/mysqld.sock)/feedd", "root@unix(/run/mysqld/mysqld.sock)/feedd", nil},
		{"/feedd", "/feedd", nil},
	} {
		first, hosts := splitHosts(c.dsn)
		if first != c.first || !slices.Equal(hosts, c.hosts) {
			t.Errorf("splitHosts(%q) = %q, %q; want %q, %q", c.dsn, first, hosts, c.first, c.hosts)
		}
	}
}

// openWithUser opens a migrated MySQL store on dsn, closed when the test
// ends, with user 1 in it.
func openWithUser(t *testing.T, dsn string) *Store {
	t.Helper()
	s, err := OpenMySQL(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustUsers(t, s, 1)
	return s
}

// TestGaleraFailover: a store on the three nodes of a Galera cluster
// writes through the first; when it is killed (SIGKILL), the store's
// writes move to the second within seconds, every post the store said it
// wrote is there, and once the first node is back and synced the writes
// go back to it with nobody doing anything.
func TestGaleraFailover(t *testing.T) {
	testenv.UseGalera(t, true)
	hosts := testenv.GaleraHosts(t)
	ctx := t.Context()
	s := openWithUser(t, testenv.CreateGaleraDatabase(t, "feedd_galera_"))
	writer := func() string {
		n, _ := s.Nodes()
		return n.Writer
	}
	if w := writer(); w != hosts[0] {
		t.Fatalf("writing node %s; want the first, %s", w, hosts[0])
	}

	// Posts at a steady pace, each with an idempotency key and retried
	// until it is written, as a client would.
	var (
		mu      sync.Mutex
		written []int64
		okAt    []time.Time
		failed  int
	)
	loadCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := int64(1); loadCtx.Err() == nil; id++ {
			p := feed.Post{ID: id << 16, AuthorID: 1, Content: "post " + strconv.FormatInt(id, 10)}
			idem := feed.Idempotency{Key: "k" + strconv.FormatInt(id, 10), Fingerprint: make([]byte, 32), TTL: time.Hour}
			for loadCtx.Err() == nil {
				cctx, cancel := context.WithTimeout(loadCtx, 5*time.Second)
				_, _, err := s.CreatePost(cctx, p, idem)
				cancel()
				mu.Lock()
				if err == nil {
					written = append(written, p.ID)
					okAt = append(okAt, time.Now())
				} else {
					failed++
					if failed < 10 {
						t.Logf("%v: %v", time.Now().Format("15:04:05.000"), err)
					}
				}
				mu.Unlock()
				if err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	time.Sleep(time.Second)
	killed := time.Now()
	testenv.Galera(t, "kill", "1")
	testenv.Eventually(t, 20*time.Second, "writes move to another node", func() bool {
		return writer() != hosts[0]
	})
	time.Sleep(2 * time.Second)
	testenv.Galera(t, "start", "1")
	back := time.Now()
	testenv.Eventually(t, 20*time.Second, "writes come back to the first node", func() bool {
		return writer() == hosts[0]
	})
	time.Sleep(time.Second)
	stop()
	<-done

	nodes, _ := s.Nodes()
	for _, m := range nodes.Last {
		t.Logf("writes moved from %s to %s at %v (%s)", m.From, m.To, m.At.Sub(killed).Round(time.Millisecond), m.Why)
	}
	mu.Lock()
	defer mu.Unlock()
	var gap time.Duration
	for i := 1; i < len(okAt); i++ {
		if okAt[i].After(killed) && okAt[i-1].Before(back) {
			gap = max(gap, okAt[i].Sub(okAt[i-1]))
		}
	}
	t.Logf("%d posts written, %d failed attempts; the longest time without a written post around the kill: %v",
		len(written), failed, gap.Round(time.Millisecond))
	if gap > 5*time.Second {
		t.Errorf("no post was written for %v; want at most 5s", gap)
	}
	for _, id := range written {
		if _, err := s.Post(ctx, id); err != nil {
			t.Errorf("post %d, written, is not there: %v", id, err)
		}
	}
	if n, err := s.OutboxBacklog(ctx); err != nil || n != int64(len(written)) {
		t.Errorf("outbox holds %d, %v; want one event per post, %d", n, err, len(written))
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		t.Fatal("test context ended")
	}
}

// TestMySQLRetryable: a transaction runs again when the server rolled it
// back, or when it ended before its COMMIT; never when its COMMIT may have
// taken effect.
func TestMySQLRetryable(t *testing.T) {
	deadlock := &mysql.MySQLError{Number: mysqlLockDeadlock}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"deadlock victim", deadlock, true},
		{"certification failure at COMMIT", commitError{deadlock}, true},
		{"lock wait timeout", &mysql.MySQLError{Number: mysqlLockWaitTimeout}, true},
		{"node not ready", &mysql.MySQLError{Number: mysqlNotReady}, true},
		{"node not ready at COMMIT", commitError{&mysql.MySQLError{Number: mysqlNotReady}}, false},
		{"connection lost", fmt.Errorf("insert: %w", mysql.ErrInvalidConn), true},
		{"connection lost at COMMIT", commitError{mysql.ErrInvalidConn}, false},
		{"connection refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"duplicate key", &mysql.MySQLError{Number: mysqlDupEntry}, false},
		{"the caller gave up", context.Canceled, false},
	} {
		if got := mysqlRetryable(c.err); got != c.want {
			t.Errorf("%s (%v): retryable %v; want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestLostCommitIsNotRepeated: when the connection breaks after a COMMIT
// was sent, the transaction may have committed, so it is not run again:
// the caller gets the error (a 503 for a client), and a client that
// publishes again with the same idempotency key gets the post, created
// once.
func TestLostCommitIsNotRepeated(t *testing.T) {
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN())
	if err != nil {
		t.Fatalf("FEEDD_TEST_MYSQL_DSN does not parse: %v", err)
	}
	feedtest.RequireServices(t, cfg.Addr)
	cfg, err = mysql.ParseDSN(testenv.CreateDatabase(t, "feedd_commit_"))
	if err != nil {
		t.Fatal(err)
	}
	cut := startCommitCutter(t, cfg.Addr)
	cfg.Addr = cut.addr()
	ctx := t.Context()
	s := openWithUser(t, cfg.FormatDSN())

	p := feed.Post{ID: 7 << 16, AuthorID: 1, Content: "sent, committed, answer lost"}
	idem := feed.Idempotency{Key: "lost-commit", Fingerprint: make([]byte, 32), TTL: time.Hour}
	cut.arm()
	if _, _, err := s.CreatePost(ctx, p, idem); err == nil || !connLost(err) {
		t.Fatalf("CreatePost whose COMMIT's answer was lost: %v; want the lost connection, not a repeat", err)
	}
	if !cut.fired() {
		t.Fatal("the proxy saw no COMMIT")
	}
	got, created, err := s.CreatePost(ctx, p, idem)
	if err != nil || created || got.ID != p.ID {
		t.Fatalf("CreatePost again with the same key: post %d, created %v, %v; want post %d, created false", got.ID, created, err, p.ID)
	}
	var posts, events int
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM posts").Scan(&posts); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM outbox").Scan(&events); err != nil {
		t.Fatal(err)
	}
	if posts != 1 || events != 1 {
		t.Fatalf("%d posts and %d outbox events; want 1 and 1", posts, events)
	}
}

// commitCutter is a TCP proxy to a MySQL server that, once armed, passes
// the next COMMIT on to the server, lets it commit, and then breaks the
// connection before the answer reaches the client.
type commitCutter struct {
	t      *testing.T
	ln     net.Listener
	target string
	armed  atomic.Bool
	cut    atomic.Bool
}

func startCommitCutter(t *testing.T, target string) *commitCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &commitCutter{t: t, ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go c.serve(client)
		}
	}()
	return c
}

func (c *commitCutter) addr() string { return c.ln.Addr().String() }
func (c *commitCutter) arm()         { c.armed.Store(true) }
func (c *commitCutter) fired() bool  { return c.cut.Load() }

func (c *commitCutter) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", c.target)
	if err != nil {
		return
	}
	defer server.Close()
	go io.Copy(client, server)
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		if _, err := server.Write(buf[:n]); err != nil {
			return
		}
		if bytes.Contains(buf[:n], []byte("COMMIT")) && c.armed.CompareAndSwap(true, false) {
			// The server commits; the client never hears of it.
			c.cut.Store(true)
			client.(*net.TCPConn).SetLinger(0)
			client.Close()
			time.Sleep(200 * time.Millisecond)
			return
		}
	}
}
