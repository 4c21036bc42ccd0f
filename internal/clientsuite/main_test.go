package clientsuite_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/testenv"
)

// The client's tests run the real program: TestMain builds feedd once,
// and each test starts it, as a process, on the stacks of the behavioural
// suite (the embedded default, MariaDB + Redis + RabbitMQ, the same with a
// Redis Cluster, and PostgreSQL + Redis + RabbitMQ), then talks to it only
// through the client.

// testRedis is the Redis of the services stack unless
// FEEDD_TEST_CLIENT_REDIS_URL says otherwise; database 6 belongs to this
// package, and each test's keys carry a prefix of their own, deleted at
// its end.
const testRedis = "redis://127.0.0.1:6379/6"

var feeddBin string

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "feedd-client-test-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "client test: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	feeddBin = filepath.Join(dir, "feedd")
	build := exec.Command("go", "build", "-o", feeddBin, "github.com/feedd/feedd/cmd/feedd")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "client test: go build feedd: %v\n%s", err, out)
		return 1
	}
	return feedtest.Main(m)
}

// proc is a running feedd.
type proc struct {
	url    string
	cmd    *exec.Cmd
	out    *testenv.SyncBuffer
	exited chan struct{}
}

// start runs `feedd` (role all) with exactly env plus a free loopback
// address, and waits until /readyz answers 200.
func start(env map[string]string) (*proc, error) {
	// The port is chosen free, then closed for feedd to take: another
	// process (a test package running beside) may take it first, and
	// then this feedd exits, unable to listen. Try again on another.
	for attempt := 1; ; attempt++ {
		p, err := startOn(env)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return p, err
		}
	}
}

// startOn starts feedd on a port free a moment ago, and waits until it
// says it listens there and answers ready: answers from that address
// before its own "listening on" line would be another process's.
func startOn(env map[string]string) (*proc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	env = maps.Clone(env)
	env["FEEDD_ADDR"] = addr
	p := &proc{url: "http://" + addr, cmd: exec.Command(feeddBin), out: &testenv.SyncBuffer{}, exited: make(chan struct{})}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		p.cmd.Env = append(p.cmd.Env, k+"="+env[k])
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	c, _ := client.New(p.url, client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 1}))
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := errors.New("it has not said it listens yet")
		if strings.Contains(p.out.String(), "listening on "+p.url+"\n") {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = c.Ready(ctx)
			cancel()
			if err == nil {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("feedd exited at start (%v): %s", p.cmd.ProcessState, p.out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.stop()
			return nil, fmt.Errorf("feedd not ready within 60s (%v): %s", err, p.out)
		}
	}
}

// stop ends the process with SIGTERM, then SIGKILL after 10s.
func (p *proc) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("feedd did not stop within 10s of SIGTERM")
	}
}

// server is one feedd of a test, and its admin client.
type server struct {
	*proc
	admin *client.Client
}

// stack is one of the suite's stacks: the environment of a feedd on it.
type stack struct {
	name string
	env  func(t *testing.T) map[string]string
}

var stacks = []stack{
	{"embedded", func(t *testing.T) map[string]string {
		return map[string]string{"FEEDD_DATA_DIR": t.TempDir()}
	}},
	{"services", func(t *testing.T) map[string]string {
		feedtest.RequireServices(t)
		return servicesEnv(t, testenv.Getenv("FEEDD_TEST_CLIENT_REDIS_URL", testRedis),
			"FEEDD_MYSQL_DSN", testenv.CreateDatabase(t, "feedd_client_"))
	}},
	{"cluster", func(t *testing.T) map[string]string {
		feedtest.RequireServices(t)
		url := os.Getenv("FEEDD_TEST_REDIS_CLUSTER_URL")
		if url == "" {
			feedtest.Missing(t, "FEEDD_TEST_REDIS_CLUSTER_URL is not set: run .ci/redis-cluster.sh, which starts a Redis Cluster, and export what it prints")
		}
		return servicesEnv(t, url, "FEEDD_MYSQL_DSN", testenv.CreateDatabase(t, "feedd_client_"))
	}},
	{"postgres", func(t *testing.T) map[string]string {
		u, err := url.Parse(testenv.PostgresDSN())
		if err != nil {
			t.Fatalf("FEEDD_TEST_POSTGRES_DSN: %v", err)
		}
		feedtest.RequireServices(t, u.Host, "127.0.0.1:6379", "127.0.0.1:5672")
		return servicesEnv(t, testenv.Getenv("FEEDD_TEST_CLIENT_REDIS_URL", testRedis),
			"FEEDD_POSTGRES_DSN", testenv.CreatePostgresDatabase(t, "feedd_client_"))
	}},
}

