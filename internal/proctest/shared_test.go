package proctest

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestTwoServeTwoWork: two serve and two work processes share one set of
// services. Users, follows and posts made through one serve process are
// seen through the other; the posts of a big author are fanned out by the
// two work processes together, each inbox written once.
func TestTwoServeTwoWork(t *testing.T) {
	t.Parallel()
	const followers = 2000
	s := newStack(t, mariaDB)
	s.migrate()
	env := s.with("FEEDD_AUTO_MIGRATE", "false",
		"FEEDD_BATCH_SIZE", "50", "FEEDD_DIRECT_FANOUT", "100", "FEEDD_WORKERS", "2")
	serveA := startReady(t, "serve A", env, "serve")
	serveB := startReady(t, "serve B", env, "serve")
	workers := []*proc{startReady(t, "work 1", env, "work"), startReady(t, "work 2", env, "work")}
	a, b := serveA.api(), serveB.api()
	// Ready means the backends answer; wait until both work processes
	// also consume, so that both can take a share.
	testenv.Eventually(t, 30*time.Second, "both work processes consume posts and tasks", func() bool {
		return s.consumers("posts") == 2 && s.consumers("tasks") == 2
	})

	// Users and follows through one process, seen through the other.
	star, starTok := a.newUser(s.admin, "star")
	friend, friendTok := b.newUser(s.admin, "friend")
	reader, readerTok := a.newUser(s.admin, "reader")
	b.must(204, "PUT", "/v1/me/following/"+strconv.FormatInt(star, 10), readerTok, nil)
	a.must(204, "PUT", "/v1/me/following/"+strconv.FormatInt(friend, 10), readerTok, nil)
	if u := a.must(200, "GET", "/v1/users/"+strconv.FormatInt(reader, 10), starTok, nil); u["name"] != "reader" || u["following_count"] != float64(2) {
		t.Fatalf("reader through serve A = %v; want name reader, following 2", u)
	}
	if u := b.must(200, "GET", "/v1/users/"+strconv.FormatInt(star, 10), friendTok, nil); u["name"] != "star" || u["follower_count"] != float64(1) {
		t.Fatalf("star through serve B = %v; want name star, 1 follower", u)
	}

	readers := s.followers(star, followers)
	// The reader's inbox is materialized by its first read.
	if got := b.feed(readerTok); len(got) != 0 {
		t.Fatalf("reader's feed before any post = %v; want empty", got)
	}

	// A big author's posts, one through each serve process, and a small
	// author's, which the dispatcher writes itself.
	p1 := a.publish(starTok, "through A")
	p2 := b.publish(starTok, "through B")
	p3 := a.publish(friendTok, "a friend's post")
	want := []int64{p2, p1}
	s.waitInboxes(readers, want, 60*time.Second)
	wantReader := []int64{p3, p2, p1}
	testenv.Eventually(t, 30*time.Second, "the friend's post reaches the reader's inbox", func() bool {
		return len(s.mismatched([]int64{reader}, wantReader)) == 0
	})
	for _, c := range []*client{a, b} {
		if got := c.feed(readerTok); !slices.Equal(got, wantReader) {
			t.Fatalf("reader's feed through %s = %v; want %v", c.base, got, wantReader)
		}
	}
	s.requireNoDeadLetters()

	// Between them the two work processes pushed every post to every
	// follower (the star's 2,001 get two posts, the reader one more), split
	// each big post once, and both took a share of the batch tasks. The
	// counters move just after the writes they count, so they may lag the
	// inboxes a little.
	wantWrites := float64(2*(followers+1) + 1)
	var writes, tasks, split float64
	var perWorker []float64
	testenv.Eventually(t, 10*time.Second, fmt.Sprintf("the work processes count %v inbox writes and 2 splits", wantWrites), func() bool {
		writes, tasks, split, perWorker = 0, 0, 0, nil
		for _, w := range workers {
			m := scrape(t, w)
			writes += m["feedd_fanout_inbox_writes_total"]
			tasks += m[`feedd_fanout_tasks_total{outcome="done"}`]
			split += m[`feedd_fanout_events_total{how="split"}`]
			perWorker = append(perWorker, m[`feedd_fanout_tasks_total{outcome="done"}`])
		}
		return writes >= wantWrites && split >= 2
	})
	if writes > wantWrites {
		// Delivery is at least once: a publish whose confirm was lost is
		// sent again, and a direct fan-out redone. The inboxes above are
		// what must be exact; this only says the work was not repeated.
		t.Logf("inbox writes of both work processes = %v; want %v unless a message was redelivered", writes, wantWrites)
	}
	if split != 2 {
		t.Errorf("big posts split by the two work processes = %v; want 2 (each once)", split)
	}
	for i, n := range perWorker {
		if n == 0 {
			t.Errorf("%s did no batch task; want both work processes to share the fan-out", workers[i].name)
		}
	}
	t.Logf("%v batch tasks (%v per process) and %v inbox writes across the two work processes", tasks, perWorker, writes)
}

