package proctest

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/testenv"
)

// TestPostgresRestart: while publishes (an author with 2,000 followers and
// 20 stream users), follows, likes and feed reads run at a steady rate
// against a serve and a work process, their PostgreSQL crashes (pg_ctl stop
// -m immediate: no shutdown checkpoint, every connection cut) and starts
// again 4s later, recovering from its write-ahead log. The server is the
// test's own: the machine's is shared.
//
// Clients retry a 503 as package client does. Every request got an answer
// within 5s, and every answer that was no success was a 503 (or a 409
// idempotency_key_in_flight) with a JSON error body: no hang, no 500. The
// processes, never restarted, serve again within 15s of the database's
// return. Afterwards every post, follow and like that was answered 2xx is
// in SQL, the follower, following and like counts are exact, the outbox
// drains, every feed read whole through the API holds every post of
// everyone its owner follows exactly once, and nothing is dead-lettered.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	const (
		followers   = 2000
		streamUsers = 20
		before      = 4 * time.Second // load before the crash
		outage      = 4 * time.Second // between the crash and the start
		after       = 12 * time.Second
	)
	pg := startPostgres(t)
	s := newStack(t, pg.backend())
	s.migrate()
	env := s.with("FEEDD_AUTO_MIGRATE", "false",
		"FEEDD_BATCH_SIZE", "200", "FEEDD_DIRECT_FANOUT", "100", "FEEDD_WORKERS", "2")
	serve := startReady(t, "serve", env, "serve")
	work := startReady(t, "work", env, "work")
	api := serve.api()
	ctx := context.Background()

	author, authorTok := api.newUser(s.admin, "author")
	fans := s.followers(author, followers)
	w := newChaosWorld(t, s, serve, author, authorTok, streamUsers)
	w.liking = true
	type answer struct {
		at     time.Time
		what   string
		status int
		body   []byte
		took   time.Duration
	}
	var (
		mu      sync.Mutex
		answers []answer
	)
	w.seen = func(method, path string, status int, body []byte, took time.Duration) {
		mu.Lock()
		answers = append(answers, answer{time.Now(), method + " " + path, status, body, took})
		mu.Unlock()
	}

	loadCtx, stop := context.WithCancel(ctx)
	var load errgroup.Group
	load.Go(func() error { return w.celebPosts(loadCtx, time.Second) })
	for g := range 4 {
		load.Go(func() error { return w.streamOps(loadCtx, rand.New(rand.NewPCG(uint64(g), 11))) })
	}
	sample := make([]int64, 0, 200)
	for i := 0; i < followers; i += followers / cap(sample) {
		sample = append(sample, fans[i])
	}
	sampleToks := w.sign(s.env["FEEDD_JWT_SECRET"], sample)
	load.Go(func() error { return w.readLoop(loadCtx, sampleToks) })

	time.Sleep(before)
	t.Log("crash PostgreSQL (pg_ctl stop -m immediate)")
	crashed := time.Now()
	pg.crash()
	time.Sleep(outage)
	pg.start()
	up := time.Now()
	t.Logf("PostgreSQL accepts connections again %v after the crash", up.Sub(crashed).Round(time.Millisecond))
	time.Sleep(after)
	stop()
	if err := load.Wait(); err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, p := range []*proc{serve, work} {
		select {
		case <-p.exited:
			t.Fatalf("%s exited during the test (%v); want it to ride out the database's restart", p.name, p.cmd.ProcessState)
		default:
		}
	}

	// The answers: fast, clean, and successes again soon after the
	// database is back.
	mu.Lock()
	all := slices.Clone(answers)
	mu.Unlock()
	var failed []answer
	var worst answer
	for _, a := range all {
		if a.took > worst.took {
			worst = a
		}
		if a.status >= 200 && a.status < 300 {
			continue
		}
		failed = append(failed, a)
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		clean := json.Unmarshal(a.body, &e) == nil && e.Error.Code != "" &&
			(a.status == 503 || inFlight(a.status, a.body))
		if !clean {
			t.Errorf("%s at %v after the crash: status %d, body %q; want a 503 (or 409 idempotency_key_in_flight) with a JSON error",
				a.what, a.at.Sub(crashed).Round(time.Millisecond), a.status, a.body)
		}
	}
	if worst.took > 5*time.Second {
		t.Errorf("%s at %v after the crash took %v (status %d); want every answer within 5s",
			worst.what, worst.at.Sub(crashed).Round(time.Millisecond), worst.took, worst.status)
	}
	if len(failed) == 0 {
		t.Fatal("no request failed while PostgreSQL was down; want the outage seen (503s)")
	}
	var last time.Time
	var lat []time.Duration
	for _, a := range failed {
		if a.at.After(last) {
			last = a.at
		}
		lat = append(lat, a.took)
	}
	t.Logf("load: %d author posts, %d stream posts, %d follows, %d likes, %d feed reads; %d answers, %d of them 503/409 (p50 %v, max %v), the slowest answer %v (%s, status %d); the last failure %v after the database was back",
		len(w.posts[author]), w.streamPostCount(), w.followCount(), w.likeCount(), w.reads.Load(), len(all), len(failed),
		quantile(lat, .5), quantile(lat, 1), worst.took.Round(time.Millisecond), worst.what, worst.status, last.Sub(up).Round(time.Millisecond))
	if recovered := last.Sub(up); recovered > 15*time.Second {
		t.Errorf("requests still failed %v after PostgreSQL was back; want the processes serving again within 15s", recovered)
	}

	// The end state. The test's own store had its connections cut too.
	testenv.Eventually(t, 30*time.Second, "the test's store reaches PostgreSQL again", func() bool {
		return s.store.DB().PingContext(ctx) == nil
	})
	testenv.Eventually(t, 60*time.Second, "the outbox and the queues are empty", func() bool {
		n, err := s.store.OutboxBacklog(ctx)
		return err == nil && n == 0 && s.queued("posts") == 0 && s.queued("tasks") == 0
	})
	w.checkSQL(ctx, s)
	w.checkLikes(ctx, s)
	wantFan := reversed(slices.Sorted(slices.Values(w.posts[author])))
	present := s.waitExistingInboxes(fans, wantFan, 60*time.Second)
	items := w.checkFeeds(ctx, s, fans, wantFan)
	s.requireNoDeadLetters()
	t.Logf("checked: %d posts, %d follows and %d likes in SQL with exact counts; %d of %d follower inboxes in Redis hold the %d author posts exactly once; %d feeds read whole through the API (%d items); 0 dead letters",
		w.streamPostCount()+len(w.posts[author]), w.followCount(), w.likeCount(), present, followers, len(wantFan), followers+streamUsers, items)
}
