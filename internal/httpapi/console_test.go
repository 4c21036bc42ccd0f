package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
)

// fakeConsole answers with a fixed overview and records requeues.
type fakeConsole struct {
	overview census.Overview
	err      error
	requeued [][]string
}

func (f *fakeConsole) Overview(context.Context) (census.Overview, error) { return f.overview, f.err }

func (f *fakeConsole) Requeue(_ context.Context, queues []string) (map[string]int, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.requeued = append(f.requeued, queues)
	out := map[string]int{}
	for _, q := range queues {
		out[q] = len(q) // any count the test can tell apart
	}
	return out, nil
}

func sampleOverview() census.Overview {
	ms := func(v float64) *float64 { return &v }
	n := func(v int64) *int64 { return &v }
	at := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	proc := census.Process{
		ID: "web-1:42", Role: "serve", Host: "web-1", PID: 42, Version: "v1", StartedAt: census.Time{Time: at.Add(-time.Hour)}, LastSeen: census.Time{Time: at.Add(-20 * time.Millisecond)},
		WindowSeconds: 60, Publish: census.Traffic{PerSecond: 1, P50Ms: ms(2), P99Ms: ms(9)},
		Breakers: []census.BreakerState{{Name: "sql", State: "closed"}},
	}
	return census.Overview{
		At: census.Time{Time: at}, WindowSeconds: 60, HeartbeatSeconds: 2,
		Publish: proc.Publish, Fanout: census.Fanout{LagP50Ms: ms(5), LagP99Ms: ms(40), InboxWritesPerSecond: 3},
		Outbox:      census.Backlog{Unsent: n(0), OldestAgeSeconds: ms(0)},
		Queues:      []census.Queue{{Name: "posts", Depth: n(0), DeadLetters: n(1)}, {Name: "tasks"}, {Name: "likes", Depth: n(2), DeadLetters: n(0)}},
		Degradation: census.Degradation{Switches: map[degrade.Switch]bool{"L1": false, "L2": true, "L3": false, "L4": false}, Level: 2},
		Breakers:    []census.Breaker{{BreakerState: census.BreakerState{Name: "sql", State: "closed"}, Processes: 1}},
		Processes:   []census.Process{proc},
		Problems:    []string{"queues: the broker did not answer"},
	}
}

func TestOverview(t *testing.T) {
	con := &fakeConsole{overview: sampleOverview()}
	base, _ := newGuardedEnv(t, seeded(), func(c *Config) { c.Console = con })

	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/admin/overview"}), http.StatusUnauthorized)
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/admin/overview", token: userToken(t, alice)}), http.StatusForbidden)

	r := doHTTP(t, base, req{method: "GET", path: "/v1/admin/overview", token: testAdmin})
	wantStatus(t, r, http.StatusOK)
	var got map[string]any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	// The answer has exactly the shape the OpenAPI document promises the
	// console, nulls included.
	checkSchema(t, "Overview", "#/components/schemas/Overview", got)
	// Times as everywhere in the API: UTC, milliseconds.
	if got["at"] != "2026-11-24T22:00:00.000Z" || got["processes"].([]any)[0].(map[string]any)["last_seen"] != "2026-11-24T21:59:59.980Z" {
		t.Errorf("at = %v, last_seen = %v; want 2026-11-24T22:00:00.000Z and 2026-11-24T21:59:59.980Z", got["at"], got["processes"].([]any)[0].(map[string]any)["last_seen"])
	}
	tasks := got["queues"].([]any)[1].(map[string]any)
	if v, ok := tasks["depth"]; !ok || v != nil {
		t.Errorf("an unknown depth = %v (present %v); want null", v, ok)
	}
	if p := got["publish"].(map[string]any); p["p99_ms"] != 9.0 || p["per_second"] != 1.0 {
		t.Errorf("publish = %v", p)
	}
	// The document's example has the same shape.
	checkSchema(t, "the example", "#/components/schemas/Overview", openAPIExample(t, "Overview"))

	con.err = feed.Errorf(feed.EUNAVAILABLE, "down")
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/admin/overview", token: testAdmin}), http.StatusServiceUnavailable)
}

