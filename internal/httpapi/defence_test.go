package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/limit"
)

// blockingService holds every Feed call until release is closed, to fill
// the in-flight bound with real requests.
type blockingService struct {
	*fakeService
	entered chan struct{}
	release chan struct{}
}

func (b *blockingService) Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.fakeService.Feed(ctx, reader, before, n)
}

// degradedService marks every feed page degraded, as the timeline does
// when SQL is down.
type degradedService struct{ *fakeService }

func (d degradedService) Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error) {
	pg, err := d.fakeService.Feed(ctx, reader, before, n)
	pg.Degraded = true
	return pg, err
}

func newGuardedEnv(t *testing.T, svc services, tweak func(*Config)) (string, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := Config{AdminToken: testAdmin, JWTSecret: []byte(testSecret), Now: func() time.Time { return testNow }}
	tweak(&cfg)
	srv := httptest.NewServer(NewServer(slog.New(slog.DiscardHandler), cfg, svc, svc, reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	t.Cleanup(srv.Close)
	return srv.URL, reg
}

func seeded() *fakeService {
	svc := newFakeService(testNow)
	svc.seedUser(alice, "alice")
	svc.seedUser(bob, "bob")
	svc.seedUser(carol, "carol")
	return svc
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	return string(doHTTP(t, base, req{method: "GET", path: "/metrics"}).body)
}

func TestRateLimitPerUserOnWrites(t *testing.T) {
	svc := seeded()
	base, _ := newGuardedEnv(t, svc, func(c *Config) {
		c.Rates = limit.NewRates(limit.Config{PerUser: map[limit.Class]limit.Rule{limit.Write: {Rate: 0.001, Burst: 2}}})
	})
	aliceTok, bobTok := userToken(t, alice), userToken(t, bob)
	post := func(tok string) response {
		return doHTTP(t, base, req{method: "POST", path: "/v1/posts", token: tok, body: `{"content":"hi"}`})
	}
	wantStatus(t, post(aliceTok), http.StatusCreated)
	// A follow is a write too: same bucket.
	wantStatus(t, doHTTP(t, base, req{method: "PUT", path: "/v1/me/following/" + feed.FormatID(bob), token: aliceTok}), http.StatusNoContent)
	r := post(aliceTok)
	wantStatus(t, r, http.StatusTooManyRequests)
	if got := r.errorCode(t); got != feed.ERATELIMIT {
		t.Errorf("code %q; want %q", got, feed.ERATELIMIT)
	}
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q; want a positive number of seconds", ra)
	}
	// Nothing reached the service for the refused request.
	n := 0
	for _, c := range svc.calls() {
		if c.method == "Publish" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("Publish reached the service %d times; want 1", n)
	}
	// Other users and reads are not affected.
	wantStatus(t, post(bobTok), http.StatusCreated)
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: aliceTok}), http.StatusOK)
	// The admin is never limited.
	for range 5 {
		wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/users", token: testAdmin, body: `{"name":"x"}`}), http.StatusCreated)
	}
	if m := metricsText(t, base); !strings.Contains(m, `feedd_rate_limited_total{class="write",scope="user"} 1`) {
		t.Errorf("metrics lack the user-scope rejection:\n%s", grep(m, "feedd_rate_limited"))
	}
}

func TestRateLimitGlobalPerClass(t *testing.T) {
	base, _ := newGuardedEnv(t, seeded(), func(c *Config) {
		c.Rates = limit.NewRates(limit.Config{Global: map[limit.Class]limit.Rule{limit.Read: {Rate: 0.001, Burst: 3}}})
	})
	toks := []string{userToken(t, alice), userToken(t, bob), userToken(t, carol)}
	for _, tok := range toks {
		wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: tok}), http.StatusOK)
	}
	r := doHTTP(t, base, req{method: "GET", path: "/v1/users/" + feed.FormatID(alice), token: toks[0]})
	wantStatus(t, r, http.StatusTooManyRequests)
	if !strings.Contains(r.errorMessage(t), "right now") {
		t.Errorf("message %q; want the global wording", r.errorMessage(t))
	}
	// Writes have their own class.
	wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/posts", token: toks[0], body: `{"content":"hi"}`}), http.StatusCreated)
	// Probes are never limited.
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/healthz"}), http.StatusOK)
}

func TestLoadShedding(t *testing.T) {
	svc := &blockingService{fakeService: seeded(), entered: make(chan struct{}, 4), release: make(chan struct{})}
	base, _ := newGuardedEnv(t, svc, func(c *Config) {
		c.Shed = limit.NewShedder(map[limit.Class]int{limit.Read: 2, limit.Write: 2}, 50*time.Millisecond)
	})
	tok := userToken(t, alice)
	var wg sync.WaitGroup
	results := make(chan int, 2)
	for range 2 {
		wg.Go(func() { results <- doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: tok}).status })
	}
	<-svc.entered
	<-svc.entered
	// Both read slots are held: a third read waits briefly, then is shed.
	r := doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: tok})
	wantStatus(t, r, http.StatusServiceUnavailable)
	if r.errorCode(t) != feed.EUNAVAILABLE || r.header.Get("Retry-After") == "" {
		t.Errorf("shed answer %d %s Retry-After %q; want unavailable with Retry-After", r.status, r.body, r.header.Get("Retry-After"))
	}
	// Writes have their own slots.
	wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/posts", token: tok, body: `{"content":"hi"}`}), http.StatusCreated)
	close(svc.release)
	wg.Wait()
	close(results)
	for st := range results {
		if st != http.StatusOK {
			t.Errorf("a read holding a slot answered %d; want 200", st)
		}
	}
	// Slots were given back.
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: tok}), http.StatusOK)
	if m := metricsText(t, base); !strings.Contains(m, `feedd_shed_total{class="read"} 1`) {
		t.Errorf("metrics lack the shed read:\n%s", grep(m, "feedd_shed"))
	}
}

