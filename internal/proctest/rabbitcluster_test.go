package proctest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/rabbit"
	"github.com/feedd/feedd/internal/testenv"
)

// TestRabbitClusterLeaderKill: on a three-node RabbitMQ cluster
// (.ci/rabbitmq-cluster.sh, FEEDD_AMQP_URL listing the three nodes), the
// node leading the posts queue dies of SIGKILL in the middle of a
// 100,000-follower fan-out, while another author publishes ten posts a
// second. Every follower's inbox ends holding the post exactly once, every
// publish is answered, nothing is dead-lettered, and the work processes
// move to the surviving nodes by themselves and finish the fan-out. On the
// two survivors a message that always fails is still dead-lettered after
// feed.MaxAttempts deliveries; the killed node then restarts and rejoins.
// The test prints the publish latency during the kill and how long
// consumption paused.
func TestRabbitClusterLeaderKill(t *testing.T) {
	t.Parallel()
	const (
		followers       = 100000
		steadyFollowers = 20
		steadyEvery     = 100 * time.Millisecond
		// Below the inbox cap, so that a steady follower's inbox holds
		// every steady post and can be compared whole.
		steadyMax = feed.DefaultInboxMax - 100
		// The kill window: the publishes and deliveries measured as
		// "during the kill" started within this long after it.
		window = 10 * time.Second
	)
	cl := requireRabbitCluster(t)
	svc := requireServices(t, mariaDB)
	svc.amqp = cl.url
	s := newStackOn(t, mariaDB, svc)
	s.migrate()
	// Push: in hybrid mode (the default) an author with 100,000 followers
	// is pulled at read time, not fanned out.
	env := s.with("FEEDD_AUTO_MIGRATE", "false", "FEEDD_FANOUT_MODE", "push",
		"FEEDD_BATCH_SIZE", "500", "FEEDD_DIRECT_FANOUT", "100", "FEEDD_WORKERS", "2")
	serve := startReady(t, "serve", env, "serve")
	// Work 2 lists the nodes from the second one on, as a host near that
	// node would: its connections survive the kill, and its consumers see
	// the queues' leader move under them.
	nodes := strings.Split(cl.url, ",")
	env2 := maps.Clone(env)
	env2["FEEDD_AMQP_URL"] = strings.Join(append(nodes[1:], nodes[0]), ",")
	works := []*proc{startReady(t, "work 1", env, "work"), startReady(t, "work 2", env2, "work")}
	api := serve.api()

	celeb, celebTok := api.newUser(s.admin, "celebrity")
	steady, steadyTok := api.newUser(s.admin, "steady")
	setup := time.Now()
	readers := s.followers(celeb, followers)
	steadyReaders := s.followers(steady, steadyFollowers)
	t.Logf("%d followers and their inboxes created in %v", followers+steadyFollowers, time.Since(setup).Round(time.Millisecond))

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	writes := watchInboxWrites(ctx, works, 100*time.Millisecond)
	seen := watchInbox(ctx, s, steadyReaders[0], 20*time.Millisecond)
	pubCtx, stopPublishing := context.WithCancel(ctx)
	published := publishSteadily(pubCtx, api.as(steadyTok), steadyEvery, steadyMax)

	// The processes declared the queues when they connected; the node of
	// the first to declare leads them.
	leader := cl.leader(s.amqpPrefix + feed.QueuePosts)
	tasksLeader := cl.leader(s.amqpPrefix + feed.QueueTasks)
	consumers := map[string]int{feed.QueuePosts: s.consumers(feed.QueuePosts), feed.QueueTasks: s.consumers(feed.QueueTasks)}
	t.Logf("%s leads the posts queue, %s the tasks queue; consumers %v", leader, tasksLeader, consumers)

	start := time.Now()
	base := writes.last()
	post := api.publish(celebTok, fmt.Sprintf("one post to %d followers", followers))
	// Kill once a tenth of the inboxes have the post (and a few steady
	// posts theirs): the fan-out is under way and far from done. Generous:
	// the machine may be busy with other tests.
	if !writes.waitFor(base+followers/10, 180*time.Second) {
		t.Fatalf("the post reached fewer than %d inboxes within 180s (%v writes)", followers/10, writes.last()-base)
	}
	before := writes.last() - base
	killedAt := time.Now()
	cl.kill(leader)
	// The steady publishes go on through the kill window, and stop there.
	time.AfterFunc(window+time.Second, stopPublishing)
	t.Logf("SIGKILL of %s %v after the publish, at %v of %d inbox writes", leader, killedAt.Sub(start).Round(time.Millisecond), before, followers)

	// Reading 100,000 inboxes over and over would slow the fan-out down:
	// wait on the work processes' counters until it may be done.
	if !writes.waitFor(base+followers, 300*time.Second) {
		t.Fatalf("%v inbox writes 300s after the kill; want at least %d", writes.last()-base, followers)
	}
	s.waitInboxes(readers, []int64{post}, 120*time.Second)
	done := time.Now()
	t.Logf("every one of the %d inboxes holds the post exactly once (0 duplicates), %v after the kill, %v after the publish",
		followers, done.Sub(killedAt).Round(time.Millisecond), done.Sub(start).Round(time.Millisecond))
	pubs := published()

	// Publishing: every publish answered; its latency in the kill window.
	var ids []int64
	var during []time.Duration
	for _, p := range pubs {
		if p.err != nil {
			t.Errorf("publish at %v after the kill: %v; want every publish answered", p.at.Sub(killedAt).Round(time.Millisecond), p.err)
			continue
		}
		ids = append(ids, p.id)
		if !p.at.Before(killedAt) && p.at.Before(killedAt.Add(window)) {
			during = append(during, p.took)
		}
	}
	if len(during) == 0 {
		t.Fatalf("no publish started in the %v after the kill", window)
	}
	// The steady author's followers got every post it published, exactly
	// once, in order.
	s.waitInboxes(steadyReaders, reversed(ids), 60*time.Second)
	stop()
	// The longest pause of the fan-out's inbox writes, and the longest
	// time a steady post took from its publish's answer to an inbox: what
	// the kill cost consumers (reconnect, new leader, redeliveries).
	stall := writes.longestStall(killedAt, done)
	delivery := seen.longestDelivery(pubs, killedAt, killedAt.Add(window))
	t.Logf("during the kill: %d publishes, p50 %v, p99 %v, max %v; fan-out writes paused %v at most; steady posts reached an inbox within %v at most",
		len(during), quantile(during, 0.5).Round(time.Millisecond), quantile(during, 0.99).Round(time.Millisecond),
		quantile(during, 1).Round(time.Millisecond), stall.Round(time.Millisecond), delivery.Round(time.Millisecond))
	if after := writes.last() - base; after < followers {
		t.Errorf("%v inbox writes since the publish; want at least the %d followers", after, followers)
	}

	s.requireNoDeadLetters()
	var redelivered float64
	for _, w := range works {
		m := scrape(t, w)
		redelivered += m[`feedd_queue_redeliveries_total{queue="posts"}`] + m[`feedd_queue_redeliveries_total{queue="tasks"}`]
	}
	t.Logf("%v messages delivered again after the kill, each handled once; dead letters 0", redelivered)

	// A message that always fails still goes to its dead-letter queue on
	// the two surviving nodes.
	poisonDeadLetters(t, cl.url)

	// The killed node comes back into the cluster, and posts still flow.
	restart := time.Now()
	cl.start(leader)
	t.Logf("%s restarted and rejoined the cluster in %v; the posts queue is led by %s",
		leader, time.Since(restart).Round(time.Millisecond), cl.leader(s.amqpPrefix+feed.QueuePosts))
	// Each work process subscribed again on a surviving node. The
	// subscriptions of the killed node stay listed (RabbitMQ cannot tell a
	// dead node from a partition; they hold no messages) until it returns.
	for q, n := range consumers {
		deadline := time.Now().Add(30 * time.Second)
		for s.consumers(q) != n && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if got := s.consumers(q); got != n {
			t.Errorf("queue %s has %d consumers after the restart; want the %d it had before the kill", q, got, n)
		}
	}
	last := api.publish(steadyTok, "after the restart")
	s.waitInboxes(steadyReaders, append([]int64{last}, reversed(ids)...), 60*time.Second)
	s.requireNoDeadLetters()
}

