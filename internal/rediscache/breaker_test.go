package rediscache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/testproxy"
)

// reached is a hook installed inside the breaker: it counts the commands,
// pipelines and dials that got past it, on their way to the proxy.
type reached struct{ calls, dials atomic.Int64 }

func (r *reached) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		r.dials.Add(1)
		return next(ctx, network, addr)
	}
}

func (r *reached) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.calls.Add(1)
		return next(ctx, cmd)
	}
}

func (r *reached) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.calls.Add(1)
		return next(ctx, cmds)
	}
}

func (r *reached) total() int64 { return r.calls.Load() + r.dials.Load() }

const (
	testFailures = 3
	testCooldown = time.Second
)

// guarded is a client of the test Redis through a proxy the test cuts,
// with a Breaker on a clock the test moves and a reached hook inside it.
type guarded struct {
	client redis.UniversalClient
	proxy  *testproxy.Proxy
	b      *Breaker
	clk    *feedtest.Clock
	inner  *reached
	prefix string
	// changes are the breaker's state changes, "from>to".
	mu      sync.Mutex
	changes []string
}

func newGuarded(t *testing.T, cluster bool) *guarded {
	t.Helper()
	testServer(t) // skip or fail, as every test here, without Redis
	opts, err := redis.ParseURL(cmp.Or(os.Getenv("FEEDD_TEST_REDIS_URL"), defaultRedisURL))
	if err != nil {
		t.Fatal(err)
	}
	direct := *opts
	p, err := testproxy.Start(opts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	g := &guarded{proxy: p, clk: feedtest.NewClock(time.Unix(1_700_000_000, 0)), inner: &reached{}, prefix: randomPrefix()}
	if cluster {
		// A ClusterClient whose only seed is the proxy: enough to see the
		// hook open and refuse on a Cluster client while the seed is cut.
		c, err := NewClient("redis+cluster://"+p.Addr(), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		g.client = c
	} else {
		opts.Addr = p.Addr()
		g.client = redis.NewClient(opts)
	}
	t.Cleanup(func() { g.client.Close() })
	g.b = AddBreaker(g.client, breaker.Config{Failures: testFailures, Cooldown: testCooldown, Now: g.clk.Now},
		func(_ string, from, to breaker.State) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.changes = append(g.changes, from.String()+">"+to.String())
		})
	if cc, ok := g.client.(*redis.ClusterClient); ok {
		// The breakers are the nodes' hooks: reached goes inside them.
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(g.inner) })
	} else {
		g.client.AddHook(g.inner)
	}
	if !cluster {
		t.Cleanup(func() {
			direct := redis.NewClient(&direct)
			defer direct.Close()
			deleteKeys(t, direct, g.prefix)
		})
	}
	return g
}

func (g *guarded) state(t *testing.T, want breaker.State, when string) {
	t.Helper()
	if got := g.b.State(); got != want {
		t.Fatalf("%s: breaker %v; want %v", when, got, want)
	}
}

// get is a GET of a key that does not exist: redis.Nil while Redis answers.
func (g *guarded) get(ctx context.Context) error {
	return g.client.Get(ctx, g.prefix+"missing").Err()
}

// pipe is a pipeline of two GETs of missing keys and a SET; it returns
// Exec's error and the per-command errors.
func (g *guarded) pipe(ctx context.Context) (error, []error) {
	p := g.client.Pipeline()
	p.Get(ctx, g.prefix+"missing:1")
	p.Set(ctx, g.prefix+"set", "v", time.Minute)
	p.Get(ctx, g.prefix+"missing:2")
	cmds, err := p.Exec(ctx)
	var errs []error
	for _, c := range cmds {
		errs = append(errs, c.Err())
	}
	return err, errs
}

