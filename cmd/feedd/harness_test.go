package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/testenv"
)

// The behavioural suite runs every test against four stacks: the
// embedded default (SQLite, in-process cache and queue), the real services
// (MariaDB, Redis, RabbitMQ on this machine's loopback defaults), the
// same with a Redis Cluster instead of the single Redis
// (FEEDD_TEST_REDIS_CLUSTER_URL, which .ci/redis-cluster.sh prints), and
// the real services with PostgreSQL in MariaDB's place, over real HTTP.
// Under CI=true a missing service fails the run.

// testRedis is the suite's Redis unless FEEDD_TEST_E2E_REDIS_URL says
// otherwise: a database of its own, because one test flushes it.
const testRedis = "redis://127.0.0.1:6379/2"

type stack struct {
	name string
	env  func(t *testing.T) map[string]string
}

// clusterURL returns the Redis Cluster of the cluster stack. Without one
// the stack skips on a laptop and fails under CI=true.
func clusterURL(t *testing.T) string {
	t.Helper()
	return clusterURLFrom(t, "FEEDD_TEST_REDIS_CLUSTER_URL", ".ci/redis-cluster.sh")
}

// clusterURLFrom returns the Redis Cluster the variable names, which
// starter starts.
func clusterURLFrom(t *testing.T, variable, starter string) string {
	t.Helper()
	url := os.Getenv(variable)
	if url == "" {
		feedtest.Missing(t, "%s is not set: run %s, which starts a Redis Cluster, and export what it prints", variable, starter)
	}
	c := clusterClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		feedtest.Missing(t, "Redis Cluster at %s (%s) is unreachable: %v", url, variable, err)
	}
	return url
}