// poisonDeadLetters checks, on the cluster at url, that a message whose
// handler always fails is delivered feed.MaxAttempts times and then lands
// in the dead-letter queue: RabbitMQ 3.10 sets no delivery limit of its
// own, so this is feedd's x-delivery-limit at work.
func poisonDeadLetters(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	prefix := "proc" + testenv.RandHex(5) + "."
	t.Cleanup(func() { testenv.DeleteQueues(t, url, prefix) })
	b, err := rabbit.Dial(ctx, url, rabbit.Options{Prefix: prefix}, nil)
	if err != nil {
		t.Fatalf("dial the cluster: %v", err)
	}
	defer b.Close()
	var mu sync.Mutex
	var attempts []int
	cctx, cancel := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- b.Consume(cctx, feed.QueueTasks, feed.ConsumeOptions{}, func(_ context.Context, d feed.Delivery) error {
			mu.Lock()
			attempts = append(attempts, d.Attempt)
			mu.Unlock()
			return errors.New("poison")
		})
	}()
	defer func() {
		cancel()
		if err := <-consumed; err != nil {
			t.Errorf("consume: %v", err)
		}
	}()
	if err := b.Publish(ctx, feed.QueueTasks, []byte("poison")); err != nil {
		t.Fatalf("publish the poison message: %v", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := b.DeadLetters(ctx, feed.QueueTasks)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the poison message is not dead-lettered after 60s (%d dead letters; attempts %v)", n, attempts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	want := make([]int, feed.MaxAttempts)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(attempts, want) {
		t.Errorf("attempts of the poison message = %v; want %v, then the dead-letter queue", attempts, want)
	}
	t.Logf("a message that always fails was tried %v and dead-lettered", attempts)
}

