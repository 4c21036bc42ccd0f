package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"

	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

// The defences, end to end: the real program (run, as main calls it) over
// real HTTP, on the real services where they matter.

// runFeedd runs the whole program with env, as main would, and returns an
// instance to drive it and the JSON log it writes.
func runFeedd(t *testing.T, env map[string]string, overrides ...string) (*instance, *testenv.SyncBuffer) {
	t.Helper()
	merged := map[string]string{"FEEDD_ADDR": "127.0.0.1:0", "FEEDD_REFRESH_INTERVAL": "1ms"}
	for k, v := range env {
		merged[k] = v
	}
	for i := 0; i+1 < len(overrides); i += 2 {
		merged[overrides[i]] = overrides[i+1]
	}
	ctx, cancel := context.WithCancel(context.Background())
	out, logs := &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"all"}, func(k string) string { return merged[k] }, nil, out, logs) }()
	in := &instance{t: t, http: &http.Client{Timeout: 30 * time.Second}, out: out}
	deadline := time.Now().Add(20 * time.Second)
	for in.url == "" || in.admin == "" {
		for _, line := range strings.Split(out.String(), "\n") {
			if _, after, ok := strings.Cut(line, "listening on "); ok {
				in.url = strings.TrimSpace(after)
			}
			if _, after, ok := strings.Cut(line, "admin token: "); ok {
				in.admin = strings.TrimSpace(after)
				if strings.Contains(in.admin, "FEEDD_ADMIN_TOKEN") {
					in.admin = merged["FEEDD_ADMIN_TOKEN"]
				}
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("feedd did not start; output: %s; log: %s", out.String(), logs.String())
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("feedd exited at start: %v; log: %s", err, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	in.api = newAPI(t, in.url, in.admin)
	in.stop = stopper(t, cancel, done)
	t.Cleanup(in.stop)
	return in, logs
}

// stallProxy forwards TCP to a backend and can stall it: while stalled,
// bytes stop flowing both ways on every connection, old and new, as when
// a database hangs. It never touches the backend itself.
type stallProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *stallProxy) addr() string { return p.ln.Addr().String() }

func (p *stallProxy) stall(on bool) {
	p.mu.Lock()
	p.stalled = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *stallProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// pipe copies src to dst, holding each chunk while the proxy is stalled.
func (p *stallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.stalled {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) close() {
	p.ln.Close()
	p.stall(false)
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestSQLBreaker: with MariaDB or PostgreSQL stalled (through a proxy
// this test owns), feed reads answer from Redis alone, marked degraded,
// writes fail fast with 503, /readyz names sql; when it answers again all
// recovers.
func TestSQLBreaker(t *testing.T) {
	forEachSQLServer(t, testSQLBreaker)
}

func testSQLBreaker(t *testing.T, env map[string]string) {
	proxy := stallSQL(t, env)
	// The cooldown outlasts the checks made while the breaker is open,
	// also on a loaded machine: a breaker that goes half-open between
	// them lets one call through to the stalled database.
	in, _ := runFeedd(t, env,
		"FEEDD_SQL_TIMEOUT", "300ms", "FEEDD_BREAKER_FAILURES", "2", "FEEDD_BREAKER_COOLDOWN", "8s",
		"FEEDD_LOG_LEVEL", "error")
	aID, aTok := in.user("author")
	_, rTok := in.user("reader")
	in.follow(rTok, aID)
	var want []string
	for i := range 3 {
		want = append([]string{in.post(aTok, "before the stall "+string(rune('a'+i)))}, want...)
	}
	in.feedEventually(rTok, 10, want)
	ranked := in.must(200, "GET", "/v1/me/feed?order=ranked&limit=1", rTok, nil)

	proxy.stall(true)
	// Within a few reads the breaker opens and pages come from Redis.
	var page resp
	testenv.Eventually(t, 15*time.Second, "a degraded feed page with the breaker open", func() bool {
		page = in.do("GET", "/v1/me/feed?limit=10", rTok, nil)
		open := metricValue(string(in.do("GET", "/metrics", "", nil).raw), "feedd_sql_breaker_state") == "2"
		return page.status == 200 && page.body["degraded"] == true && open
	})
	var got []string
	for _, it := range page.items() {
		got = append(got, it["id"].(string))
	}
	if !slicesEqual(got, want) {
		t.Fatalf("degraded page = %v; want the cached feed %v", got, want)
	}
	begin := time.Now()
	if r := in.do("GET", "/v1/me/feed?limit=10", rTok, nil); r.body["degraded"] != true || len(r.items()) != len(want) {
		t.Fatalf("feed with the breaker open: %s; want the degraded cached page", r.raw)
	}
	t.Logf("degraded feed page served in %v with SQL stalled", time.Since(begin))
	// The ranked feed too: a first page ranks the cached feed, a kept
	// snapshot pages on from the caches.
	if r := in.do("GET", "/v1/me/feed?order=ranked&limit=10", rTok, nil); r.status != 200 || r.body["degraded"] != true || len(r.items()) != len(want) {
		t.Fatalf("ranked feed with the breaker open: %d %s; want the degraded ranked page of %d posts", r.status, r.raw, len(want))
	}
	if r := in.do("GET", "/v1/me/feed?order=ranked&limit=10&cursor="+ranked.str("next_cursor"), rTok, nil); r.status != 200 || r.body["degraded"] != true || len(r.items()) != len(want)-1 {
		t.Fatalf("ranked snapshot's next page with the breaker open: %d %s; want the %d posts after the first, degraded", r.status, r.raw, len(want)-1)
	}
	begin = time.Now()
	w := in.do("POST", "/v1/posts", aTok, map[string]any{"content": "during the stall"})
	took := time.Since(begin)
	if w.status != 503 || w.errCode() != "unavailable" || w.header.Get("Retry-After") == "" {
		t.Fatalf("publish while SQL stalls: %d %s (Retry-After %q); want 503 unavailable with Retry-After", w.status, w.raw, w.header.Get("Retry-After"))
	}
	t.Logf("publish refused in %v while the breaker is open (SQL timeout 300ms)", took)
	ready := in.do("GET", "/readyz", "", nil)
	checks, _ := ready.body["checks"].(map[string]any)
	if ready.status != 503 || checks["sql"] != "down" || checks["cache"] != "ok" {
		t.Fatalf("readyz while SQL stalls: %d %s; want 503 with checks.sql down, cache ok", ready.status, ready.raw)
	}

	proxy.stall(false)
	testenv.Eventually(t, 30*time.Second, "writes succeed again", func() bool {
		return in.do("POST", "/v1/posts", aTok, map[string]any{"content": "after the stall"}).status == 201
	})
	testenv.Eventually(t, 20*time.Second, "a complete, not degraded feed", func() bool {
		r := in.do("GET", "/v1/me/feed?limit=10", rTok, nil)
		return r.status == 200 && r.body["degraded"] == nil && len(r.items()) == 4
	})
	in.must(200, "GET", "/readyz", "", nil)
}

// TestSwitchesEndToEnd flips L2, L3 and L4 through the admin API on the
// real program and checks what readers and writers see.
func TestSwitchesEndToEnd(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		// Authors with 2 or more followers are pulled (hybrid).
		in, _ := runFeedd(t, env, "FEEDD_PULL_THRESHOLD", "2", "FEEDD_LOG_LEVEL", "error")
		star, starTok := in.user("star")
		small, smallTok := in.user("small")
		_, fanTok := in.user("fan")
		_, otherTok := in.user("other")
		in.follow(fanTok, star)
		in.follow(otherTok, star)
		in.follow(fanTok, small)
		if m := in.must(200, "GET", "/v1/users/"+star, fanTok, nil).str("delivery_mode"); m != "pull" {
			t.Fatalf("star delivery mode %q; want pull", m)
		}
		s1 := in.post(starTok, "star post")
		m1 := in.post(smallTok, "small post")
		in.feedEventually(fanTok, 10, []string{m1, s1})

		set := func(body string) map[string]any {
			return in.must(200, "PUT", "/v1/admin/degradation", in.admin, body).body
		}
		// L2: inbox only: reads stop merging the pulled authors' lists
		// (what the inbox got from SQL rebuilds and refreshes stays).
		merged := func() string {
			return metricValue(string(in.do("GET", "/metrics", "", nil).raw), `feedd_feed_reads_total{path="merged"}`)
		}
		listReads := func() string {
			m := string(in.do("GET", "/metrics", "", nil).raw)
			return metricValue(m, `feedd_cache_lookups_total{cache="author_list",result="hit"}`) + "/" + metricValue(m, `feedd_cache_lookups_total{cache="author_list",result="miss"}`)
		}
		set(`{"L2": true}`)
		m0, o0 := merged(), listReads()
		for range 5 {
			in.must(200, "GET", "/v1/me/feed?limit=10", fanTok, nil)
		}
		if m, o := merged(), listReads(); m != m0 || o != o0 {
			t.Fatalf("under L2 merged reads went %s -> %s, author list lookups %s -> %s; want no merging", m0, m, o0, o)
		}
		// Inboxes hold only pushed authors' posts: the star's drop out.
		in.feedEventually(fanTok, 10, []string{m1})
		set(`{"L2": false}`)
		in.must(200, "GET", "/v1/me/feed?limit=10", fanTok, nil)
		if m := merged(); m == m0 {
			t.Fatalf("with L2 off the read did not merge (merged reads still %s)", m)
		}
		in.feedEventually(fanTok, 10, []string{m1, s1})

		// L1: no likes enrichment: posts carry no likes fields (rather
		// than a misleading 0), and they come back when it is lifted.
		in.must(200, "PUT", "/v1/posts/"+m1+"/like", fanTok, nil)
		likesOf := func() (any, bool) {
			items := in.must(200, "GET", "/v1/me/feed?limit=10", fanTok, nil).items()
			for _, it := range items {
				if it["id"] == m1 {
					c, ok := it["like_count"]
					return c, ok
				}
			}
			t.Fatalf("post %s is not in the feed", m1)
			return nil, false
		}
		set(`{"L1": true}`)
		if c, ok := likesOf(); ok {
			t.Fatalf("under L1 a feed post carries like_count %v; want no likes fields", c)
		}
		if p := in.must(200, "GET", "/v1/posts/"+m1, fanTok, nil).body; p["liked_by_me"] != nil {
			t.Fatalf("under L1 GET /v1/posts carries liked_by_me %v; want none", p["liked_by_me"])
		}
		set(`{"L1": false}`)
		if c, ok := likesOf(); !ok || c != float64(1) {
			t.Fatalf("with L1 off like_count = %v (present %v); want 1", c, ok)
		}

		// L4: the last good first page, from the cache.
		in.feedAll(fanTok, 10) // a good first page, remembered
		set(`{"L4": true}`)
		m2 := in.post(smallTok, "posted under L4")
		time.Sleep(300 * time.Millisecond) // the fan-out has landed by now
		r := in.must(200, "GET", "/v1/me/feed?limit=10", fanTok, nil)
		var ids []string
		for _, it := range r.items() {
			ids = append(ids, it["id"].(string))
		}
		if r.body["degraded"] != true || !slicesEqual(ids, []string{m1, s1}) {
			t.Fatalf("first page under L4 = %v degraded=%v; want the saved page [%s %s], degraded", ids, r.body["degraded"], m1, s1)
		}
		set(`{"L4": false}`)
		in.feedEventually(fanTok, 10, []string{m2, m1, s1})

		// L3: read-only.
		body := set(`{"L3": true}`)
		if body["level"].(float64) != 3 {
			t.Fatalf("level = %v; want 3", body["level"])
		}
		w := in.do("POST", "/v1/posts", smallTok, map[string]any{"content": "refused"})
		if w.status != 503 || w.header.Get("Retry-After") == "" {
			t.Fatalf("publish under L3: %d %s; want 503 with Retry-After", w.status, w.raw)
		}
		if w := in.do("PUT", "/v1/me/following/"+small, otherTok, nil); w.status != 503 {
			t.Fatalf("follow under L3: %d; want 503", w.status)
		}
		in.must(200, "GET", "/v1/me/feed", fanTok, nil)
		metrics := string(in.do("GET", "/metrics", "", nil).raw)
		for _, want := range []string{`feedd_degradation_switch{switch="L3"} 1`, `feedd_degradation_level 3`, `feedd_read_only_refusals_total 2`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "degradation"))
			}
		}
		set(`{"L3": false}`)
		in.post(smallTok, "accepted again")
	})
}

// TestSwitchesReachEveryProcess: a switch set through one process holds
// in another process of the same deployment within the poll interval.
func TestSwitchesReachEveryProcess(t *testing.T) {
	forEachSQLServer(t, testSwitchesReachEveryProcess)
}

func testSwitchesReachEveryProcess(t *testing.T, env map[string]string) {
	a, _ := runFeedd(t, env, "FEEDD_SWITCH_POLL", "50ms", "FEEDD_LOG_LEVEL", "error")
	b, _ := runFeedd(t, env, "FEEDD_SWITCH_POLL", "50ms", "FEEDD_LOG_LEVEL", "error")
	_, tok := a.user("writer")
	b.post(tok, "before")
	if sh := a.must(200, "PUT", "/v1/admin/degradation", a.admin, `{"L3": true}`).body["shared"]; sh != true {
		t.Fatalf("shared = %v; want true", sh)
	}
	testenv.Eventually(t, 5*time.Second, "the other process turns read-only", func() bool {
		return b.do("POST", "/v1/posts", tok, map[string]any{"content": "x"}).status == 503
	})
	if got := b.must(200, "GET", "/v1/admin/degradation", b.admin, nil).body["switches"].(map[string]any)["L3"]; got != true {
		t.Fatalf("L3 on the other process = %v; want true", got)
	}
	a.must(200, "PUT", "/v1/admin/degradation", a.admin, `{"L3": false}`)
	testenv.Eventually(t, 5*time.Second, "the other process takes writes again", func() bool {
		return b.do("POST", "/v1/posts", tok, map[string]any{"content": "y"}).status == 201
	})
}

// TestRateLimitEndToEnd: the per-user write bucket from configuration.
func TestRateLimitEndToEnd(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in, _ := runFeedd(t, env, "FEEDD_RATE_USER_WRITE", "0.01:3", "FEEDD_LOG_LEVEL", "error")
		aID, aTok := in.user("a")
		_, bTok := in.user("b")
		in.post(aTok, "1")
		in.post(aTok, "2")
		in.follow(bTok, aID)
		in.post(aTok, "3")
		r := in.do("POST", "/v1/posts", aTok, map[string]any{"content": "4"})
		if r.status != 429 || r.errCode() != "rate_limited" || r.header.Get("Retry-After") == "" {
			t.Fatalf("4th write: %d %s Retry-After %q; want 429 rate_limited with Retry-After", r.status, r.raw, r.header.Get("Retry-After"))
		}
		// The refused post does not exist.
		if n := len(in.must(200, "GET", "/v1/users/"+aID+"/posts", bTok, nil).items()); n != 3 {
			t.Fatalf("%d posts; want 3", n)
		}
		in.must(200, "GET", "/v1/me/feed", aTok, nil) // reads are not limited
		in.post(bTok, "b's first")                    // nor other users
		if m := string(in.do("GET", "/metrics", "", nil).raw); !strings.Contains(m, `feedd_rate_limited_total{class="write",scope="user"} 1`) {
			t.Errorf("metrics lack the rejection:\n%s", grepLines(m, "rate_limited"))
		}
	})
}

