package main

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestIdempotentPublish: an Idempotency-Key of POST /v1/posts, per user.
// The same request again gets the first answer, whatever its JSON
// formatting and however many are sent at once; another request with the
// key is 422; after the post was deleted, 404.
func TestIdempotentPublish(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		a, aTok := in.user("a")
		_, bTok := in.user("b")
		key := func(k string) []string { return []string{"Idempotency-Key", k} }
		postCount := func() int { return len(in.must(200, "GET", "/v1/users/"+a+"/posts", aTok, nil).items()) }

		// Retries racing: one post, the same answer to each.
		var wg sync.WaitGroup
		got := make([]resp, 8)
		for i := range got {
			wg.Go(func() { got[i] = in.do("POST", "/v1/posts", aTok, map[string]any{"content": "once"}, key("k-1")...) })
		}
		wg.Wait()
		first := got[0].str("id")
		for _, r := range got {
			if r.status != http.StatusCreated || r.str("id") != first || r.str("content") != "once" {
				t.Fatalf("racing retries: got %d %s; want 201 with post %s", r.status, r.raw, first)
			}
		}
		// A retry formatted otherwise is the same request.
		if r := in.must(201, "POST", "/v1/posts", aTok, " {\n  \"content\" : \"\\u006fnce\" }", key("k-1")...); r.str("id") != first {
			t.Fatalf("retry with other spacing: got post %s; want %s", r.str("id"), first)
		}
		// Another request with the key is refused, and changes nothing.
		r := in.must(http.StatusUnprocessableEntity, "POST", "/v1/posts", aTok, map[string]any{"content": "twice"}, key("k-1")...)
		if r.errCode() != "idempotency_key_reused" {
			t.Fatalf("reused key: got %s; want code idempotency_key_reused", r.raw)
		}
		if n := postCount(); n != 1 {
			t.Fatalf("author has %d posts; want 1", n)
		}
		// Keys are per user, and a new key is a new request.
		if id := in.must(201, "POST", "/v1/posts", bTok, map[string]any{"content": "once"}, key("k-1")...).str("id"); id == first {
			t.Fatal("another user's key returned the first user's post")
		}
		other := in.must(201, "POST", "/v1/posts", aTok, map[string]any{"content": "twice"}, key("k-2")...).str("id")
		if other == first {
			t.Fatal("a different key returned the same post")
		}

		// A deleted post is not found through its key, never a tombstone.
		in.must(204, "DELETE", "/v1/posts/"+first, aTok, nil)
		r = in.must(404, "POST", "/v1/posts", aTok, map[string]any{"content": "once"}, key("k-1")...)
		if r.errCode() != "not_found" {
			t.Fatalf("key of a deleted post: got %s; want code not_found", r.raw)
		}
		if n := postCount(); n != 1 {
			t.Fatalf("author has %d posts; want 1 (%s)", n, other)
		}

		// The data is part of the request: the same data spaced otherwise
		// replays the post, data as sent first; other data is refused.
		withData := in.must(201, "POST", "/v1/posts", aTok, `{"content":"d","data":{"n":1,"tags":["x"]}}`, key("k-3")...)
		r = in.must(201, "POST", "/v1/posts", aTok, "{ \"content\" : \"d\",\n \"data\" : { \"n\" : 1, \"tags\" : [ \"x\" ] } }", key("k-3")...)
		if r.str("id") != withData.str("id") || string(r.raw) != string(withData.raw) {
			t.Fatalf("retry with data spaced otherwise: got %s; want %s", r.raw, withData.raw)
		}
		r = in.must(http.StatusUnprocessableEntity, "POST", "/v1/posts", aTok, `{"content":"d","data":{"n":2,"tags":["x"]}}`, key("k-3")...)
		if r.errCode() != "idempotency_key_reused" {
			t.Fatalf("same content, other data: got %s; want code idempotency_key_reused", r.raw)
		}
		if n := postCount(); n != 2 {
			t.Fatalf("author has %d posts; want 2", n)
		}
	})
}

