package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// BenchmarkLikes drives likes through the HTTP API of a real feedd on both
// stacks: "hot" toggles likes of many users on one post, "many" on 1,000
// posts. Every request flips a (user, post) pair, so every one is a real
// like or unlike: an event made durable and a row written. It reports the
// rate the API sustained, latency percentiles, and the batching ratio: the
// SQL write statements the like writer ran per 1,000 likes, read from its
// metrics once it has written everything.
//
//	FEEDD_TEST_E2E_REDIS_URL=redis://127.0.0.1:6379/5 CI=true \
//	  go test -run '^$' -bench BenchmarkLikes -benchtime 20000x ./cmd/feedd/
func BenchmarkLikes(b *testing.B) {
	const (
		users   = 512
		workers = 64
	)
	for _, st := range benchStacks {
		b.Run(st.name, func(b *testing.B) {
			srv := startBenchFeedd(b, st.env(b))
			admin := srv.admin
			author := srv.mustJSON(b, "POST", "/v1/users", admin, `{"name":"author"}`)["id"].(string)
			authorTok := srv.mustJSON(b, "POST", "/v1/users/"+author+"/tokens", admin, `{"ttl_seconds":86400}`)["token"].(string)
			posts := make([]string, 1000)
			for i := range posts {
				posts[i] = srv.mustJSON(b, "POST", "/v1/posts", authorTok, fmt.Sprintf(`{"content":"post %d"}`, i))["id"].(string)
			}
			toks := make([]string, users)
			for i := range toks {
				id := srv.mustJSON(b, "POST", "/v1/users", admin, fmt.Sprintf(`{"name":"fan%d"}`, i))["id"].(string)
				toks[i] = srv.mustJSON(b, "POST", "/v1/users/"+id+"/tokens", admin, `{"ttl_seconds":86400}`)["token"].(string)
			}
			// liked[user][post] is the pair's state; each worker owns
			// the users i with i % workers == worker, so no locks.
			liked := make([]map[int]bool, users)
			for i := range liked {
				liked[i] = map[int]bool{}
			}
			for _, sc := range []struct {
				name  string
				posts int
			}{{"hot", 1}, {"many", len(posts)}} {
				b.Run(sc.name, func(b *testing.B) {
					before := srv.metrics(b)
					var next atomic.Int64
					var failed atomic.Int64
					lat := make([][]time.Duration, workers)
					var wg sync.WaitGroup
					b.ResetTimer()
					start := time.Now()
					for w := range workers {
						wg.Go(func() {
							r := rand.New(rand.NewPCG(uint64(w), uint64(b.N)))
							k := 0
							for next.Add(1) <= int64(b.N) {
								u := w + workers*(k%(users/workers))
								k++
								p := r.IntN(sc.posts)
								method := "PUT"
								if liked[u][p] {
									method = "DELETE"
								}
								t0 := time.Now()
								status, body := srv.do(method, "/v1/posts/"+posts[p]+"/like", toks[u], "")
								lat[w] = append(lat[w], time.Since(t0))
								if status != 200 {
									if failed.Add(1) <= 3 {
										b.Errorf("%s like: %d %s", method, status, body)
									}
									continue
								}
								liked[u][p] = !liked[u][p]
							}
						})
					}
					wg.Wait()
					elapsed := time.Since(start)
					b.StopTimer()
					var all []time.Duration
					for _, l := range lat {
						all = append(all, l...)
					}
					slices.Sort(all)
					// Wait for the writer to have written every event of
					// this run, then read its counters.
					var after map[string]float64
					deadline := time.Now().Add(60 * time.Second)
					for {
						after = srv.metrics(b)
						acc := after["feedd_likes_accepted_total"] - before["feedd_likes_accepted_total"]
						wrote := after["feedd_likes_events_written_total"] - before["feedd_likes_events_written_total"]
						if wrote >= acc || time.Now().After(deadline) {
							break
						}
						time.Sleep(100 * time.Millisecond)
					}
					events := after["feedd_likes_events_written_total"] - before["feedd_likes_events_written_total"]
					writes := after["feedd_likes_sql_writes_total"] - before["feedd_likes_sql_writes_total"]
					batches := after["feedd_likes_batches_total"] - before["feedd_likes_batches_total"]
					b.ReportMetric(float64(b.N)/elapsed.Seconds(), "likes/s")
					if len(all) > 0 {
						b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50_ms")
						b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99_ms")
					}
					if events > 0 {
						b.ReportMetric(1000*writes/events, "sql_writes/1k_likes")
						b.ReportMetric(events/max(batches, 1), "events/batch")
					}
					b.ReportMetric(0, "ns/op")
					srv.checkCounts(b, posts[:sc.posts], liked)
				})
			}
		})
	}
}