// TestRequestIDFollowsAPost: the id a client sends with a publish shows up
// in the JSON log lines of the API, the relay, the dispatcher and the
// worker that handled that post.
func TestRequestIDFollowsAPost(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		// Direct fan-out below 1 follower: every post is split into tasks,
		// so a worker handles it too.
		in, logs := runFeedd(t, env, "FEEDD_LOG_LEVEL", "debug", "FEEDD_DIRECT_FANOUT", "1")
		aID, aTok := in.user("author")
		_, rTok := in.user("reader")
		in.follow(rTok, aID)
		in.feedAll(rTok, 10) // the reader's inbox exists
		const id = "trace-me-4242"
		p := in.must(201, "POST", "/v1/posts", aTok, map[string]any{"content": "traced"}, "X-Request-Id", id)
		if got := p.header.Get("X-Request-Id"); got != id {
			t.Fatalf("X-Request-Id echoed %q; want %q", got, id)
		}
		in.feedEventually(rTok, 10, []string{p.str("id")})
		want := map[string]string{"http request": "", "relayed post event": "relay", "dispatching post": "dispatcher", "task done": "worker", "post delivered": "worker"}
		testenv.Eventually(t, 10*time.Second, "log lines of every stage with the request id", func() bool {
			seen := map[string]bool{}
			sc := bufio.NewScanner(strings.NewReader(logs.String()))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var rec map[string]any
				if json.Unmarshal(sc.Bytes(), &rec) != nil || rec["request_id"] != id {
					continue
				}
				msg, _ := rec["msg"].(string)
				if comp, ok := want[msg]; ok && (comp == "" || rec["component"] == comp) {
					seen[msg] = true
				}
			}
			return len(seen) == len(want)
		})
	})
}