func TestRequeueDeadLetters(t *testing.T) {
	con := &fakeConsole{}
	base, _ := newGuardedEnv(t, seeded(), func(c *Config) { c.Console = con })
	path := "/v1/admin/dead-letters/requeue"

	wantStatus(t, doHTTP(t, base, req{method: "POST", path: path}), http.StatusUnauthorized)
	wantStatus(t, doHTTP(t, base, req{method: "POST", path: path, token: userToken(t, alice)}), http.StatusForbidden)
	for _, bad := range []string{`{"queue":"nope"}`, `{"queue":1}`, `{"queues":"all"}`, `[]`, `{"queue":"all","queue":"posts"}`} {
		r := doHTTP(t, base, req{method: "POST", path: path, token: testAdmin, body: bad})
		wantStatus(t, r, http.StatusBadRequest)
		if r.errorCode(t) != feed.EINVALID {
			t.Errorf("%s: code %q; want invalid", bad, r.errorCode(t))
		}
	}
	if len(con.requeued) != 0 {
		t.Fatalf("bad requests requeued %v", con.requeued)
	}

	for _, tc := range []struct {
		body string
		want []string
	}{
		{"", []string{"posts", "tasks", "likes"}},
		{`{}`, []string{"posts", "tasks", "likes"}},
		{`{"queue":"all"}`, []string{"posts", "tasks", "likes"}},
		{`{"queue":"tasks"}`, []string{"tasks"}},
	} {
		con.requeued = nil
		r := doHTTP(t, base, req{method: "POST", path: path, token: testAdmin, body: tc.body})
		wantStatus(t, r, http.StatusOK)
		if len(con.requeued) != 1 || !slices.Equal(con.requeued[0], tc.want) {
			t.Errorf("body %q requeued %v; want %v", tc.body, con.requeued, tc.want)
		}
		var got struct {
			Requeued map[string]int `json:"requeued"`
		}
		if err := json.Unmarshal(r.body, &got); err != nil || len(got.Requeued) != len(tc.want) || got.Requeued["tasks"] != len("tasks") {
			t.Errorf("body %q answered %s; want a count for each of %v", tc.body, r.body, tc.want)
		}
	}

	con.err = errors.New("broker gone")
	r := doHTTP(t, base, req{method: "POST", path: path, token: testAdmin})
	wantStatus(t, r, http.StatusInternalServerError)
	if strings.Contains(string(r.body), "broker gone") {
		t.Errorf("the cause reached the client: %s", r.body)
	}
}

func TestConsoleRoutesWithoutConsole(t *testing.T) {
	base, _ := newGuardedEnv(t, seeded(), func(*Config) {})
	wantStatus(t, doHTTP(t, base, req{method: "GET", path: "/v1/admin/overview", token: testAdmin}), http.StatusNotFound)
	wantStatus(t, doHTTP(t, base, req{method: "POST", path: "/v1/admin/dead-letters/requeue", token: testAdmin}), http.StatusNotFound)
}

// openAPIDocument returns the OpenAPI document, decoded.
func openAPIDocument(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func openAPIExample(t *testing.T, schema string) any {
	t.Helper()
	s := resolve(t, openAPIDocument(t), "#/components/schemas/"+schema)
	ex, _ := s["examples"].([]any)
	if len(ex) == 0 {
		t.Fatalf("schema %s has no example", schema)
	}
	return ex[0]
}

// resolve follows a local $ref ("#/a/b/c") in doc.
func resolve(t *testing.T, doc map[string]any, ref string) map[string]any {
	t.Helper()
	var cur any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("$ref %s does not resolve", ref)
		}
		cur = m[part]
	}
	m, ok := cur.(map[string]any)
	if !ok {
		t.Fatalf("$ref %s does not resolve", ref)
	}
	return m
}

// checkSchema checks v against the schema at ref for what a client relies
// on: every required key present, no key the schema does not name, null
// only where the type allows it, and the same for nested objects and
// arrays' items.
func checkSchema(t *testing.T, where, ref string, v any) {
	t.Helper()
	doc := openAPIDocument(t)
	var walk func(at string, s map[string]any, v any)
	walk = func(at string, s map[string]any, v any) {
		if r, ok := s["$ref"].(string); ok {
			s = resolve(t, doc, r)
		}
		types := map[string]bool{}
		switch ty := s["type"].(type) {
		case string:
			types[ty] = true
		case []any:
			for _, x := range ty {
				types[x.(string)] = true
			}
		}
		switch v := v.(type) {
		case nil:
			if len(types) > 0 && !types["null"] {
				t.Errorf("%s: %s is null; the schema allows %v", where, at, s["type"])
			}
		case map[string]any:
			props, _ := s["properties"].(map[string]any)
			required, _ := s["required"].([]any)
			for _, k := range required {
				if _, ok := v[k.(string)]; !ok {
					t.Errorf("%s: %s lacks the required %q", where, at, k)
				}
			}
			extra, _ := s["additionalProperties"].(map[string]any)
			for k, x := range v {
				ps, ok := props[k].(map[string]any)
				switch {
				case ok:
					walk(at+"."+k, ps, x)
				case extra != nil:
					walk(at+"."+k, extra, x)
				case s["additionalProperties"] == false:
					t.Errorf("%s: %s has %q, which the schema does not name", where, at, k)
				}
			}
		case []any:
			items, _ := s["items"].(map[string]any)
			for i, x := range v {
				if items != nil {
					walk(at+"["+strconv.Itoa(i)+"]", items, x)
				}
			}
		}
	}
	walk("$", resolve(t, doc, ref), v)
}
