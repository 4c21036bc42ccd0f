package proctest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// defaultRedis is the Redis the tests use unless FEEDD_TEST_PROC_REDIS_URL
// says otherwise. Database 4 belongs to this package. Its keys carry a
// random prefix per test and are deleted one by one: other suites share
// the server, so nothing here ever flushes.
const defaultRedis = "redis://127.0.0.1:6379/4"

// feeddBin is the binary under test, built once by TestMain in built.
var (
	feeddBin string
	built    time.Duration
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "feedd-proctest-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "proctest: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	feeddBin = filepath.Join(dir, "feedd")
	start := time.Now()
	build := exec.Command("go", "build", "-o", feeddBin, "github.com/feedd/feedd/cmd/feedd")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "proctest: go build feedd: %v\n%s", err, out)
		return 1
	}
	built = time.Since(start)
	return feedtest.Main(m)
}

// backend is a SQL database feedd runs on, as the tests get one: a fresh
// database per test on a server, named to feedd by one variable.
type backend struct {
	name string // the subtest's name
	env  string // the variable that points feedd at the database
	// addr is the server's host:port, checked before a test uses it.
	addr func(t *testing.T) string
	// create makes a database of the test's own, removed when it ends,
	// and returns its DSN.
	create func(t *testing.T) string
	open   func(ctx context.Context, dsn string) (*sqlstore.Store, error)
}

var (
	mariaDB = backend{
		name: "mariadb", env: "FEEDD_MYSQL_DSN",
		addr: func(t *testing.T) string {
			mc, err := mysql.ParseDSN(testenv.MySQLDSN())
			if err != nil {
				t.Fatalf("FEEDD_TEST_MYSQL_DSN does not parse: %v", err)
			}
			return mc.Addr
		},
		create: func(t *testing.T) string { return testenv.CreateDatabase(t, "feedd_proc_") },
		open:   sqlstore.OpenMySQL,
	}
	postgres = backend{
		name: "postgres", env: "FEEDD_POSTGRES_DSN",
		addr: func(t *testing.T) string {
			u, err := url.Parse(testenv.PostgresDSN())
			if err != nil || u.Port() == "" {
				t.Fatalf("FEEDD_TEST_POSTGRES_DSN is not a postgres:// URL with a port (%v)", err)
			}
			return u.Host
		},
		create: func(t *testing.T) string { return testenv.CreatePostgresDatabase(t, "feedd_proc_") },
		open:   sqlstore.OpenPostgres,
	}
	// backends are the SQL databases the scenarios that matter most for
	// SQL (kills, outages, chaos) run on, each as a subtest.
	backends = []backend{mariaDB, postgres}
)