// TestBulkheads: with every connection of the workers' pool held (a
// fan-out stuck on slow SQL), the API still reads and writes on its own
// pools.
func TestBulkheads(t *testing.T) {
	forEachSQLServer(t, testBulkheads)
}

func testBulkheads(t *testing.T, env map[string]string) {
	in := startFeedd(t, env, nil, "FEEDD_SQL_WORK_CONNS", "2")
	if in.d.workStore == in.d.store {
		t.Fatal("the API and the workers share one store; want separate pools")
	}
	work, _ := databases(in.d.workStore)[0].Pools()
	ctx := context.Background()
	var held []*sql.Conn
	for range 2 {
		c, err := work.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// The workers' pool is exhausted: a third connection cannot be had.
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := work.Conn(tctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third work connection: %v; want the pool exhausted", err)
	}
	aID, aTok := in.user("a")
	_, rTok := in.user("r")
	in.follow(rTok, aID)
	p := in.post(aTok, "published while the workers' pool is exhausted")
	in.must(200, "GET", "/v1/posts/"+p, rTok, nil)
	in.must(200, "GET", "/v1/me/feed", rTok, nil)
	in.must(200, "GET", "/v1/users/"+aID, rTok, nil)
	// And once the workers get their connections back, the post arrives.
	for _, c := range held {
		c.Close()
	}
	held = nil
	in.feedEventually(rTok, 10, []string{p})
}

// TestObservability: the metrics docs/operations.md lists are exposed,
// with the request id echoed and readiness reported per dependency.
func TestObservability(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in, _ := runFeedd(t, env, "FEEDD_LOG_LEVEL", "error")
		aID, aTok := in.user("a")
		_, rTok := in.user("r")
		in.follow(rTok, aID)
		p := in.post(aTok, "measured")
		in.feedEventually(rTok, 10, []string{p})
		r := in.must(200, "GET", "/readyz", "", nil)
		checks, _ := r.body["checks"].(map[string]any)
		for _, dep := range []string{"sql", "cache", "broker"} {
			if checks[dep] != "ok" {
				t.Errorf("readyz checks.%s = %v; want ok (%s)", dep, checks[dep], r.raw)
			}
		}
		if r.header.Get("X-Request-Id") == "" {
			t.Error("no X-Request-Id on a response")
		}
		var m string
		// The outbox's backlog is counted at the scrape, and the relay marks
		// the post sent when the broker confirms it, which can come after
		// the fan-out already delivered it: both are waited for.
		testenv.Eventually(t, 10*time.Second, "delivery lag observed and the outbox drained", func() bool {
			m = string(in.do("GET", "/metrics", "", nil).raw)
			return strings.Contains(m, "feedd_fanout_delivered_seconds_count 1") && strings.Contains(m, "feedd_outbox_backlog 0")
		})
		for _, name := range []string{
			`feedd_http_request_duration_seconds_bucket{code="201",method="POST",route="/v1/posts"`,
			"feedd_fanout_delivered_seconds_bucket",
			"feedd_fanout_lag_seconds_bucket",
			"feedd_outbox_backlog 0",
			`feedd_queue_depth{queue="posts"}`,
			`feedd_queue_depth{queue="tasks"}`,
			`feedd_queue_dead_letters{queue="posts"} 0`,
			`feedd_cache_lookups_total{cache="inbox",result=`,
			`feedd_cache_lookups_total{cache="hot_post",result="hit"}`,
			"feedd_inbox_rebuilds_total",
			"feedd_sql_breaker_state 0",
			`feedd_degradation_switch{switch="L1"} 0`,
			"feedd_degradation_level 0",
			`go_sql_open_connections{db_name="api_write"}`,
		} {
			if !strings.Contains(m, name) {
				t.Errorf("metrics lack %s", name)
			}
		}
	})
}