func TestDegradationSwitchesAdminAndReadOnly(t *testing.T) {
	svc := seeded()
	kv := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { kv.Close() })
	var sw *degrade.Switches
	base, reg := newGuardedEnv(t, svc, func(c *Config) {
		sw = degrade.New(slog.New(slog.DiscardHandler), kv, prometheus.NewRegistry())
		c.Switches = sw
	})
	_ = reg
	tok := userToken(t, alice)

	// Only the admin sees and flips them.
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/admin/degradation", token: tok}), http.StatusForbidden)
	wantStatus(t, doHTTP(t, base, req{method: "PUT", path: "/v1/admin/degradation", token: tok, body: `{"L3":true}`}), http.StatusForbidden)
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/admin/degradation"}), http.StatusUnauthorized)
	for _, bad := range []string{`{"L9":true}`, `{}`, `{"L3":"yes"}`, `[]`} {
		r := doHTTP(t, base, req{method: "PUT", path: "/v1/admin/degradation", token: testAdmin, body: bad})
		wantStatus(t, r, http.StatusBadRequest)
	}
	r := doHTTP(t, base, req{method: "GET", path: "/v1/admin/degradation", token: testAdmin})
	wantStatus(t, r, http.StatusOK)
	var got struct {
		Switches map[string]bool `json:"switches"`
		Level    int             `json:"level"`
		Shared   *bool           `json:"shared"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || len(got.Switches) != 4 || got.Level != 0 {
		t.Fatalf("GET degradation = %s; want four switches off", r.body)
	}

	r = doHTTP(t, base, req{method: "PUT", path: "/v1/admin/degradation", token: testAdmin, body: `{"L3":true}`})
	wantStatus(t, r, http.StatusOK)
	if err := json.Unmarshal(r.body, &got); err != nil || !got.Switches["L3"] || got.Level != 3 || got.Shared == nil || !*got.Shared {
		t.Fatalf("PUT L3 = %s; want L3 on, level 3, shared", r.body)
	}
	// Read-only: every write is refused before the service, reads work.
	svc.calls()
	for _, w := range []req{
		{method: "POST", path: "/v1/posts", token: tok, body: `{"content":"hi"}`},
		{method: "PUT", path: "/v1/me/following/" + feed.FormatID(bob), token: tok},
		{method: "DELETE", path: "/v1/me/following/" + feed.FormatID(bob), token: tok},
	} {
		r := doHTTP(t, base, w)
		wantStatus(t, r, http.StatusServiceUnavailable)
		if r.errorCode(t) != feed.EUNAVAILABLE || r.header.Get("Retry-After") == "" || !strings.Contains(r.errorMessage(t), "read-only") {
			t.Errorf("%s %s under L3 = %s (Retry-After %q)", w.method, w.path, r.body, r.header.Get("Retry-After"))
		}
	}
	if c := svc.calls(); len(c) != 0 {
		t.Errorf("writes reached the service under L3: %v", c)
	}
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: tok}), http.StatusOK)
	// The admin can still create users: admin routes are not "writes" of
	// the public API, so the operator keeps control.
	wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/users", token: testAdmin, body: `{"name":"op"}`}), http.StatusCreated)

	// The switch is visible in /metrics of the switches' registry and
	// reached the shared store: another process's view follows.
	other := degrade.New(slog.New(slog.DiscardHandler), kv, nil)
	if err := other.Sync(context.Background()); err != nil || !other.On(degrade.L3) {
		t.Fatalf("another process sees L3 = %v (err %v); want on", other.On(degrade.L3), err)
	}
	wantStatus(t, doHTTP(t, base, req{method: "PUT", path: "/v1/admin/degradation", token: testAdmin, body: `{"L3":false}`}), http.StatusOK)
	wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/posts", token: tok, body: `{"content":"hi"}`}), http.StatusCreated)
}

func TestDegradedFeedIsMarked(t *testing.T) {
	svc := seeded()
	base, _ := newGuardedEnv(t, degradedService{svc}, func(*Config) {})
	r := doHTTP(t, base, req{method: "GET", path: "/v1/me/feed", token: userToken(t, alice)})
	wantStatus(t, r, http.StatusOK)
	if v := r.json(t)["degraded"]; v != true {
		t.Errorf("degraded = %v in %s; want true", v, r.body)
	}
	// A normal page has no degraded field at all.
	base2, _ := newGuardedEnv(t, svc, func(*Config) {})
	r = doHTTP(t, base2, req{method: "GET", path: "/v1/me/feed", token: userToken(t, alice)})
	if _, ok := r.json(t)["degraded"]; ok {
		t.Errorf("a normal page carries degraded: %s", r.body)
	}
}

func TestRequestID(t *testing.T) {
	e := newEnv(t)
	r := e.do(req{method: "GET", path: "/v1/users/1", token: testAdmin, header: map[string]string{"X-Request-Id": "abc-123"}})
	if got := r.header.Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("X-Request-Id echoed %q; want abc-123", got)
	}
	if !strings.Contains(e.logs.String(), "request_id=abc-123") {
		t.Errorf("the request log lacks the request id:\n%s", e.logs.String())
	}
	// A missing or unsafe id is replaced by a generated one.
	for _, in := range []string{"", "has space", strings.Repeat("x", 200), "quote\"d"} {
		r := e.do(req{method: "GET", path: "/healthz", header: map[string]string{"X-Request-Id": in}})
		got := r.header.Get("X-Request-Id")
		if got == "" || got == in || len(got) > 128 {
			t.Errorf("request id for %q = %q; want a generated one", in, got)
		}
	}
}

func grep(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