// servicesEnv gives a test a Redis key prefix and a queue prefix of its
// own on the services, removed when it ends, and its database (sqlEnv is
// the variable that names it to feedd, dsn a database of the test's own).
func servicesEnv(t *testing.T, redisURL, sqlEnv, dsn string) map[string]string {
	t.Helper()
	amqpURL, amqpPrefix := testenv.AMQPURL(), "client"+testenv.RandHex(4)+"."
	t.Cleanup(func() { testenv.DeleteQueues(t, amqpURL, amqpPrefix) })
	redisPrefix := "client" + testenv.RandHex(4) + ":"
	t.Cleanup(func() { deleteKeys(t, redisURL, redisPrefix) })
	return map[string]string{
		sqlEnv:               dsn,
		"FEEDD_REDIS_URL":    redisURL,
		"FEEDD_REDIS_PREFIX": redisPrefix,
		"FEEDD_AMQP_URL":     amqpURL,
		"FEEDD_AMQP_PREFIX":  amqpPrefix,
		"FEEDD_JWT_SECRET":   testenv.RandHex(16),
	}
}

// deleteKeys removes every key under prefix, node by node on a Cluster:
// other suites share the servers, so nothing here flushes.
func deleteKeys(t *testing.T, url, prefix string) {
	c, err := rediscache.NewClient(url, "", 0)
	if err != nil {
		t.Logf("cleanup: redis %s: %v", url, err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	del := func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Unlink(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	switch rc := c.(type) {
	case *redis.ClusterClient:
		err = rc.ForEachMaster(ctx, del)
	case *redis.Client:
		err = del(ctx, rc)
	}
	if err != nil {
		t.Logf("cleanup: delete keys %s*: %v", prefix, err)
	}
}

// forEachStack runs f as a subtest per stack, against a feedd of its own
// started with env plus the name/value pairs extra.
func forEachStack(t *testing.T, f func(t *testing.T, s *server), extra ...string) {
	for _, st := range stacks {
		t.Run(st.name, func(t *testing.T) {
			env := st.env(t)
			env["FEEDD_ADMIN_TOKEN"] = "admin-" + testenv.RandHex(16)
			for i := 0; i+1 < len(extra); i += 2 {
				env[extra[i]] = extra[i+1]
			}
			p, err := start(env)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := p.stop(); err != nil {
					t.Error(err)
				}
				if t.Failed() {
					t.Logf("feedd's output:\n%s", tail(p.out.String()))
				}
			})
			admin, err := client.New(p.url, client.WithToken(env["FEEDD_ADMIN_TOKEN"]))
			if err != nil {
				t.Fatal(err)
			}
			f(t, &server{proc: p, admin: admin})
		})
	}
}

func tail(s string) string {
	if len(s) > 6000 {
		return "…" + s[len(s)-6000:]
	}
	return s
}

// user creates a user and returns it and a client acting as it.
func (s *server) user(t *testing.T, name string) (client.User, *client.Client) {
	t.Helper()
	ctx := context.Background()
	u, err := s.admin.CreateUser(ctx, client.CreateUserParams{Name: name})
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	tok, err := s.admin.CreateToken(ctx, u.ID, time.Hour)
	if err != nil {
		t.Fatalf("token of %s: %v", name, err)
	}
	return u, s.admin.WithToken(tok.Token)
}

// post publishes content as c's user.
func post(t *testing.T, c *client.Client, content string) client.Post {
	t.Helper()
	p, err := c.CreatePost(context.Background(), client.CreatePostParams{Content: content})
	if err != nil {
		t.Fatalf("post %q: %v", content, err)
	}
	return p
}

// eventually polls cond every 20 ms until it returns nil, and fails the
// test with its last error if it has not within d.
func eventually(t *testing.T, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// is reports whether err is an *Error with status and code.
func is(err error, status int, code string) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Status == status && e.Code == code
}
