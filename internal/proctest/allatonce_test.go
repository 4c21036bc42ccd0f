package proctest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	fclient "github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/testenv"
)

// TestAllAtOnce: a serve and a work process run on the three clusters at
// once (the Galera trio, the RabbitMQ trio, the failover Redis Cluster)
// under a steady mixed load: an author with 300 followers posting every
// second, 12 stream users publishing, following, liking and reading, a
// client reading a sample of the followers' feeds, and 8 followers
// watching their live stream. Within ten seconds the test SIGKILLs the
// Galera node feedd writes through, the RabbitMQ node leading the posts
// queue and the Redis Cluster master holding a follower's inbox, then
// starts all three again.
//
// Every answer that was no success was a 503 with Retry-After (or a 409
// idempotency_key_in_flight), never a 500. Afterwards every post, follow
// and like answered 2xx is in SQL once with exact counts, every inbox
// holds every post once, every feed read through the API is complete,
// every live stream got every post from its first on exactly once and in
// order (resuming with Last-Event-ID wherever it was cut), and nothing is
// dead-lettered. The test prints the errors by status, the longest time
// without a successful write and the recovery times.
func TestAllAtOnce(t *testing.T) {
	const (
		followers   = 300
		streamUsers = 12
		liveStreams = 8
		before      = 5 * time.Second // load before the first kill
		apart       = 3 * time.Second // between two kills
		down        = 5 * time.Second // from the Redis failover to the restarts
		after       = 8 * time.Second // load once every node is back
	)
	// The three clusters to this test alone, in LockCluster's order; each
	// restarts the nodes it killed when the test ends.
	testenv.UseGalera(t, true)
	rabbit := requireRabbitCluster(t)
	redisURL, rc := requireRedisFailoverCluster(t)
	svc := requireServices(t, galera)
	svc.amqp, svc.redis = rabbit.url, redisURL
	s := newStackOn(t, galera, svc)
	ctx := context.Background()

	load := startSteadyLoad(t, s, followers, streamUsers, 2611)
	live := watchStreams(t, load, liveStreams)
	time.Sleep(before)
	live.waitStarted(30 * time.Second)

	writer := testenv.GaleraHosts(t)[0] // feedd writes through the first node of the list
	leader := rabbit.leader(s.amqpPrefix + feed.QueuePosts)
	inbox := s.cache.InboxKeys(load.fans[0])[0]
	first := time.Now()
	testenv.Galera(t, "kill", "1")
	live.cut()
	t.Logf("SIGKILL the writing Galera node %s", writer)
	time.Sleep(apart)
	rabbit.kill(leader)
	live.cut()
	t.Logf("SIGKILL the RabbitMQ node %s, leader of the posts queue, %v after the first kill", leader, time.Since(first).Round(time.Millisecond))
	time.Sleep(apart)
	master := testenv.KillRedisMaster(t, rc, inbox)
	live.cut()
	t.Logf("SIGKILL the Redis master %s, %v after the first kill", master, time.Since(first).Round(time.Millisecond))
	failover := testenv.WaitRedisFailover(t, rc, master)
	t.Logf("a replica took over %s's slots %v after its kill", master, failover.Round(time.Millisecond))
	time.Sleep(down)

	testenv.Galera(t, "start", "1")
	rabbit.start(leader)
	restoreRedisCluster(t, redisURL)
	back := time.Now()
	t.Logf("every node back (Galera synced, RabbitMQ rejoined, Redis Cluster whole) %v after the first kill", back.Sub(first).Round(time.Millisecond))
	load.serve.waitReady(60 * time.Second)
	load.work.waitReady(60 * time.Second)
	healthy := time.Now()
	time.Sleep(after)
	all := load.finish()

	failed, writes := load.sortAnswers(all, first)
	byStatus := map[int]int{}
	for _, a := range failed {
		byStatus[a.status]++
	}
	var lastFailure, resumed time.Time
	if len(failed) > 0 {
		lastFailure = failed[len(failed)-1].at
	}
	if i, _ := slices.BinarySearchFunc(writes, back, time.Time.Compare); i < len(writes) {
		resumed = writes[i]
	}
	gap, gapStart := longestGap(writes, first, time.Now())
	if resumed.IsZero() {
		t.Fatalf("no write succeeded in the %v after every node was back", after)
	}
	authorPosts, streamPosts, follows, likes, reads := load.summary()
	t.Logf("load: %d author posts, %d stream posts, %d follows, %d likes, %d feed reads; %d answers, failures by status %s",
		authorPosts, streamPosts, follows, likes, reads, len(all), statusCounts(byStatus))
	t.Logf("figures: longest time without a successful write %v (from %v after the first kill); "+
		"from the first kill: the last failure %v, every node back %v, the first write after it %v, serve and work ready %v",
		gap.Round(time.Millisecond), gapStart.Sub(first).Round(time.Millisecond),
		lastFailure.Sub(first).Round(time.Millisecond), back.Sub(first).Round(time.Millisecond),
		resumed.Sub(first).Round(time.Millisecond), healthy.Sub(first).Round(time.Millisecond))

	load.checkEnd(ctx)
	live.check(load.w.posts[load.author], 60*time.Second)
}