// rabbitCluster drives .ci/rabbitmq-cluster.sh: three RabbitMQ nodes on
// this machine that a test may kill and restart.
type rabbitCluster struct {
	t      *testing.T
	script string
	url    string          // the nodes' AMQP URLs, comma-separated
	dead   map[string]bool // nodes killed and not started again
}

// requireRabbitCluster returns the cluster FEEDD_TEST_AMQP_CLUSTER_URL
// names, with its three nodes running (a node an earlier run left dead is
// started again), to the test alone until it ends (tests of other packages
// kill its nodes too). Without it the test skips, or fails under CI=true.
func requireRabbitCluster(t *testing.T) *rabbitCluster {
	t.Helper()
	url := os.Getenv("FEEDD_TEST_AMQP_CLUSTER_URL")
	if url == "" {
		feedtest.Missing(t, "no RabbitMQ cluster: start one with .ci/rabbitmq-cluster.sh up and set FEEDD_TEST_AMQP_CLUSTER_URL to what it prints")
	}
	testenv.LockCluster(t, testenv.RabbitCluster)
	script, err := filepath.Abs(filepath.Join("..", "..", ".ci", "rabbitmq-cluster.sh"))
	if err != nil {
		t.Fatal(err)
	}
	c := &rabbitCluster{t: t, script: script, url: url, dead: map[string]bool{}}
	if got := c.run("up"); got != url {
		t.Fatalf(".ci/rabbitmq-cluster.sh up printed %q; want FEEDD_TEST_AMQP_CLUSTER_URL=%q", got, url)
	}
	return c
}