// benchStacks are the harness's stacks for a benchmark.
var benchStacks = []struct {
	name string
	env  func(b *testing.B) map[string]string
}{
	{"embedded", func(b *testing.B) map[string]string { return map[string]string{"FEEDD_DATA_DIR": b.TempDir()} }},
	{"services", func(b *testing.B) map[string]string {
		return servicesEnv(b, mariaDB, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
	}},
	{"postgres", func(b *testing.B) map[string]string {
		return servicesEnv(b, postgreSQL, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
	}},
}

type benchServer struct {
	url, admin string
	d          *deps
	client     *http.Client
}

// startBenchFeedd starts feedd (role all) in process, as startFeedd does
// for tests, and stops it when the benchmark ends.
func startBenchFeedd(b *testing.B, env map[string]string) *benchServer {
	b.Helper()
	// The per-user limits are off: the setup posts 1,000 times as one
	// author, and the benchmark measures likes, not the limiter.
	merged := map[string]string{"FEEDD_ADDR": "127.0.0.1:0", "FEEDD_RATE_USER_WRITE": "0", "FEEDD_RATE_USER_READ": "0", "FEEDD_USER_MAX_INFLIGHT": "0"}
	for k, v := range env {
		merged[k] = v
	}
	cfg, err := parseConfig([]string{"all"}, func(k string) string { return merged[k] }, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx, cancel := context.WithCancel(context.Background())
	d, err := openDeps(ctx, cfg, logger)
	if err != nil {
		cancel()
		b.Fatalf("open backends: %v", err)
	}
	out := &testenv.SyncBuffer{}
	done := make(chan struct{})
	go func() {
		_ = start(ctx, cfg, d, logger, out)
		d.close(logger)
		close(done)
	}()
	b.Cleanup(func() { cancel(); <-done })
	s := &benchServer{admin: d.adminToken, d: d, client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256},
	}}
	for deadline := time.Now().Add(20 * time.Second); s.url == ""; time.Sleep(10 * time.Millisecond) {
		if _, after, ok := strings.Cut(out.String(), "listening on "); ok {
			s.url = strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
		}
		if time.Now().After(deadline) {
			b.Fatalf("feedd did not start: %s", out.String())
		}
	}
	return s
}

func (s *benchServer) do(method, path, token, body string) (int, []byte) {
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

func (s *benchServer) mustJSON(b *testing.B, method, path, token, body string) map[string]any {
	b.Helper()
	status, raw := s.do(method, path, token, body)
	if status/100 != 2 {
		b.Fatalf("%s %s: %d %s", method, path, status, raw)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		b.Fatalf("%s %s: %v", method, path, err)
	}
	return v
}

// metrics reads the unlabelled sums of the Prometheus text format.
func (s *benchServer) metrics(b *testing.B) map[string]float64 {
	b.Helper()
	status, raw := s.do("GET", "/metrics", "", "")
	if status != 200 {
		b.Fatalf("metrics: %d", status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i] // labelled series add up
		}
		if f, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] += f
		}
	}
	return out
}

// checkCounts: after the run, each post's count in the API and in SQL is
// the number of users whose last action on it was a like.
func (s *benchServer) checkCounts(b *testing.B, posts []string, liked []map[int]bool) {
	b.Helper()
	for p, id := range posts[:min(len(posts), 20)] {
		var want int64
		for _, m := range liked {
			if m[p] {
				want++
			}
		}
		v := s.mustJSON(b, "GET", "/v1/posts/"+id, s.admin, "")
		var stats int64
		_ = databases(s.d.store)[0].DB().QueryRow("SELECT COALESCE(MAX(like_count), 0) FROM post_stats WHERE post_id = ?", id).Scan(&stats)
		if got := int64(v["like_count"].(float64)); got != want || stats != want {
			b.Errorf("post %s: API %d, SQL %d; want %d", id, got, stats, want)
		}
	}
}