// statusCounts renders failures by status ("503: 12, 409: 1"; "none").
func statusCounts(n map[int]int) string {
	if len(n) == 0 {
		return "none"
	}
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%d: %d", st, n[st]))
	}
	return strings.Join(parts, ", ")
}

// requireRedisFailoverCluster returns the URL of the Redis Cluster of
// FEEDD_TEST_REDIS_FAILOVER_CLUSTER_URL and a client of it, the cluster
// to the test alone and whole again when the test ends. Without it the
// test skips, or fails under CI=true.
func requireRedisFailoverCluster(t *testing.T) (string, *redis.ClusterClient) {
	t.Helper()
	url := os.Getenv("FEEDD_TEST_REDIS_FAILOVER_CLUSTER_URL")
	if url == "" {
		feedtest.Missing(t, "no failover Redis Cluster: start one with FEEDD_CLUSTER_PORT=7100 .ci/redis-cluster.sh and set FEEDD_TEST_REDIS_FAILOVER_CLUSTER_URL to what it prints")
	}
	testenv.LockCluster(t, testenv.RedisFailoverCluster)
	c, err := rediscache.NewClient(url, "", 0)
	if err != nil {
		t.Fatalf("FEEDD_TEST_REDIS_FAILOVER_CLUSTER_URL: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("FEEDD_TEST_REDIS_FAILOVER_CLUSTER_URL=%s is not a redis+cluster:// URL", url)
	}
	// A node an earlier run left dead is started again; so is the one
	// this test kills, when it ends.
	restoreRedisCluster(t, url)
	t.Cleanup(func() { restoreRedisCluster(t, url) })
	return url, cc
}

// restoreRedisCluster runs .ci/redis-cluster.sh for the Cluster at
// rawURL: it starts its dead nodes again (they rejoin as replicas) and
// waits until the Cluster is whole.
func restoreRedisCluster(t *testing.T, rawURL string) {
	t.Helper()
	u, err := url.Parse(strings.Replace(strings.Split(rawURL, ",")[0], "redis+cluster://", "redis://", 1))
	if err != nil {
		t.Fatalf("redis cluster URL %s: %v", rawURL, err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", ".ci", "redis-cluster.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "FEEDD_CLUSTER_PORT="+u.Port())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf(".ci/redis-cluster.sh for port %s: %v\n%s", u.Port(), err, out)
	}
}

// liveStreams are followers of the steady load's author watching their
// live home feed through package client, which reconnects by itself with
// Last-Event-ID; the test cuts their connections at each kill, so that
// they resume in the middle of the failovers.
type liveStreams struct {
	t      *testing.T
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn // the streams' connections, to cut
	got    [][]int64  // per stream, the ids of its post events, in order
	resets []int      // per stream, the reset events (posts it missed)
	errs   []error    // per stream, the error that ended it
	cuts   int        // reconnections, all streams
}

// watchStreams opens the live streams of the first n followers of l.
func watchStreams(t *testing.T, l *steadyLoad, n int) *liveStreams {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	ls := &liveStreams{t: t, stop: stop, got: make([][]int64, n), resets: make([]int, n), errs: make([]error, n)}
	t.Cleanup(ls.close)
	hc := &http.Client{Transport: &http.Transport{DialContext: ls.dial}}
	for i, tok := range l.w.sign(l.s.env["FEEDD_JWT_SECRET"], l.fans[:n]) {
		api, err := fclient.New(l.serve.url(), fclient.WithToken(tok), fclient.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			opts := fclient.StreamOptions{IdleTimeout: 20 * time.Second, OnReconnect: func(error, time.Duration) {
				ls.mu.Lock()
				ls.cuts++
				ls.mu.Unlock()
			}}
			for ev, err := range api.Stream(ctx, opts) {
				ls.mu.Lock()
				switch {
				case err != nil:
					ls.errs[i] = err
				case ev.Type == fclient.EventPost:
					ls.got[i] = append(ls.got[i], int64(ev.ID))
				case ev.Type == fclient.EventReset:
					ls.resets[i]++
				}
				ls.mu.Unlock()
			}
		}()
	}
	return ls
}

// dial opens a stream's connection and keeps it, to cut.
func (ls *liveStreams) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		ls.mu.Lock()
		ls.conns = append(ls.conns, conn)
		ls.mu.Unlock()
	}
	return conn, err
}