// openBy cuts the proxy and makes testFailures failing calls with call,
// each of which must reach the proxy and fail with a network error.
func (g *guarded) openBy(t *testing.T, call func() error) {
	t.Helper()
	g.proxy.Cut()
	for i := range testFailures {
		g.state(t, breaker.Closed, fmt.Sprintf("after %d failed calls", i))
		before := g.inner.total()
		start := time.Now()
		err := call()
		if err == nil || errors.Is(err, breaker.ErrOpen) || !Unavailable(err) {
			t.Fatalf("call %d with Redis cut: %v; want a network error", i+1, err)
		}
		if g.inner.total() == before {
			t.Fatalf("call %d with Redis cut did not reach the client", i+1)
		}
		t.Logf("failed call %d took %v: %v", i+1, time.Since(start).Round(time.Millisecond), err)
	}
	g.state(t, breaker.Open, fmt.Sprintf("after %d failed calls", testFailures))
}

func TestBreakerOpensAndRecovers(t *testing.T) {
	g := newGuarded(t, false)
	ctx := t.Context()
	if err := g.get(ctx); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET of a missing key: %v; want redis.Nil", err)
	}
	g.openBy(t, func() error { return g.get(ctx) })
	g.refuses(t, func() error { return g.get(ctx) })

	// After the cool-down, with Redis still cut, the probe fails and the
	// breaker opens again.
	g.clk.Add(testCooldown)
	if err := g.get(ctx); errors.Is(err, breaker.ErrOpen) || !Unavailable(err) {
		t.Fatalf("probe with Redis cut: %v; want it to reach Redis and fail", err)
	}
	g.state(t, breaker.Open, "after a failed probe")
	if err := g.get(ctx); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("GET after a failed probe: %v; want breaker.ErrOpen", err)
	}

	// Redis back: one probe (on a new connection: the cut closed the
	// old ones) closes it.
	g.proxy.Restore()
	g.clk.Add(testCooldown)
	if err := g.get(ctx); !errors.Is(err, redis.Nil) {
		t.Fatalf("probe with Redis back: %v; want redis.Nil", err)
	}
	g.state(t, breaker.Closed, "after a good probe")
	for range 3 {
		if err := g.client.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING after recovery: %v", err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	want := fmt.Sprint([]string{"closed>open", "open>half-open", "half-open>open", "open>half-open", "half-open>closed"})
	if got := fmt.Sprint(g.changes); got != want {
		t.Fatalf("state changes %s; want %s", got, want)
	}
}

// TestBreakerClusterClient installs the breaker on a ClusterClient whose
// only seed is the proxy (the test Redis is not a Cluster, so only the
// outage half is checked here): failures open it, and then commands fail
// at once without reaching the client.
func TestBreakerClusterClient(t *testing.T) {
	g := newGuarded(t, true)
	ctx := t.Context()
	g.openBy(t, func() error { return g.get(ctx) })
	g.refuses(t, func() error { return g.get(ctx) })
	g.refuses(t, func() error { err, _ := g.pipe(ctx); return err })
}

// refuses checks that call, while the breaker is open, fails at once
// with breaker.ErrOpen and reaches nothing behind the breaker.
func (g *guarded) refuses(t *testing.T, call func() error) {
	t.Helper()
	before := g.inner.total()
	start := time.Now()
	for range 10 {
		if err := call(); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("call while open: %v; want an error wrapping breaker.ErrOpen", err)
		}
	}
	if n := g.inner.total() - before; n != 0 {
		t.Fatalf("10 calls while open reached the client %d times; want 0", n)
	}
	t.Logf("10 refused calls took %v", time.Since(start))
}