// onBackends runs f as a parallel subtest per backend, named after it.
func onBackends(t *testing.T, f func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

// services are the addresses of the real backends.
type services struct{ redis, amqp string }

// requireServices returns the addresses of Redis and RabbitMQ. It skips
// the test, loudly, when one of them or b does not answer, and fails it
// instead under CI=true.
func requireServices(t *testing.T, b backend) services {
	t.Helper()
	s := services{
		redis: testenv.Getenv("FEEDD_TEST_PROC_REDIS_URL", defaultRedis),
		amqp:  testenv.AMQPURL(),
	}
	ro, err := redis.ParseURL(s.redis)
	if err != nil {
		t.Fatalf("FEEDD_TEST_PROC_REDIS_URL: %v", err)
	}
	au, err := amqp.ParseURI(s.amqp)
	if err != nil {
		t.Fatalf("FEEDD_TEST_AMQP_URL: %v", err)
	}
	feedtest.RequireServices(t, b.addr(t), ro.Addr, net.JoinHostPort(au.Host, strconv.Itoa(au.Port)))
	return s
}

// stack is one test's share of the services: its own database on the
// backend, Redis key prefix and queue prefix, all removed when the test
// ends, and direct handles on the store and the cache that the feedd
// processes use.
type stack struct {
	t          *testing.T
	env        map[string]string // FEEDD_* variables every process of the test gets
	admin      string
	store      *sqlstore.Store
	cache      *rediscache.Cache
	redis      redis.UniversalClient // the cache's client, for what a test inspects
	amqpURL    string
	amqpPrefix string
}

func newStack(t *testing.T, b backend) *stack {
	t.Helper()
	return newStackOn(t, b, requireServices(t, b))
}

// newStackOn is newStack on the services svc names (a RabbitMQ cluster).
func newStackOn(t *testing.T, b backend, svc services) *stack {
	t.Helper()
	ctx := context.Background()
	id := testenv.RandHex(5)

	dsn := b.create(t)
	store, err := b.open(ctx, dsn)
	if err != nil {
		t.Fatalf("open the %s store: %v", b.name, err)
	}
	t.Cleanup(func() { store.Close() })

	client, err := rediscache.NewClient(svc.redis, "", 0)
	if err != nil {
		t.Fatalf("redis %s: %v", svc.redis, err)
	}
	redisPrefix := "proc" + id + ":"
	cache := rediscache.New(client, rediscache.Options{Prefix: redisPrefix, InboxMax: 1000})
	t.Cleanup(func() {
		deleteKeys(t, client, redisPrefix)
		cache.Close()
	})

	amqpPrefix := "proc" + id + "."
	t.Cleanup(func() { testenv.DeleteQueues(t, svc.amqp, amqpPrefix) })

	s := &stack{
		t: t, admin: "admin-" + testenv.RandHex(16), store: store, cache: cache, redis: client,
		amqpURL: svc.amqp, amqpPrefix: amqpPrefix,
	}
	s.env = map[string]string{
		b.env:                dsn,
		"FEEDD_REDIS_URL":    svc.redis,
		"FEEDD_REDIS_PREFIX": redisPrefix,
		"FEEDD_AMQP_URL":     svc.amqp,
		"FEEDD_AMQP_PREFIX":  amqpPrefix,
		"FEEDD_ADMIN_TOKEN":  s.admin,
		"FEEDD_JWT_SECRET":   testenv.RandHex(16),
	}
	return s
}

// with returns the stack's environment plus name/value pairs.
func (s *stack) with(kv ...string) map[string]string {
	env := maps.Clone(s.env)
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

// migrate runs `feedd migrate` to completion.
func (s *stack) migrate() {
	s.t.Helper()
	if code, out := runProc(s.t, s.env, "migrate"); code != 0 {
		s.t.Fatalf("feedd migrate: exit status %d; want 0; output:\n%s", code, out)
	}
}

// deleteKeys removes every key under prefix, in batches, without
// blocking the server; on a Redis Cluster, from every master.
func deleteKeys(t *testing.T, client redis.UniversalClient, prefix string) {
	ctx := context.Background()
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		deleteNodeKeys(ctx, t, client, client.(*redis.Client), prefix)
		return
	}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		deleteNodeKeys(ctx, t, client, node, prefix)
		return nil
	})
	if err != nil {
		t.Logf("cleanup: redis keys %s*: %v", prefix, err)
	}
}