// cut closes every stream's connection: each client reconnects with its
// Last-Event-ID.
func (ls *liveStreams) cut() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, c := range ls.conns {
		c.Close()
	}
	ls.conns = nil
}

// close ends the streams and waits for their goroutines.
func (ls *liveStreams) close() {
	ls.stop()
	ls.wg.Wait()
}

// waitStarted waits until every stream got a post.
func (ls *liveStreams) waitStarted(within time.Duration) {
	ls.t.Helper()
	testenv.Eventually(ls.t, within, "every live stream gets a post", func() bool {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		return !slices.ContainsFunc(ls.got, func(ids []int64) bool { return len(ids) == 0 })
	})
}

// check waits until every stream got, from its first post on, every post
// of posts (the author's, ascending) that follows it, exactly once, and
// fails the test if one did not within the time given, was reset (missed
// more than the server replays) or ended. A post announced late may come
// after a newer one: the order is not checked, only what arrived.
func (ls *liveStreams) check(posts []int64, within time.Duration) {
	ls.t.Helper()
	want := func(ids []int64) []int64 {
		i, _ := slices.BinarySearch(posts, ids[0])
		return posts[i:]
	}
	whole := func(ids []int64) bool { return slices.Equal(slices.Sorted(slices.Values(ids)), want(ids)) }
	deadline := time.Now().Add(within)
	for {
		ls.mu.Lock()
		pending := slices.ContainsFunc(ls.got, func(ids []int64) bool { return !whole(ids) })
		ls.mu.Unlock()
		if !pending || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ls.close()
	var total, late int
	for i, ids := range ls.got {
		total += len(ids)
		for j := 1; j < len(ids); j++ {
			if ids[j] < ids[j-1] {
				late++
			}
		}
		if !whole(ids) {
			ls.t.Errorf("live stream %d got posts %v; want %v (every post from its first one, once)", i, ids, want(ids))
		}
		if ls.resets[i] > 0 || ls.errs[i] != nil {
			ls.t.Errorf("live stream %d: %d resets, ended by %v; want none", i, ls.resets[i], ls.errs[i])
		}
	}
	ls.t.Logf("live streams: %d streams got %d posts (%d of them after a newer one), each from its first one once, over %d reconnections with Last-Event-ID",
		len(ls.got), total, late, ls.cuts)
}