// clusterClient returns a client of the test Cluster, closed at the end.
func clusterClient(t *testing.T, url string) *redis.ClusterClient {
	t.Helper()
	c, err := rediscache.NewClient(url, "", 0)
	if err != nil {
		t.Fatalf("FEEDD_TEST_REDIS_CLUSTER_URL: %v", err)
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		c.Close()
		t.Fatalf("FEEDD_TEST_REDIS_CLUSTER_URL=%s is not a redis+cluster:// URL", url)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// deletePrefix removes every key under prefix from every master of a
// Cluster, one key per command: other packages' tests share the Cluster,
// so nothing flushes it.
func deletePrefix(t *testing.T, c *redis.ClusterClient, prefix string) {
	t.Helper()
	ctx := context.Background()
	err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Unlink(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	})
	if err != nil {
		t.Logf("cleanup: delete keys %s*: %v", prefix, err)
	}
}

// The stacks, and the one place that decides each one's SQL backend.
var stacks = []stack{
	{"embedded", func(t *testing.T) map[string]string {
		return map[string]string{"FEEDD_DATA_DIR": t.TempDir()}
	}},
	{"services", func(t *testing.T) map[string]string {
		return servicesEnv(t, mariaDB, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
	}},
	{"cluster", func(t *testing.T) map[string]string {
		url := clusterURL(t)
		env := servicesEnv(t, mariaDB, url)
		c := clusterClient(t, url)
		t.Cleanup(func() { deletePrefix(t, c, env["FEEDD_REDIS_PREFIX"]) })
		return env
	}},
	{"postgres", func(t *testing.T) map[string]string {
		return servicesEnv(t, postgreSQL, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
	}},
}

// forEachStack runs f as a subtest per stack, for the tests of
// replicaSuite per read replica pair too, for those of shardedSuite on 4
// logical shards over two MariaDB servers, and for those of
// shardedOnPostgres over two PostgreSQL servers.
func forEachStack(t *testing.T, f func(t *testing.T, env map[string]string)) {
	for _, s := range stacks {
		t.Run(s.name, func(t *testing.T) { f(t, s.env(t)) })
	}
	if replicaSuite[t.Name()] {
		forEachReplicaPair(t, func(t *testing.T, p *replicaPair) { f(t, p.env(t)) })
	}
	if shardedSuite[t.Name()] {
		t.Run("sharded", func(t *testing.T) { f(t, shardedEnv(t, false)) })
	}
	if shardedOnPostgres[t.Name()] {
		t.Run("sharded-postgres", func(t *testing.T) { f(t, shardedEnv(t, true)) })
	}
}

// stackEnv returns the environment of the named stack for t.
func stackEnv(t *testing.T, name string) map[string]string {
	t.Helper()
	for _, s := range stacks {
		if s.name == name {
			return s.env(t)
		}
	}
	t.Fatalf("no stack %q", name)
	return nil
}

// sqlServerStacks are the stacks of the two SQL servers with a single
// Redis.
var sqlServerStacks = []string{"services", "postgres"}

// forEachSQLServer runs f as a subtest on the stack of each SQL server
// with a single Redis (services on MariaDB, postgres): for what a test
// does to, or checks of, the SQL server itself.
func forEachSQLServer(t *testing.T, f func(t *testing.T, env map[string]string)) {
	for _, name := range sqlServerStacks {
		t.Run(name, func(t *testing.T) { f(t, stackEnv(t, name)) })
	}
}

// instance is one running feedd (role all) started in process through run's
// own start function, so tests can reach its backends.
type instance struct {
	t     *testing.T
	url   string
	admin string
	d     *deps
	cfg   config
	stop  func()
	http  *http.Client
	out   *testenv.SyncBuffer // what it printed, when started by runFeedd
	// api is package client with the admin token, for the helpers that
	// map onto it; tests that send bad input on purpose use do. It never
	// retries, so a test sees every answer as the server gave it.
	api *client.Client
}

// startFeedd starts feedd with env (plus overrides), lets tweak adjust the
// backends first (fault injection), and stops it when the test ends.
func startFeedd(t *testing.T, env map[string]string, tweak func(*deps), overrides ...string) *instance {
	t.Helper()
	return startRole(t, "all", env, tweak, overrides...)
}

// startRole is startFeedd for any long-running role: all, serve or work.
func startRole(t *testing.T, role string, env map[string]string, tweak func(*deps), overrides ...string) *instance {
	t.Helper()
	merged := map[string]string{"FEEDD_ADDR": "127.0.0.1:0", "FEEDD_REFRESH_INTERVAL": "1ms"}
	for k, v := range env {
		merged[k] = v
	}
	for i := 0; i+1 < len(overrides); i += 2 {
		merged[overrides[i]] = overrides[i+1]
	}
	cfg, err := parseConfig([]string{role}, func(k string) string { return merged[k] }, io.Discard)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	d, err := openDeps(ctx, cfg, logger)
	if err != nil {
		cancel()
		t.Fatalf("open backends: %v", err)
	}
	if tweak != nil {
		tweak(d)
	}
	out := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		err := start(ctx, cfg, d, logger, out)
		d.close(logger)
		done <- err
	}()
	in := &instance{t: t, d: d, cfg: cfg, http: &http.Client{Timeout: 30 * time.Second}}
	deadline := time.Now().Add(20 * time.Second)
	for in.url == "" {
		for _, line := range strings.Split(out.String(), "\n") {
			if _, after, ok := strings.Cut(line, "listening on "); ok {
				in.url = strings.TrimSpace(after)
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("feedd did not start; output: %s", out.String())
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("feedd exited at start: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	in.admin = d.adminToken
	in.api = newAPI(t, in.url, in.admin)
	in.stop = stopper(t, cancel, done)
	t.Cleanup(in.stop)
	return in
}

// resp is a decoded JSON response.
type resp struct {
	status int
	body   map[string]any
	raw    []byte
	header http.Header
}

func (r resp) str(k string) string {
	s, _ := r.body[k].(string)
	return s
}

func (r resp) errCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r resp) items() []map[string]any {
	raw, _ := r.body["items"].([]any)
	out := make([]map[string]any, len(raw))
	for i, it := range raw {
		out[i], _ = it.(map[string]any)
	}
	return out
}

// do sends a request; body may be nil, a string (sent raw) or a value
// (sent as JSON). hdr are extra header name/value pairs.
func (in *instance) do(method, path, token string, body any, hdr ...string) resp {
	in.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			in.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, in.url+path, rd)
	if err != nil {
		in.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := in.http.Do(req)
	if err != nil {
		in.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{status: res.StatusCode, raw: raw, header: res.Header}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			in.t.Fatalf("%s %s: response is not JSON: %v: %s", method, path, err, raw)
		}
	}
	return r
}

// must sends a request and fails the test unless the status is want.
func (in *instance) must(want int, method, path, token string, body any, hdr ...string) resp {
	in.t.Helper()
	r := in.do(method, path, token, body, hdr...)
	if r.status != want {
		in.t.Fatalf("%s %s: status %d; want %d; body %s", method, path, r.status, want, r.raw)
	}
	return r
}

// newAPI returns a client of the feedd at url acting with token, that
// neither retries nor makes up idempotency keys: the tests see exactly
// what they send and what the server answers.
func newAPI(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.WithToken(token), client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 1}),
		client.WithoutAutoIdempotencyKeys(), client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// as is the instance's client acting with token.
func (in *instance) as(token string) *client.Client { return in.api.WithToken(token) }

// user creates a user and returns its id and a token for it.
func (in *instance) user(name string) (string, string) {
	in.t.Helper()
	ctx := context.Background()
	u, err := in.api.CreateUser(ctx, client.CreateUserParams{Name: name})
	if err != nil {
		in.t.Fatalf("create user %s: %v", name, err)
	}
	tok, err := in.api.CreateToken(ctx, u.ID, time.Hour)
	if err != nil {
		in.t.Fatalf("token for %s: %v", name, err)
	}
	return u.ID.String(), tok.Token
}

func (in *instance) follow(token, id string) {
	in.t.Helper()
	uid, err := client.ParseID(id)
	if err != nil {
		in.t.Fatal(err)
	}
	if err := in.as(token).Follow(context.Background(), uid); err != nil {
		in.t.Fatalf("follow %s: %v", id, err)
	}
}

func (in *instance) post(token, content string) string {
	in.t.Helper()
	p, err := in.as(token).CreatePost(context.Background(), client.CreatePostParams{Content: content})
	if err != nil {
		in.t.Fatalf("post %q: %v", content, err)
	}
	return p.ID.String()
}

// feedAll pages through a whole home feed with the given page size and
// returns the post ids in order.
func (in *instance) feedAll(token string, limit int) []string {
	in.t.Helper()
	var page client.Page[client.Post]
	c := in.as(token)
	return in.pageAll("feed", limit, func(p client.PageParams) (client.Page[client.Post], error) {
		err := c.FeedPageInto(context.Background(), p, &page)
		return page, err
	})
}

// pageAll pages through a whole feed read by next, with the given page
// size, checking that every page but the last is full, and returns the
// post ids in order.
func (in *instance) pageAll(what string, limit int, next func(client.PageParams) (client.Page[client.Post], error)) []string {
	in.t.Helper()
	var ids []string
	params := client.PageParams{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 10000 {
			in.t.Fatalf("%s paging does not end", what)
		}
		page, err := next(params)
		if err != nil {
			in.t.Fatalf("%s page %d: %v", what, pages, err)
		}
		for _, p := range page.Items {
			ids = append(ids, p.ID.String())
		}
		if page.NextCursor == "" {
			return ids
		}
		if len(page.Items) != limit {
			in.t.Fatalf("%s page %d has %d items but a next_cursor; want full pages (%d)", what, pages, len(page.Items), limit)
		}
		params.Cursor = page.NextCursor
	}
}

// feedEventually pages through a feed until it equals want: fan-out is
// asynchronous, so a post shows up in followers' feeds shortly after its
// publish returns, not before.
func (in *instance) feedEventually(token string, limit int, want []string) {
	in.t.Helper()
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = in.feedAll(token, limit)
		if slicesEqual(got, want) {
			return
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("feed (limit %d) = %d posts %v; want %d posts %v", limit, len(got), got, len(want), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// flushRedis empties the suite's Redis database, as a Redis restart would;
// on the shared Cluster it deletes the test's keys instead. The embedded
// stack has no Redis (its cache lives in the process the test keeps):
// there it does nothing, so a test that loses Redis mid-way runs on every
// stack.
func flushRedis(t *testing.T, env map[string]string) {
	t.Helper()
	url := env["FEEDD_REDIS_URL"]
	if url == "" {
		return
	}
	if strings.HasPrefix(url, "redis+cluster://") {
		deletePrefix(t, clusterClient(t, url), env["FEEDD_REDIS_PREFIX"])
		return
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.FlushDB(context.Background()).Err(); err != nil {
		t.Fatalf("flush redis: %v", err)
	}
}

// stopper returns a function that ends an in-process feedd (cancel) and
// checks, once, that run returned nil (on done) within 30s.
func stopper(t *testing.T, cancel context.CancelFunc, done <-chan error) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("feedd exited with %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("feedd did not stop within 30s of its context ending")
			}
		})
	}
}