func TestBreakerIgnoresAnswers(t *testing.T) {
	g := newGuarded(t, false)
	ctx := t.Context()
	list := g.prefix + "list"
	if err := g.client.RPush(ctx, list, "x").Err(); err != nil {
		t.Fatal(err)
	}
	answers := []struct {
		name string
		call func() error
	}{
		{"redis.Nil", func() error { return g.get(ctx) }},
		{"script error", func() error {
			return g.client.Eval(ctx, "return redis.error_reply('ERR feedd test: boom')", []string{g.prefix + "k"}).Err()
		}},
		{"script runtime error", func() error {
			return g.client.Eval(ctx, "return redis.call('NOSUCHCOMMAND')", []string{g.prefix + "k"}).Err()
		}},
		{"NOSCRIPT", func() error {
			return g.client.EvalSha(ctx, "0000000000000000000000000000000000000000", []string{g.prefix + "k"}).Err()
		}},
		{"WRONGTYPE", func() error { return g.client.Get(ctx, list).Err() }},
	}
	for _, a := range answers {
		for i := range testFailures + 1 {
			err := a.call()
			if err == nil || Unavailable(err) {
				t.Fatalf("%s, call %d: %v; want an error reply that is not an outage", a.name, i+1, err)
			}
		}
		g.state(t, breaker.Closed, fmt.Sprintf("after %d × %s", testFailures+1, a.name))
	}

	// A caller that gives up says nothing about Redis, even while it is
	// cut.
	g.proxy.Cut()
	for range testFailures + 1 {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := g.get(cctx); err == nil {
			t.Fatal("GET with a cancelled context succeeded")
		}
		cctx, cancel = context.WithTimeout(ctx, time.Nanosecond)
		<-cctx.Done()
		if err := g.get(cctx); err == nil {
			t.Fatal("GET with an expired deadline succeeded")
		}
		cancel()
	}
	g.state(t, breaker.Closed, "after calls whose caller had given up")
	g.proxy.Restore()

	// A pipeline whose GETs miss answers redis.Nil: not an outage.
	for range testFailures + 1 {
		if err, _ := g.pipe(ctx); !errors.Is(err, redis.Nil) {
			t.Fatalf("pipeline with misses: %v; want redis.Nil", err)
		}
	}
	g.state(t, breaker.Closed, "after pipelines with misses")
}