// run runs the script with args and returns what it printed.
func (c *rabbitCluster) run(args ...string) string {
	c.t.Helper()
	cmd := exec.Command("bash", append([]string{c.script}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf(".ci/rabbitmq-cluster.sh %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// leader returns the node leading a quorum queue (its full name).
func (c *rabbitCluster) leader(queue string) string { return c.run("leader", queue) }

// kill SIGKILLs node; the test's end starts it again if the test does not.
func (c *rabbitCluster) kill(node string) {
	c.t.Helper()
	c.run("kill", node)
	c.dead[node] = true
	c.t.Cleanup(func() {
		if c.dead[node] {
			c.start(node)
		}
	})
}

// start starts node again and waits until it runs in the cluster.
func (c *rabbitCluster) start(node string) {
	c.t.Helper()
	c.run("start", node)
	delete(c.dead, node)
}

// inboxWrites samples the work processes' feedd_fanout_inbox_writes_total.
type inboxWrites struct {
	mu sync.Mutex
	at []time.Time
	n  []float64
}

// watchInboxWrites samples the sum of the work processes' inbox writes
// every period until ctx ends.
func watchInboxWrites(ctx context.Context, works []*proc, period time.Duration) *inboxWrites {
	w := &inboxWrites{}
	go func() {
		for ctx.Err() == nil {
			var sum float64
			for _, p := range works {
				m, err := metrics(p)
				if err != nil {
					sum = -1 // a process between two scrapes; skip the sample
					break
				}
				sum += m["feedd_fanout_inbox_writes_total"]
			}
			if sum >= 0 {
				w.mu.Lock()
				w.at, w.n = append(w.at, time.Now()), append(w.n, sum)
				w.mu.Unlock()
			}
			time.Sleep(period)
		}
	}()
	return w
}

func (w *inboxWrites) last() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.n) == 0 {
		return 0
	}
	return w.n[len(w.n)-1]
}

// waitFor waits until the writes reach n, and reports whether they did.
func (w *inboxWrites) waitFor(n float64, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if w.last() >= n {
			return true
		}
	}
	return false
}

// longestStall returns the longest time between from and to in which the
// writes did not grow, to the sampling period.
func (w *inboxWrites) longestStall(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	grew := from
	for i := 1; i < len(w.at); i++ {
		if w.at[i].Before(from) || w.at[i].After(to) || w.n[i] <= w.n[i-1] {
			continue
		}
		longest = max(longest, w.at[i].Sub(grew))
		grew = w.at[i]
	}
	return longest
}

// inboxSightings records when each post first showed in one reader's inbox.
type inboxSightings struct {
	mu    sync.Mutex
	first map[int64]time.Time
}

// watchInbox reads reader's inbox every period until ctx ends.
func watchInbox(ctx context.Context, s *stack, reader int64, period time.Duration) *inboxSightings {
	w := &inboxSightings{first: map[int64]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			pg, err := s.cache.InboxPage(ctx, reader, 0, feed.DefaultInboxMax)
			now := time.Now()
			if err == nil {
				w.mu.Lock()
				for _, id := range pg.IDs {
					if _, ok := w.first[id]; !ok {
						w.first[id] = now
					}
				}
				w.mu.Unlock()
			}
			time.Sleep(period)
		}
	}()
	return w
}

// longestDelivery returns the longest time from a publish's answer to the
// post's first sighting, among the publishes started between from and to.
// A post never seen counts until now.
func (w *inboxSightings) longestDelivery(pubs []publishing, from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	for _, p := range pubs {
		if p.err != nil || p.at.Before(from) || !p.at.Before(to) {
			continue
		}
		seen, ok := w.first[p.id]
		if !ok {
			seen = time.Now()
		}
		longest = max(longest, seen.Sub(p.at.Add(p.took)))
	}
	return longest
}

// publishing is one publish of publishSteadily.
type publishing struct {
	at   time.Time
	took time.Duration
	id   int64
	err  error
}

// publishSteadily publishes a post every period (at most n) through api
// until ctx ends; the function it returns waits for the last publish and
// returns them all.
func publishSteadily(ctx context.Context, api *fclient.Client, period time.Duration, n int) func() []publishing {
	var pubs []publishing
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for i := 0; i < n; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			start := time.Now()
			// Not ctx: a publish in flight when the test stops completes.
			p, err := api.CreatePost(context.Background(), fclient.CreatePostParams{Content: fmt.Sprintf("steady %d", i)})
			pubs = append(pubs, publishing{at: start, took: time.Since(start), id: int64(p.ID), err: err})
		}
	}()
	return func() []publishing {
		<-done
		return pubs
	}
}
