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

	"github.com/feedd/feedd/internal/testenv"
)

// steadyLoad is the load of the tests that take the SQL server away (a
// crash, a failover) while feedd runs: a serve and a work process, an
// author with followers posting every second (a fan-out each), stream
// users publishing, following, liking and reading on four clients, and a
// client reading a sample of the followers' feeds; every answer is
// recorded.
type steadyLoad struct {
	t           *testing.T
	s           *stack
	w           *chaosWorld
	serve, work *proc
	author      int64
	fans        []int64

	mu      sync.Mutex
	answers []answer

	stop context.CancelFunc
	g    errgroup.Group
}

// answer is one HTTP answer the load got (status 0: a transport error).
type answer struct {
	at     time.Time
	what   string
	status int
	body   []byte
	took   time.Duration
}

// ok reports a 2xx.
func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// clean reports a failure as a client may see one: a 503 (or a 409
// idempotency_key_in_flight) with a JSON error, nothing else.
func (a answer) clean() bool {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal(a.body, &e) == nil && e.Error.Code != "" && (a.status == 503 || inFlight(a.status, a.body))
}

// startSteadyLoad migrates s's database, starts a serve and a work
// process, creates the author's followers and the stream users, and
// starts the load.
func startSteadyLoad(t *testing.T, s *stack, followers, streamUsers int, seed uint64) *steadyLoad {
	t.Helper()
	s.migrate()
	env := s.with("FEEDD_AUTO_MIGRATE", "false",
		"FEEDD_BATCH_SIZE", "200", "FEEDD_DIRECT_FANOUT", "100", "FEEDD_WORKERS", "2")
	l := &steadyLoad{t: t, s: s}
	l.serve = startReady(t, "serve", env, "serve")
	l.work = startReady(t, "work", env, "work")
	api := l.serve.api()
	var authorTok string
	l.author, authorTok = api.newUser(s.admin, "author")
	l.fans = s.followers(l.author, followers)
	l.w = newChaosWorld(t, s, l.serve, l.author, authorTok, streamUsers)
	l.w.liking = true
	l.w.seen = func(method, path string, status int, body []byte, took time.Duration) {
		l.mu.Lock()
		l.answers = append(l.answers, answer{time.Now(), method + " " + path, status, body, took})
		l.mu.Unlock()
	}

	ctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	l.g.Go(func() error { return l.w.celebPosts(ctx, time.Second) })
	for g := range 4 {
		l.g.Go(func() error { return l.w.streamOps(ctx, rand.New(rand.NewPCG(uint64(g), seed))) })
	}
	sample := make([]int64, 0, 200)
	for i := 0; i < followers; i += max(1, followers/cap(sample)) {
		sample = append(sample, l.fans[i])
	}
	sampleToks := l.w.sign(s.env["FEEDD_JWT_SECRET"], sample)
	l.g.Go(func() error { return l.w.readLoop(ctx, sampleToks) })
	return l
}

// finish stops the load, checks that neither process died, and returns
// every answer, in the order they came.
func (l *steadyLoad) finish() []answer {
	l.t.Helper()
	l.stop()
	if err := l.g.Wait(); err != nil {
		l.t.Fatalf("load: %v", err)
	}
	for _, p := range []*proc{l.serve, l.work} {
		select {
		case <-p.exited:
			l.t.Fatalf("%s exited during the test (%v); want it to ride out the database's trouble", p.name, p.cmd.ProcessState)
		default:
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.answers)
}

// summary is the load's counts for a log line.
func (l *steadyLoad) summary() (authorPosts, streamPosts, follows, likes int, reads int64) {
	return len(l.w.posts[l.author]), l.w.streamPostCount(), l.w.followCount(), l.w.likeCount(), l.w.reads.Load()
}

// checkEnd waits for the outbox and the queues to drain, then checks that
// every post, follow and like answered 2xx is in SQL once with exact
// counts, that every follower's inbox and every feed read through the API
// holds every post it should exactly once, and that nothing was
// dead-lettered.
func (l *steadyLoad) checkEnd(ctx context.Context) {
	l.t.Helper()
	s, w := l.s, l.w
	testenv.Eventually(l.t, 60*time.Second, "the outbox and the queues are empty", func() bool {
		n, err := s.store.OutboxBacklog(ctx)
		return err == nil && n == 0 && s.queued("posts") == 0 && s.queued("tasks") == 0
	})
	w.checkSQL(ctx, s)
	w.checkLikes(ctx, s)
	wantFan := reversed(slices.Sorted(slices.Values(w.posts[l.author])))
	present := s.waitExistingInboxes(l.fans, wantFan, 60*time.Second)
	items := w.checkFeeds(ctx, s, l.fans, wantFan)
	s.requireNoDeadLetters()
	l.t.Logf("checked: %d posts, %d follows and %d likes in SQL with exact counts; %d of %d follower inboxes in Redis hold the %d author posts exactly once; %d feeds read whole through the API (%d items); 0 dead letters",
		w.streamPostCount()+len(w.posts[l.author]), w.followCount(), w.likeCount(), present, len(l.fans), len(wantFan), len(l.fans)+len(w.stream), items)
}

// sortAnswers fails the test for each answer that is neither a success nor
// a clean failure (timed from t0) and for 503s without Retry-After, and
// returns the failures and when each successful write was answered, in
// order.
func (l *steadyLoad) sortAnswers(all []answer, t0 time.Time) (failed []answer, writes []time.Time) {
	l.t.Helper()
	for _, a := range all {
		switch {
		case !a.ok():
			failed = append(failed, a)
			if !a.clean() {
				l.t.Errorf("%s at %v after the kill: status %d, body %q; want a 503 (or 409 idempotency_key_in_flight) with a JSON error",
					a.what, a.at.Sub(t0).Round(time.Millisecond), a.status, a.body)
			}
		case !strings.HasPrefix(a.what, "GET "):
			writes = append(writes, a.at)
		}
	}
	if n := l.w.noRetryAfter.Load(); n > 0 {
		l.t.Errorf("%d answers were 503 without Retry-After; want it on every one", n)
	}
	return failed, writes
}

// longestGap returns the longest time between two successive writes, the
// later after from and the earlier before to, and when it began.
func longestGap(writes []time.Time, from, to time.Time) (gap time.Duration, start time.Time) {
	for i := 1; i < len(writes); i++ {
		if writes[i].After(from) && writes[i-1].Before(to) && writes[i].Sub(writes[i-1]) > gap {
			gap, start = writes[i].Sub(writes[i-1]), writes[i-1]
		}
	}
	return gap, start
}