// deleteNodeKeys removes the keys under prefix that node holds, one
// UNLINK each through client (a Cluster's keys of one node may lie in
// different slots).
func deleteNodeKeys(ctx context.Context, t *testing.T, client redis.UniversalClient, node *redis.Client, prefix string) {
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, prefix+"*", 2000).Result()
		if err != nil {
			t.Logf("cleanup: scan redis keys %s*: %v", prefix, err)
			return
		}
		if len(keys) > 0 {
			pipe := client.Pipeline()
			for _, k := range keys {
				pipe.Unlink(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Logf("cleanup: unlink redis keys: %v", err)
				return
			}
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

// deadLetters returns how many messages sit in the dead-letter queues of
// posts and tasks; a queue that was never declared holds none.
func (s *stack) deadLetters() map[string]int {
	s.t.Helper()
	conn, err := testenv.DialAMQP(s.amqpURL)
	if err != nil {
		s.t.Fatalf("dial rabbitmq: %v", err)
	}
	defer conn.Close()
	out := map[string]int{}
	for _, q := range []string{s.amqpPrefix + "posts.dead", s.amqpPrefix + "tasks.dead", s.amqpPrefix + "likes.dead"} {
		ch, err := conn.Channel()
		if err != nil {
			s.t.Fatal(err)
		}
		info, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
		switch {
		case testenv.IsNotFound(err):
			out[q] = 0
		case err != nil:
			s.t.Fatalf("inspect %s: %v", q, err)
		default:
			out[q] = info.Messages
			ch.Close()
		}
	}
	return out
}

// consumers returns how many consumers queue (unprefixed) has; a queue not
// declared yet has none.
func (s *stack) consumers(queue string) int {
	s.t.Helper()
	return s.inspect(queue).Consumers
}

// inspect returns what the broker says of queue (unprefixed); a queue not
// declared yet reads as empty.
func (s *stack) inspect(queue string) amqp.Queue {
	s.t.Helper()
	conn, err := testenv.DialAMQP(s.amqpURL)
	if err != nil {
		s.t.Fatalf("dial rabbitmq: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		s.t.Fatal(err)
	}
	info, err := ch.QueueDeclarePassive(s.amqpPrefix+queue, true, false, false, false, nil)
	switch {
	case testenv.IsNotFound(err):
		return amqp.Queue{}
	case err != nil:
		s.t.Fatalf("inspect %s: %v", queue, err)
	}
	return info
}

// requireNoDeadLetters fails the test if any message was dead-lettered.
func (s *stack) requireNoDeadLetters() {
	s.t.Helper()
	for q, n := range s.deadLetters() {
		if n != 0 {
			s.t.Errorf("dead-letter queue %s holds %d messages; want 0", q, n)
		}
	}
}

// followers creates n users following author straight in SQL and
// materializes their inboxes, empty and complete, as their owners' first
// reads would have: fan-out writes only into inboxes that exist.
func (s *stack) followers(author int64, n int) []int64 {
	s.t.Helper()
	ctx := context.Background()
	gen := feed.NewIDGen(nil)
	ids := make([]int64, n)
	users := make([]feed.User, n)
	for i := range ids {
		ids[i] = gen.Next()
		users[i] = feed.User{ID: ids[i], Name: "follower " + strconv.Itoa(i)}
	}
	if err := s.store.BulkCreateUsers(ctx, users); err != nil {
		s.t.Fatalf("bulk create %d users: %v", n, err)
	}
	if err := s.store.BulkFollow(ctx, author, ids); err != nil {
		s.t.Fatalf("bulk follow %d: %v", author, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, id := range ids {
		g.Go(func() error { return s.cache.FillInbox(gctx, id, nil, true, time.Hour) })
	}
	if err := g.Wait(); err != nil {
		s.t.Fatalf("materialize inboxes: %v", err)
	}
	return ids
}

// mismatched returns the readers whose inbox is not exactly want (newest
// first), reading the inboxes in parallel.
func (s *stack) mismatched(readers, want []int64) []int64 {
	s.t.Helper()
	const parts = 8
	bad := make([][]int64, parts)
	g, ctx := errgroup.WithContext(context.Background())
	size := (len(readers) + parts - 1) / parts
	for i := range parts {
		lo, hi := min(i*size, len(readers)), min((i+1)*size, len(readers))
		g.Go(func() error {
			for _, r := range readers[lo:hi] {
				pg, err := s.cache.InboxPage(ctx, r, 0, len(want)+10)
				if err != nil {
					return err
				}
				if !slices.Equal(pg.IDs, want) {
					bad[i] = append(bad[i], r)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		s.t.Fatalf("read inboxes: %v", err)
	}
	return slices.Concat(bad...)
}

// describeInboxes renders a few readers' inboxes for a failure message.
func (s *stack) describeInboxes(readers []int64) string {
	var b strings.Builder
	for _, r := range readers[:min(len(readers), 5)] {
		pg, err := s.cache.InboxPage(context.Background(), r, 0, 20)
		fmt.Fprintf(&b, "\n  inbox of %d: ids %v exists %v (err %v)", r, pg.IDs, pg.Exists, err)
	}
	return b.String()
}

// waitInboxes waits until the inbox of every reader is exactly want,
// then checks all of them once more.
func (s *stack) waitInboxes(readers, want []int64, within time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	pending := readers
	for {
		if pending = s.mismatched(pending, want); len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("after %v, %d of %d inboxes are not exactly %v:%s",
				within, len(pending), len(readers), want, s.describeInboxes(pending))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if bad := s.mismatched(readers, want); len(bad) > 0 {
		s.t.Fatalf("%d of %d inboxes changed after holding exactly %v:%s", len(bad), len(readers), want, s.describeInboxes(bad))
	}
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is one running feedd process.
type proc struct {
	t      *testing.T
	name   string
	addr   string
	cmd    *exec.Cmd
	stdout testenv.SyncBuffer
	stderr testenv.SyncBuffer
	exited chan struct{} // closed once the process has been reaped
}

// startProc starts `feedd args...` with exactly env as its environment
// (nothing leaks in from the test's own), on a free port unless env names
// FEEDD_ADDR. A process still running when the test ends is stopped:
// SIGTERM, then SIGKILL if it has not exited within 10s.
func startProc(t *testing.T, name string, env map[string]string, args ...string) *proc {
	t.Helper()
	env = maps.Clone(env)
	if env["FEEDD_ADDR"] == "" {
		env["FEEDD_ADDR"] = freeAddr(t)
	}
	p := &proc{t: t, name: name, addr: env["FEEDD_ADDR"], exited: make(chan struct{})}
	p.cmd = exec.Command(feeddBin, args...)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		p.cmd.Env = append(p.cmd.Env, k+"="+env[k])
	}
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		// SIGTERM first: a process that closes its AMQP channels itself
		// leaves the broker less to clean up than one that vanishes.
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				select {
				case <-p.exited:
				case <-time.After(10 * time.Second):
					t.Errorf("%s (pid %d) did not die of SIGKILL within 10s", name, p.cmd.Process.Pid)
				}
			}
		}
		if t.Failed() {
			t.Logf("output of %s (%s):\n%s%s", name, strings.Join(args, " "), tail(p.stdout.String()), tail(p.stderr.String()))
		}
	})
	return p
}

func tail(s string) string {
	const keep = 6000
	if len(s) > keep {
		return "…" + s[len(s)-keep:]
	}
	return s
}

// startReady starts a process and waits until its /readyz answers 200.
func startReady(t *testing.T, name string, env map[string]string, args ...string) *proc {
	t.Helper()
	p := startProc(t, name, env, args...)
	p.waitReady(30 * time.Second)
	return p
}

func (p *proc) url() string { return "http://" + p.addr }

// output is everything the process printed so far.
func (p *proc) output() string { return p.stdout.String() + p.stderr.String() }

func (p *proc) waitReady(within time.Duration) {
	p.t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(within)
	for {
		select {
		case <-p.exited:
			p.t.Fatalf("%s exited before it was ready (%v); output:\n%s", p.name, p.cmd.ProcessState, tail(p.output()))
		default:
		}
		if res, err := c.Get(p.url() + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: GET /readyz did not answer 200 within %v; output:\n%s", p.name, within, tail(p.output()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %s to %s: %v", sig, p.name, err)
	}
}

// wait waits for the process to exit and returns how it did.
func (p *proc) wait(within time.Duration) *os.ProcessState {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState
	case <-time.After(within):
		p.t.Fatalf("%s did not exit within %v; output:\n%s", p.name, within, tail(p.output()))
		return nil
	}
}

// killedBy reports whether the process died of sig.
func killedBy(st *os.ProcessState, sig syscall.Signal) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// runProc runs `feedd args...` to its end and returns its exit status and
// output.
func runProc(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	p := startProc(t, "feedd "+strings.Join(args, " "), env, args...)
	st := p.wait(60 * time.Second)
	return st.ExitCode(), p.output()
}

// client talks to one process's HTTP API.
type client struct {
	t    *testing.T
	base string
	http *http.Client
}

func (p *proc) api() *client {
	return &client{t: p.t, base: p.url(), http: &http.Client{Timeout: 30 * time.Second}}
}

// do sends a request with an optional JSON body and returns the status and
// the body.
func (c *client) do(method, path, token string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return res.StatusCode, raw
}

// must sends a request, fails the test unless the status is want, and
// decodes the JSON answer, if any.
func (c *client) must(want int, method, path, token string, body any) map[string]any {
	c.t.Helper()
	status, raw := c.do(method, path, token, body)
	if status != want {
		c.t.Fatalf("%s %s: got status %d; want %d; body %s", method, path, status, want, raw)
	}
	var m map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			c.t.Fatalf("%s %s: answer is not JSON: %v: %s", method, path, err, raw)
		}
	}
	return m
}

// as is package client acting with token on this process; it never
// retries nor makes up idempotency keys, so a test sees every answer as
// the server gave it.
func (c *client) as(token string) *fclient.Client {
	c.t.Helper()
	api, err := fclient.New(c.base, fclient.WithToken(token), fclient.WithHTTPClient(c.http),
		fclient.WithRetryPolicy(fclient.RetryPolicy{MaxAttempts: 1}), fclient.WithoutAutoIdempotencyKeys())
	if err != nil {
		c.t.Fatal(err)
	}
	return api
}

// token mints a user token with the admin token.
func (c *client) token(admin string, user int64) string {
	c.t.Helper()
	tok, err := c.as(admin).CreateToken(context.Background(), fclient.ID(user), time.Hour)
	if err != nil {
		c.t.Fatalf("token for %d: %v", user, err)
	}
	return tok.Token
}

// newUser creates a user with the admin token and mints a token for it.
func (c *client) newUser(admin, name string) (int64, string) {
	c.t.Helper()
	u, err := c.as(admin).CreateUser(context.Background(), fclient.CreateUserParams{Name: name})
	if err != nil {
		c.t.Fatalf("create user %s: %v", name, err)
	}
	return int64(u.ID), c.token(admin, int64(u.ID))
}

// publish posts content as the token's user and returns the post's id.
func (c *client) publish(token, content string) int64 {
	c.t.Helper()
	p, err := c.as(token).CreatePost(context.Background(), fclient.CreatePostParams{Content: content})
	if err != nil {
		c.t.Fatalf("publish %q: %v", content, err)
	}
	return int64(p.ID)
}

// feed returns the post ids of the first page of the token's home feed.
func (c *client) feed(token string) []int64 {
	c.t.Helper()
	pg, err := c.as(token).FeedPage(context.Background(), fclient.PageParams{Limit: 100})
	if err != nil {
		c.t.Fatalf("feed: %v", err)
	}
	ids := make([]int64, len(pg.Items))
	for i, p := range pg.Items {
		ids[i] = int64(p.ID)
	}
	return ids
}

func parseID(t *testing.T, v any) int64 {
	t.Helper()
	s, _ := v.(string)
	id, err := feed.ParseID(s)
	if err != nil {
		t.Fatalf("id %v: %v", v, err)
	}
	return id
}