// metricValue returns the value of the sample named exactly series, or "".
func metricValue(text, series string) string {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestLoadSheddingWhenSQLHangs: with SQL hanging (and the breaker set not
// to open), reads pile up to the in-flight bound; one more is shed at once
// with 503 instead of joining the queue, and writes keep their own slots.
func TestLoadSheddingWhenSQLHangs(t *testing.T) {
	forEachSQLServer(t, testLoadSheddingWhenSQLHangs)
}

func testLoadSheddingWhenSQLHangs(t *testing.T, env map[string]string) {
	proxy := stallSQL(t, env)
	in, _ := runFeedd(t, env,
		"FEEDD_MAX_INFLIGHT_READS", "2", "FEEDD_SHED_WAIT", "20ms",
		"FEEDD_SQL_TIMEOUT", "3s", "FEEDD_BREAKER_FAILURES", "1000", "FEEDD_LOG_LEVEL", "error")
	aID, aTok := in.user("a")
	bID, _ := in.user("b")
	proxy.stall(true)
	results := make(chan int, 2)
	for _, id := range []string{aID, bID} {
		go func() { results <- in.do("GET", "/v1/users/"+id, aTok, nil).status }()
	}
	testenv.Eventually(t, 5*time.Second, "both read slots held by reads waiting on SQL", func() bool {
		return metricValue(string(in.do("GET", "/metrics", "", nil).raw), `feedd_inflight_requests{class="read"}`) == "2"
	})
	var shed resp
	testenv.Eventually(t, 5*time.Second, "a read shed with 503", func() bool {
		shed = in.do("GET", "/v1/users/"+aID, aTok, nil)
		e, _ := shed.body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		return shed.status == 503 && strings.Contains(msg, "overloaded")
	})
	if shed.errCode() != "unavailable" || shed.header.Get("Retry-After") == "" {
		t.Fatalf("shed read: %s (Retry-After %q); want unavailable with Retry-After", shed.raw, shed.header.Get("Retry-After"))
	}
	if m := string(in.do("GET", "/metrics", "", nil).raw); !strings.Contains(m, `feedd_shed_total{class="read"}`) {
		t.Errorf("metrics lack feedd_shed_total:\n%s", grepLines(m, "shed"))
	}
	proxy.stall(false)
	for range 2 {
		<-results // the held reads finish (answered or timed out), freeing their slots
	}
	in.must(200, "GET", "/v1/users/"+aID, aTok, nil)
}

func TestDefenceSettings(t *testing.T) {
	for _, tt := range []struct {
		in    string
		rate  float64
		burst int
		bad   bool
	}{
		{"0", 0, 1, false},
		{"20:200", 20, 200, false},
		{"0.5:3", 0.5, 3, false},
		{"7", 7, 7, false},
		{"x", 0, 0, true},
		{"-1:2", 0, 0, true},
		{"5:0", 0, 0, true},
		{"5:x", 0, 0, true},
	} {
		_, err := parseConfig(nil, func(k string) string {
			if k == "FEEDD_RATE_USER_WRITE" {
				return tt.in
			}
			return ""
		}, io.Discard)
		if tt.bad {
			if err == nil {
				t.Errorf("FEEDD_RATE_USER_WRITE=%q accepted", tt.in)
			}
			continue
		}
		r, perr := parseRule(tt.in)
		if err != nil || perr != nil || r.Rate != tt.rate || r.Burst != tt.burst {
			t.Errorf("%q = %+v (%v, %v); want rate %v burst %d", tt.in, r, err, perr, tt.rate, tt.burst)
		}
	}
	cfg, err := parseConfig([]string{"-max-inflight-reads", "7", "-shed-wait", "1s"}, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.maxReads != 7 || cfg.shedWait != time.Second || cfg.rateUserWrite.Rate != 20 {
		t.Fatalf("flags: %+v, %v", cfg, err)
	}
	if _, err := parseConfig([]string{"-sql-work-conns", "0"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("a pool of 0 connections was accepted")
	}
	if cfg.rateUserRead.Rate != 50 || cfg.rateUserRead.Burst != 200 {
		t.Fatalf("default per-user read bucket %+v; want 50/s, burst 200", cfg.rateUserRead)
	}
	if c, err := parseConfig(nil, func(k string) string {
		return map[string]string{"FEEDD_RATE_USER_READ": "0", "FEEDD_USER_MAX_INFLIGHT": "0"}[k]
	}, io.Discard); err != nil || c.rateUserRead.Rate != 0 || c.userMaxInflight != 0 {
		t.Fatalf("FEEDD_RATE_USER_READ=0, FEEDD_USER_MAX_INFLIGHT=0 (off): %+v, %d (%v)", c.rateUserRead, c.userMaxInflight, err)
	}
	if cfg.userMaxInflight != 16 || cfg.bodyTimeout != 10*time.Second {
		t.Fatalf("defaults: user-max-inflight %d, body-timeout %v; want 16, 10s", cfg.userMaxInflight, cfg.bodyTimeout)
	}
	if c, err := parseConfig([]string{"-user-max-inflight", "3"}, func(k string) string {
		return map[string]string{"FEEDD_BODY_TIMEOUT": "1500ms"}[k]
	}, io.Discard); err != nil || c.userMaxInflight != 3 || c.bodyTimeout != 1500*time.Millisecond {
		t.Fatalf("-user-max-inflight 3, FEEDD_BODY_TIMEOUT=1500ms: %d, %v (%v)", c.userMaxInflight, c.bodyTimeout, err)
	}
	if _, err := parseConfig([]string{"-body-timeout", "0s"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("a body timeout of 0 was accepted")
	}
	if cfg.cacheFailures != 5 || cfg.cacheCooldown != time.Second {
		t.Fatalf("cache breaker defaults: %d failures, cool-down %v; want 5, 1s", cfg.cacheFailures, cfg.cacheCooldown)
	}
	cfg, err = parseConfig(nil, func(k string) string {
		return map[string]string{"FEEDD_CACHE_BREAKER_FAILURES": "3", "FEEDD_CACHE_BREAKER_COOLDOWN": "250ms"}[k]
	}, io.Discard)
	if err != nil || cfg.cacheFailures != 3 || cfg.cacheCooldown != 250*time.Millisecond {
		t.Fatalf("FEEDD_CACHE_BREAKER_FAILURES=3, FEEDD_CACHE_BREAKER_COOLDOWN=250ms: %d, %v (%v)", cfg.cacheFailures, cfg.cacheCooldown, err)
	}
	if _, err := parseConfig([]string{"-cache-breaker-failures", "0"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("a cache breaker opening after 0 failures was accepted")
	}
}

// TestSlowBodies: one user opens 200 connections that each send the
// headers of a post of 100 bytes and then only "{". Other users' posts
// keep answering 201 meanwhile (no write slot is held by a body still
// arriving, and the user's own bound refuses most of the 200 at once),
// and every slow connection is answered (408, or 429 past the user's
// bound) and closed once the body deadline passes.
func TestSlowBodies(t *testing.T) {
	for _, s := range stacks[:2] {
		t.Run(s.name, func(t *testing.T) {
			const timeout = 2 * time.Second
			// Fewer write slots than the user's bound: slow bodies holding
			// slots would leave none for anyone else.
			in, _ := runFeedd(t, s.env(t), "FEEDD_BODY_TIMEOUT", timeout.String(), "FEEDD_MAX_INFLIGHT_WRITES", "8", "FEEDD_LOG_LEVEL", "error")
			_, slowTok := in.user("slow")
			_, aTok := in.user("a")
			_, bTok := in.user("b")
			addr := strings.TrimPrefix(in.url, "http://")

			type answer struct {
				status int
				code   string
				closed bool
				at     time.Time
				err    error
			}
			const sockets = 200
			answers := make(chan answer, sockets)
			start := time.Now()
			for range sockets {
				go func() {
					a := answer{}
					defer func() { a.at = time.Now(); answers <- a }()
					c, err := net.Dial("tcp", addr)
					if err != nil {
						a.err = err
						return
					}
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(30 * time.Second))
					if _, a.err = io.WriteString(c, "POST /v1/posts HTTP/1.1\r\nHost: feedd\r\nAuthorization: Bearer "+slowTok+
						"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); a.err != nil {
						return
					}
					br := bufio.NewReader(c)
					res, err := http.ReadResponse(br, nil)
					if err != nil {
						a.err = err
						return
					}
					var body struct {
						Error struct{ Code string } `json:"error"`
					}
					_ = json.NewDecoder(res.Body).Decode(&body)
					res.Body.Close()
					a.status, a.code = res.StatusCode, body.Error.Code
					_, err = br.ReadByte()
					a.closed = errors.Is(err, io.EOF)
				}()
			}

			// Others publish until every slow connection is answered.
			type published struct {
				status int
				raw    string
				at     time.Time
			}
			var (
				mu   sync.Mutex
				pubs []published
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for _, tok := range []string{aTok, bTok} {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						r := in.do("POST", "/v1/posts", tok, map[string]any{"content": "while the slow ones wait"})
						mu.Lock()
						pubs = append(pubs, published{r.status, string(r.raw), time.Now()})
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
					}
				})
			}
			first := time.Time{}
			counts := map[string]int{}
			for range sockets {
				a := <-answers
				if a.err != nil {
					t.Errorf("a slow connection: %v; want an answer", a.err)
					continue
				}
				counts[strconv.Itoa(a.status)+" "+a.code]++
				if (a.status != 408 || a.code != "request_timeout") && (a.status != 429 || a.code != "rate_limited") {
					t.Errorf("a slow connection got %d %q; want 408 request_timeout or 429 rate_limited", a.status, a.code)
				}
				if !a.closed {
					t.Errorf("a slow connection answered %d stayed open; want it closed", a.status)
				}
				if first.IsZero() || a.at.Before(first) {
					first = a.at
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("slow connections: %v, all answered within %s", counts, time.Since(start).Round(time.Millisecond))
			if counts["408 request_timeout"] == 0 {
				t.Errorf("no slow connection got 408; got %v", counts)
			}
			during := 0
			for _, p := range pubs {
				if p.status != 201 {
					t.Errorf("another user's post answered %d %s; want 201", p.status, p.raw)
				}
				if p.at.Before(first) {
					during++
				}
			}
			if during == 0 {
				t.Errorf("no other user's post was answered while the slow connections were open (%d in all)", len(pubs))
			}
			// Nothing is left held: the slow user posts again.
			in.must(201, "POST", "/v1/posts", slowTok, map[string]any{"content": "on time"})
		})
	}
}

// printed returns the rest of the line feedd printed after prefix, or "".
func (in *instance) printed(prefix string) string {
	for _, line := range strings.Split(in.out.String(), "\n") {
		if _, after, ok := strings.Cut(line, prefix); ok {
			return strings.TrimSpace(after)
		}
	}
	return ""
}

// TestMetricsAddr: with FEEDD_METRICS_ADDR the metrics (and the profiles,
// when FEEDD_PPROF_ADDR names the same address) are served on their own
// listener, the public port answers /metrics 404, and the listener closes
// with the process.
func TestMetricsAddr(t *testing.T) {
	in, _ := runFeedd(t, stacks[0].env(t), "FEEDD_METRICS_ADDR", "127.0.0.1:0", "FEEDD_PPROF_ADDR", "127.0.0.1:0", "FEEDD_LOG_LEVEL", "error")
	_, tok := in.user("a")
	in.post(tok, "counted")
	r := in.do("GET", "/metrics", "", nil)
	if r.status != 404 || r.errCode() != "not_found" {
		t.Fatalf("GET /metrics on the API's port: %d %s; want 404 not_found", r.status, r.raw)
	}
	in.must(200, "GET", "/readyz", "", nil) // the probes stay on the API's port
	in.must(200, "GET", "/healthz", "", nil)

	private := in.printed("metrics at ")
	if private == "" {
		t.Fatalf("feedd did not say where its metrics are; output:\n%s", in.out.String())
	}
	base := strings.TrimSuffix(private, "/metrics")
	if base == strings.TrimPrefix(in.url, "http://") || base == in.url {
		t.Fatalf("metrics at %s, the API's own address", private)
	}
	for path, want := range map[string]string{
		"/metrics":             `feedd_http_request_duration_seconds_count{code="201",method="POST",route="/v1/posts"} 1`,
		"/debug/pprof/cmdline": "",
	} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s%s: %v", base, path, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s on the metrics address: %d, want 200 with %q; got\n%s", path, res.StatusCode, want, grepLines(string(body), "route=\"/v1/posts\""))
		}
	}
	in.stop()
	if res, err := http.Get(private); err == nil {
		res.Body.Close()
		t.Fatalf("the metrics address still answers (%d) after feedd stopped", res.StatusCode)
	}
}

// TestUserReadLimitByDefault: out of the box, one user reading as fast as
// it can (enumerating users, say) is throttled after its burst, while
// other users and the admin read on.
func TestUserReadLimitByDefault(t *testing.T) {
	in, _ := runFeedd(t, stacks[0].env(t), "FEEDD_LOG_LEVEL", "error")
	aID, aTok := in.user("a")
	_, bTok := in.user("b")
	var refused resp
	n := 0
	for n = 1; n <= 2000; n++ {
		r := in.do("GET", "/v1/users/"+aID, aTok, nil)
		if r.status == 429 {
			refused = r
			break
		}
		if r.status != 200 {
			t.Fatalf("read %d: %d %s", n, r.status, r.raw)
		}
	}
	if refused.status != 429 || refused.errCode() != "rate_limited" || refused.header.Get("Retry-After") == "" {
		t.Fatalf("2000 reads as one user: no 429 rate_limited with Retry-After (last %d %s)", refused.status, refused.raw)
	}
	if n <= 200 {
		t.Fatalf("refused at read %d; want the burst of 200 first", n)
	}
	in.must(200, "GET", "/v1/users/"+aID, bTok, nil)
	in.must(200, "GET", "/v1/users/"+aID, in.admin, nil)
	if m := string(in.do("GET", "/metrics", "", nil).raw); !strings.Contains(m, `feedd_rate_limited_total{class="read",scope="user"} 1`) {
		t.Errorf("metrics lack the refused read:\n%s", grepLines(m, "rate_limited"))
	}
}

// TestRequestIDLoggedOnce: a request's log line names its request id
// once, though both the API (on its request line) and the logger (from
// the context, for every other line) add it.
func TestRequestIDLoggedOnce(t *testing.T) {
	in, logs := runFeedd(t, stacks[0].env(t), "FEEDD_LOG_LEVEL", "debug")
	_, tok := in.user("a")
	const id = "once-4242"
	in.must(201, "POST", "/v1/posts", tok, map[string]any{"content": "logged"}, "X-Request-Id", id)
	var line string
	testenv.Eventually(t, 5*time.Second, "the request's log line", func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(l), &rec) == nil && rec["msg"] == "http request" && rec["request_id"] == id {
				line = l
				return true
			}
		}
		return false
	})
	if n := strings.Count(line, `"request_id"`); n != 1 {
		t.Fatalf("request_id %d times in %s; want once", n, line)
	}

	// Any other line logged with the request's context gets it once too,
	// and a logger that names it already keeps its own.
	var buf testenv.SyncBuffer
	logger := newLogger(&buf, "info", "json")
	ctx := feed.WithRequestID(context.Background(), id)
	logger.InfoContext(ctx, "from the context")
	logger.InfoContext(ctx, "named here", "request_id", id)
	logger.With("request_id", id).InfoContext(ctx, "named by With")
	logger.Info("no request")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for i, want := range []int{1, 1, 1, 0} {
		if n := strings.Count(lines[i], `"request_id"`); n != want {
			t.Errorf("request_id %d times in %s; want %d", n, lines[i], want)
		}
	}
}