// scrape reads a process's /metrics into a map from series (name plus
// labels, as printed) to value.
func scrape(t *testing.T, p *proc) map[string]float64 {
	t.Helper()
	m, err := metrics(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// metrics is scrape for a goroutine of the test, which may not fail it.
func metrics(p *proc) (map[string]float64, error) {
	res, err := http.Get(p.url() + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", p.name, err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("scrape %s: status %d", p.name, res.StatusCode)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("scrape %s: line %q: %w", p.name, line, err)
		}
		m[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", p.name, err)
	}
	return m, nil
}

// TestProcessesComeAndGo: two serve and three work processes share one set
// of services while processes are added and removed — a work process
// joins, one leaves with SIGTERM, one dies of SIGKILL and another
// replaces it, a serve process is swapped for a new one — between the
// posts of a big author published through whichever serve processes are
// up. Every follower's inbox ends holding every post exactly once, and no
// message is dead-lettered.
func TestProcessesComeAndGo(t *testing.T) {
	t.Parallel()
	const followers = 1500
	s := newStack(t, mariaDB)
	s.migrate()
	env := s.with("FEEDD_AUTO_MIGRATE", "false",
		"FEEDD_BATCH_SIZE", "50", "FEEDD_DIRECT_FANOUT", "100", "FEEDD_WORKERS", "2")
	serves := []*proc{startReady(t, "serve A", env, "serve"), startReady(t, "serve B", env, "serve")}
	work := []*proc{startReady(t, "work 1", env, "work"), startReady(t, "work 2", env, "work"), startReady(t, "work 3", env, "work")}
	testenv.Eventually(t, 30*time.Second, "three work processes consume posts and tasks", func() bool {
		return s.consumers("posts") == 3 && s.consumers("tasks") == 3
	})
	star, starTok := serves[0].api().newUser(s.admin, "star")
	readers := s.followers(star, followers)

	var posts []int64
	publish := func(i int) {
		c := serves[i%len(serves)].api()
		posts = append(posts, c.publish(starTok, fmt.Sprintf("post %d through %s", i, c.base)))
	}
	// Each change happens while the previous post is still fanning out.
	steps := []struct {
		what string
		do   func()
	}{
		{"a fourth work process joins", func() { work = append(work, startReady(t, "work 4", env, "work")) }},
		{"work 1 leaves (SIGTERM)", func() {
			work[0].signal(syscall.SIGTERM)
			if st := work[0].wait(30 * time.Second); !st.Success() {
				t.Errorf("work 1 after SIGTERM: %v; want a clean exit", st)
			}
		}},
		{"work 2 dies (SIGKILL), work 5 replaces it", func() {
			work[1].signal(syscall.SIGKILL)
			work[1].wait(10 * time.Second)
			work = append(work, startReady(t, "work 5", env, "work"))
		}},
		{"serve B is replaced by serve C", func() {
			serves[1].signal(syscall.SIGTERM)
			if st := serves[1].wait(30 * time.Second); !st.Success() {
				t.Errorf("serve B after SIGTERM: %v; want a clean exit", st)
			}
			serves[1] = startReady(t, "serve C", env, "serve")
		}},
	}
	for i, step := range steps {
		publish(i)
		t.Log(step.what)
		step.do()
	}
	publish(len(steps))
	publish(len(steps) + 1)

	want := slices.Clone(posts)
	slices.Reverse(want)
	s.waitInboxes(readers, want, 120*time.Second)
	s.requireNoDeadLetters()
	// Through either serve process, a follower's feed is every post.
	tok := serves[0].api().token(s.admin, readers[0])
	for _, p := range serves {
		if got := p.api().feed(tok); !slices.Equal(got, want) {
			t.Errorf("feed through %s = %v; want %v", p.name, got, want)
		}
	}
}
