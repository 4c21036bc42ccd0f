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
	const outage = 4 * time.Second // between the crash and the start
	pg := startPostgres(t)
	o := startPgLoad(t, pg.backend())
	t.Log("crash PostgreSQL (pg_ctl stop -m immediate)")
	crashed := time.Now()
	pg.crash()
	time.Sleep(outage)
	pg.start()
	up := time.Now()
	t.Logf("PostgreSQL accepts connections again %v after the crash", up.Sub(crashed).Round(time.Millisecond))
	time.Sleep(12 * time.Second)
	o.stop()
	o.checkAnswers(crashed, up)
	o.checkEnd()
}

// pgLoad is the load that TestPostgresRestart and TestPostgresFailover put
// on feedd while its PostgreSQL goes away, and the checks they make of it:
// an author with 2,000 followers posting every second, 20 stream users
// publishing, following, liking and reading, and reads of 200 followers'
// feeds, through one serve and one work process.
type pgLoad struct {
	t      *testing.T
	s      *stack
	serve  *proc
	work   *proc
	w      *chaosWorld
	author int64
	fans   []int64

	stopLoad context.CancelFunc
	load     errgroup.Group

	mu      sync.Mutex
	answers []answer
}

// pgFollowers is the number of followers of the load's author.
const pgFollowers = 2000

// startPgLoad starts a serve and a work process on b, with the settings
// of kv (name/value pairs) if any, and the load, which runs 4s before it
// returns.
func startPgLoad(t *testing.T, b backend, kv ...string) *pgLoad {
	t.Helper()
	s := newStack(t, b)
	s.migrate()
	env := s.with(append([]string{"FEEDD_AUTO_MIGRATE", "false",
		"FEEDD_BATCH_SIZE", "200", "FEEDD_DIRECT_FANOUT", "100", "FEEDD_WORKERS", "2"}, kv...)...)
	o := &pgLoad{t: t, s: s}
	o.serve = startReady(t, "serve", env, "serve")
	o.work = startReady(t, "work", env, "work")
	api := o.serve.api()

	var authorTok string
	o.author, authorTok = api.newUser(s.admin, "author")
	o.fans = s.followers(o.author, pgFollowers)
	o.w = newChaosWorld(t, s, o.serve, o.author, authorTok, 20)
	o.w.liking = true
	o.w.seen = func(a answer) {
		o.mu.Lock()
		o.answers = append(o.answers, a)
		o.mu.Unlock()
	}

	ctx, stop := context.WithCancel(context.Background())
	o.stopLoad = stop
	o.load.Go(func() error { return o.w.celebPosts(ctx, time.Second) })
	for g := range 4 {
		o.load.Go(func() error { return o.w.streamOps(ctx, rand.New(rand.NewPCG(uint64(g), 11))) })
	}
	sample := make([]int64, 0, 200)
	for i := 0; i < pgFollowers; i += pgFollowers / cap(sample) {
		sample = append(sample, o.fans[i])
	}
	sampleToks := o.w.sign(s.env["FEEDD_JWT_SECRET"], sample)
	o.load.Go(func() error { return o.w.readLoop(ctx, sampleToks) })
	time.Sleep(4 * time.Second)
	return o
}

// stop ends the load, waits for its clients' last verdicts and checks that
// neither process exited.
func (o *pgLoad) stop() {
	o.t.Helper()
	o.stopLoad()
	if err := o.load.Wait(); err != nil {
		o.t.Fatalf("load: %v", err)
	}
	for _, p := range []*proc{o.serve, o.work} {
		select {
		case <-p.exited:
			o.t.Fatalf("%s exited during the test (%v); want it to ride out the database's outage", p.name, p.cmd.ProcessState)
		default:
		}
	}
}

// recorded returns the answers so far.
func (o *pgLoad) recorded() []answer {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.answers)
}

// checkAnswers checks the answers of an outage that began at down and ended
// at up (the database accepts writes again): each came within 5s, each
// failure was a 503 with Retry-After (or a 409 idempotency_key_in_flight)
// and a JSON error body, and failures stopped within 15s of up. It returns
// the failures.
func (o *pgLoad) checkAnswers(down, up time.Time) []answer {
	t := o.t
	t.Helper()
	all := o.recorded()
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
			(a.status == 503 && a.retryAfter != "" || inFlight(a.status, a.body))
		if !clean {
			t.Errorf("%s at %v after the outage began: status %d, Retry-After %q, body %q; want a 503 with Retry-After (or 409 idempotency_key_in_flight) and a JSON error",
				a.what(), a.at.Sub(down).Round(time.Millisecond), a.status, a.retryAfter, a.body)
		}
	}
	if worst.took > 5*time.Second {
		t.Errorf("%s at %v after the outage began took %v (status %d); want every answer within 5s",
			worst.what(), worst.at.Sub(down).Round(time.Millisecond), worst.took, worst.status)
	}
	if len(failed) == 0 {
		t.Fatal("no request failed during the outage; want it seen (503s)")
	}
	var last time.Time
	var lat []time.Duration
	for _, a := range failed {
		if a.at.After(last) {
			last = a.at
		}
		lat = append(lat, a.took)
	}
	w := o.w
	t.Logf("load: %d author posts, %d stream posts, %d follows, %d likes, %d feed reads; %d answers, %d of them 503/409 (p50 %v, max %v), the slowest answer %v (%s, status %d); the last failure %v after the database took writes again",
		len(w.posts[o.author]), w.streamPostCount(), w.followCount(), w.likeCount(), w.reads.Load(), len(all), len(failed),
		quantile(lat, .5), quantile(lat, 1), worst.took.Round(time.Millisecond), worst.what(), worst.status, last.Sub(up).Round(time.Millisecond))
	if recovered := last.Sub(up); recovered > 15*time.Second {
		t.Errorf("requests still failed %v after PostgreSQL took writes again; want the processes serving again within 15s", recovered)
	}
	return failed
}

// checkEnd checks the end state: every post, follow and like answered 2xx
// is in SQL once with exact counts, the outbox and the queues drain, every
// follower inbox left in Redis and every feed read whole through the API
// holds exactly its posts, and nothing is dead-lettered.
func (o *pgLoad) checkEnd() {
	t, s, w := o.t, o.s, o.w
	t.Helper()
	ctx := context.Background()
	// The test's own store had its connections cut too.
	testenv.Eventually(t, 30*time.Second, "the test's store reaches PostgreSQL again", func() bool {
		return s.store.DB().PingContext(ctx) == nil
	})
	testenv.Eventually(t, 60*time.Second, "the outbox and the queues are empty", func() bool {
		n, err := s.store.OutboxBacklog(ctx)
		return err == nil && n == 0 && s.queued("posts") == 0 && s.queued("tasks") == 0
	})
	w.checkSQL(ctx, s)
	w.checkLikes(ctx, s)
	wantFan := reversed(slices.Sorted(slices.Values(w.posts[o.author])))
	present := s.waitExistingInboxes(o.fans, wantFan, 60*time.Second)
	items := w.checkFeeds(ctx, s, o.fans, wantFan)
	s.requireNoDeadLetters()
	t.Logf("checked: %d posts, %d follows and %d likes in SQL with exact counts; %d of %d follower inboxes in Redis hold the %d author posts exactly once; %d feeds read whole through the API (%d items); 0 dead letters",
		w.streamPostCount()+len(w.posts[o.author]), w.followCount(), w.likeCount(), present, len(o.fans), len(wantFan), len(o.fans)+len(w.stream), items)
}