func TestBreakerPipelines(t *testing.T) {
	for _, tc := range []struct {
		name string
		tx   bool
	}{{"pipeline", false}, {"transaction", true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuarded(t, false)
			ctx := t.Context()
			pipe := func() (error, []error) {
				if !tc.tx {
					return g.pipe(ctx)
				}
				cmds, err := g.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, g.prefix+"tx", "v", time.Minute)
					p.Incr(ctx, g.prefix+"n")
					return nil
				})
				var errs []error
				for _, c := range cmds {
					errs = append(errs, c.Err())
				}
				return err, errs
			}
			g.openBy(t, func() error { err, _ := pipe(); return err })

			before := g.inner.total()
			err, errs := pipe()
			if !errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("pipeline while open: %v; want an error wrapping breaker.ErrOpen", err)
			}
			if len(errs) == 0 {
				t.Fatal("pipeline while open returned no commands")
			}
			for i, e := range errs {
				if !errors.Is(e, breaker.ErrOpen) {
					t.Fatalf("pipeline while open, command %d: %v; want breaker.ErrOpen", i, e)
				}
			}
			if n := g.inner.total() - before; n != 0 {
				t.Fatalf("a pipeline while open reached the client %d times; want 0", n)
			}
			// A single command is refused too: one breaker for both.
			if err := g.get(ctx); !errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("GET while open: %v; want breaker.ErrOpen", err)
			}

			g.proxy.Restore()
			g.clk.Add(testCooldown)
			err, errs = pipe()
			if tc.tx && err != nil {
				t.Fatalf("probe transaction with Redis back: %v", err)
			}
			if !tc.tx && !errors.Is(err, redis.Nil) {
				t.Fatalf("probe pipeline with Redis back: %v; want redis.Nil (its GETs miss)", err)
			}
			for i, e := range errs {
				if e != nil && !errors.Is(e, redis.Nil) {
					t.Fatalf("probe with Redis back, command %d: %v", i, e)
				}
			}
			g.state(t, breaker.Closed, "after a good probe pipeline")
		})
	}
}

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.Nil, false},
		{fmt.Errorf("rediscache: read: %w", redis.Nil), false},
		{redis.ErrNoScript, false},
		{redis.ErrClosed, false},
		{errors.New("WRONGTYPE Operation against a key holding the wrong kind of value"), false}, // not a reply: unknown, not counted
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{fmt.Errorf("x: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), true},
		{io.EOF, true},
		{redis.ErrPoolTimeout, true},
		{context.DeadlineExceeded, true},
	} {
		if got := Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}

// TestBreakerPerClusterNode cuts one master of the test Cluster off from a
// client (its connections go through a proxy the test cuts; the Cluster
// itself is shared and stays up): that node's breaker opens and its keys
// fail at once, while the keys of the other masters are still served, one
// by one and in a pipeline that spans both. A probe after the cool-down
// closes it when the node is back.
func TestBreakerPerClusterNode(t *testing.T) {
	newClient := testCluster(t)
	ctx := t.Context()
	admin := newClient().(*redis.ClusterClient)
	defer admin.Close()
	slots, err := admin.ClusterSlots(ctx).Result()
	if err != nil || len(slots) < 2 {
		t.Fatalf("CLUSTER SLOTS = %v, %v; want at least two masters", slots, err)
	}
	victim := slots[0].Nodes[0].Addr
	// keyOn returns a key whose slot the range r serves, or one off it.
	keyOn := func(r redis.ClusterSlot, on bool) string {
		for i := 0; ; i++ {
			k := fmt.Sprintf("feeddtest:breaker:%d", i)
			s, err := admin.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if (int(s) >= r.Start && int(s) <= r.End) == on {
				return k
			}
		}
	}
	cut, served := keyOn(slots[0], true), keyOn(slots[0], false)

	p, err := testproxy.Start(victim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	opt, err := parseClusterURL(os.Getenv("FEEDD_TEST_REDIS_CLUSTER_URL"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == victim {
			addr = p.Addr()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	client := redis.NewClusterClient(opt)
	t.Cleanup(func() { client.Close() })
	clk := feedtest.NewClock(time.Unix(1_700_000_000, 0))
	var opened []string
	var mu sync.Mutex
	b := AddBreaker(client, breaker.Config{Failures: testFailures, Cooldown: testCooldown, Now: clk.Now}, func(node string, from, to breaker.State) {
		mu.Lock()
		defer mu.Unlock()
		if to == breaker.Open && from == breaker.Closed {
			opened = append(opened, node)
		}
	})
	for _, k := range []string{cut, served} {
		if err := client.Get(ctx, k).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("GET %s before the cut: %v; want redis.Nil", k, err)
		}
	}

	p.Cut()
	var last error
	for range 2 * testFailures {
		if last = client.Get(ctx, cut).Err(); errors.Is(last, breaker.ErrOpen) {
			break
		}
	}
	if !errors.Is(last, breaker.ErrOpen) || b.OpenNodes() != 1 || b.State() != breaker.Open {
		t.Fatalf("node %s cut: GET = %v, %d open nodes, state %v; want breaker.ErrOpen, 1, open", victim, last, b.OpenNodes(), b.State())
	}
	mu.Lock()
	if len(opened) != 1 || opened[0] != victim {
		t.Errorf("breakers opened: %v; want only %s", opened, victim)
	}
	mu.Unlock()
	// The console lists each node's breaker: the cut one open, the other
	// called one closed.
	nodes := b.Nodes()
	if nodes[victim] != breaker.Open || len(nodes) < 2 {
		t.Errorf("Nodes() = %v; want %s open and another one", nodes, victim)
	}
	for n, st := range nodes {
		if n != victim && st != breaker.Closed {
			t.Errorf("Nodes()[%s] = %v; want closed", n, st)
		}
	}
	start := time.Now()
	if err := client.Get(ctx, served).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET of a key on another master while %s is cut: %v; want redis.Nil (served)", victim, err)
	}
	pipe := client.Pipeline()
	onCut, onServed := pipe.Get(ctx, cut), pipe.Get(ctx, served)
	_, _ = pipe.Exec(ctx)
	if !errors.Is(onCut.Err(), breaker.ErrOpen) || !errors.Is(onServed.Err(), redis.Nil) {
		t.Fatalf("pipeline across both masters: %v and %v; want breaker.ErrOpen for the cut one, redis.Nil for the other", onCut.Err(), onServed.Err())
	}
	t.Logf("with %s cut and its breaker open: a GET on another master and a pipeline across both took %v", victim, time.Since(start))

	p.Restore()
	clk.Add(testCooldown)
	if err := client.Get(ctx, cut).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("probe with %s back: %v; want redis.Nil", victim, err)
	}
	if b.OpenNodes() != 0 || b.State() != breaker.Closed {
		t.Fatalf("after a good probe: %d open nodes, state %v; want 0, closed", b.OpenNodes(), b.State())
	}
}
