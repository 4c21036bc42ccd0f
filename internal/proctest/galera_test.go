package proctest

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// galera is the three-node Galera cluster of .ci/galera.sh as a backend:
// feedd gets the multi-host DSN of a database of the test's own.
var galera = backend{
	name: "galera", env: mariaDB.env,
	addr:   func(t *testing.T) string { return testenv.GaleraHosts(t)[0] },
	create: func(t *testing.T) string { return testenv.CreateGaleraDatabase(t, "feedd_proc_") },
	open:   sqlstore.OpenMySQL,
}

// TestGaleraFailover: while publishes (an author with 2,000 followers and
// 20 stream users), follows, likes and feed reads run at a steady rate
// against a serve and a work process on the three nodes of a Galera
// cluster, the node they write through is killed with SIGKILL, and
// started again 6 s later (it rejoins by IST).
//
// Clients retry a 503 with the same Idempotency-Key, as package client
// does. Every answer that was no success was a 503 with Retry-After (or a
// 409 idempotency_key_in_flight), never a 500; no write succeeded for at
// most 5 s (the figure is printed); the rejoined node takes the writes
// again by itself. Afterwards every post, follow and like answered 2xx is
// in SQL once, the counts are exact, the outbox drains, every follower's
// feed holds every post of everyone it follows exactly once, and nothing
// is dead-lettered.
func TestGaleraFailover(t *testing.T) {
	const (
		followers   = 2000
		streamUsers = 20
		before      = 4 * time.Second // load before the kill
		down        = 6 * time.Second // between the kill and the start
		after       = 8 * time.Second // load once the node is back
	)
	testenv.UseGalera(t, true)
	hosts := testenv.GaleraHosts(t)
	s := newStack(t, galera)
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
	}
	var (
		mu      sync.Mutex
		answers []answer
	)
	w.seen = func(method, path string, status int, body []byte, took time.Duration) {
		mu.Lock()
		answers = append(answers, answer{time.Now(), method + " " + path, status, body})
		mu.Unlock()
	}

	loadCtx, stop := context.WithCancel(ctx)
	var load errgroup.Group
	load.Go(func() error { return w.celebPosts(loadCtx, time.Second) })
	for g := range 4 {
		load.Go(func() error { return w.streamOps(loadCtx, rand.New(rand.NewPCG(uint64(g), 26))) })
	}
	sample := make([]int64, 0, 100)
	for i := 0; i < followers; i += followers / cap(sample) {
		sample = append(sample, fans[i])
	}
	load.Go(func() error { return w.readLoop(loadCtx, w.sign(s.env["FEEDD_JWT_SECRET"], sample)) })

	time.Sleep(before)
	writer := hosts[0] // feedd writes through the first node of the list
	t.Logf("SIGKILL the writing node %s", writer)
	killed := time.Now()
	testenv.Galera(t, "kill", "1")
	time.Sleep(down)
	testenv.Galera(t, "start", "1")
	back := time.Now()
	t.Logf("node %s rejoined and synced %v after the kill", writer, back.Sub(killed).Round(time.Millisecond))
	// The rejoined node takes the writes back by itself: it commits
	// transactions of its own (the counter starts at 0 with the process).
	node1 := testenv.GaleraNodeDB(t, writer)
	testenv.Eventually(t, 30*time.Second, "the rejoined node takes writes again", func() bool {
		var name string
		var commits int64
		err := node1.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_local_commits'").Scan(&name, &commits)
		return err == nil && commits > 0
	})
	t.Logf("node %s takes writes again %v after it was synced", writer, time.Since(back).Round(time.Millisecond))
	time.Sleep(after)
	stop()
	if err := load.Wait(); err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, p := range []*proc{serve, work} {
		select {
		case <-p.exited:
			t.Fatalf("%s exited during the test (%v); want it to ride out the failover", p.name, p.cmd.ProcessState)
		default:
		}
	}

	// The answers: failures only 503s, and writes answered again soon.
	mu.Lock()
	all := slices.Clone(answers)
	mu.Unlock()
	var failed int
	var lastWrite time.Time
	var gap time.Duration
	var gapStart time.Time
	for _, a := range all {
		ok := a.status >= 200 && a.status < 300
		if !ok {
			failed++
			var e struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(a.body, &e) != nil || e.Error.Code == "" || (a.status != 503 && !inFlight(a.status, a.body)) {
				t.Errorf("%s at %v after the kill: status %d, body %q; want a 503 (or 409 idempotency_key_in_flight) with a JSON error",
					a.what, a.at.Sub(killed).Round(time.Millisecond), a.status, a.body)
			}
			continue
		}
		if strings.HasPrefix(a.what, "GET ") {
			continue
		}
		// The longest time between two successful writes, over the kill.
		if !lastWrite.IsZero() && a.at.After(killed) && lastWrite.Before(back) && a.at.Sub(lastWrite) > gap {
			gap, gapStart = a.at.Sub(lastWrite), lastWrite
		}
		lastWrite = a.at
	}
	if n := w.noRetryAfter.Load(); n > 0 {
		t.Errorf("%d answers were 503 without Retry-After; want it on every one", n)
	}
	t.Logf("load: %d author posts, %d stream posts, %d follows, %d likes, %d feed reads; %d answers, %d of them 503/409; "+
		"the longest time without a successful write: %v, from %v after the kill",
		len(w.posts[author]), w.streamPostCount(), w.followCount(), w.likeCount(), w.reads.Load(), len(all), failed,
		gap.Round(time.Millisecond), gapStart.Sub(killed).Round(time.Millisecond))
	if gap > 5*time.Second {
		t.Errorf("no write succeeded for %v; want at most 5s", gap.Round(time.Millisecond))
	}

	// The end state, read through the cluster.
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
	t.Logf("checked: %d posts, %d follows and %d likes in SQL with exact counts; %d of %d follower inboxes hold the %d author posts exactly once; %d feeds read whole through the API (%d items); 0 dead letters",
		w.streamPostCount()+len(w.posts[author]), w.followCount(), w.likeCount(), present, followers, len(wantFan), followers+streamUsers, items)
}