// TestIdempotentPublishRace: requests with one key and two bodies at
// once. The first to commit decides: every request with its body gets its
// post, every other one 422; one post in all.
func TestIdempotentPublishRace(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		a, aTok := in.user("a")
		var wg sync.WaitGroup
		got := make([]resp, 12)
		body := func(i int) string { return "body " + strconv.Itoa(i%2) }
		for i := range got {
			wg.Go(func() {
				got[i] = in.do("POST", "/v1/posts", aTok, map[string]any{"content": body(i)}, "Idempotency-Key", "race")
			})
		}
		wg.Wait()
		var winner resp
		for _, r := range got {
			if r.status == http.StatusCreated {
				winner = r
			}
		}
		for i, r := range got {
			switch {
			case body(i) == winner.str("content") && (r.status != http.StatusCreated || r.str("id") != winner.str("id")):
				t.Fatalf("request %d (%s): got %d %s; want the winner's post %s", i, body(i), r.status, r.raw, winner.raw)
			case body(i) != winner.str("content") && (r.status != http.StatusUnprocessableEntity || r.errCode() != "idempotency_key_reused"):
				t.Fatalf("request %d (%s): got %d %s; want 422 idempotency_key_reused", i, body(i), r.status, r.raw)
			}
		}
		if items := in.must(200, "GET", "/v1/users/"+a+"/posts", aTok, nil).items(); len(items) != 1 || items[0]["id"] != winner.str("id") {
			t.Fatalf("author's posts: got %v; want only %s", items, winner.str("id"))
		}
	})
}

// TestIdempotencyKeyExpiry: with FEEDD_IDEMPOTENCY_TTL=1s a key is new
// again a second after its first use, and the work role purges expired
// keys from SQL, counted in feedd_idempotency_keys_purged_total.
func TestIdempotencyKeyExpiry(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_IDEMPOTENCY_TTL", "1s")
		_, aTok := in.user("a")
		post := func() string {
			return in.must(201, "POST", "/v1/posts", aTok, map[string]any{"content": "daily"}, "Idempotency-Key", "k").str("id")
		}
		first := post()
		testenv.Eventually(t, 15*time.Second, "the expired key makes a new post", func() bool { return post() != first })

		keys := func() int {
			n, err := in.sqlCount("SELECT COUNT(*) FROM idempotency")
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
		testenv.Eventually(t, 15*time.Second, "the expired key is purged", func() bool { return keys() == 0 })
		// The purger counts a batch after its transaction commits: the
		// count may trail the rows' going by a moment.
		testenv.Eventually(t, 5*time.Second, "feedd_idempotency_keys_purged_total counts the purge", func() bool {
			m := metricValue(string(in.do("GET", "/metrics", "", nil).raw), "feedd_idempotency_keys_purged_total")
			return m != "" && m != "0"
		})
	})
}

func TestIdempotencyTTLConfig(t *testing.T) {
	noEnv := func(string) string { return "" }
	if cfg, err := parseConfig(nil, noEnv, io.Discard); err != nil || cfg.idempotencyTTL != 24*time.Hour {
		t.Fatalf("default: got %s, %v; want 24h", cfg.idempotencyTTL, err)
	}
	env := func(k string) string { return map[string]string{"FEEDD_IDEMPOTENCY_TTL": "90m"}[k] }
	if cfg, err := parseConfig(nil, env, io.Discard); err != nil || cfg.idempotencyTTL != 90*time.Minute {
		t.Fatalf("FEEDD_IDEMPOTENCY_TTL=90m: got %s, %v", cfg.idempotencyTTL, err)
	}
	if cfg, err := parseConfig([]string{"-idempotency-ttl", "2h"}, env, io.Discard); err != nil || cfg.idempotencyTTL != 2*time.Hour {
		t.Fatalf("-idempotency-ttl 2h over the environment: got %s, %v", cfg.idempotencyTTL, err)
	}
	for _, bad := range []string{"0", "-1h", "500us"} {
		if _, err := parseConfig([]string{"-idempotency-ttl", bad}, noEnv, io.Discard); err == nil {
			t.Errorf("-idempotency-ttl %s: got no error", bad)
		}
	}
}
