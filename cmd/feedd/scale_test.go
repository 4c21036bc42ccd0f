package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/testenv"
)

// The scale-out tests: a Redis Cluster master dies in the middle of a
// fan-out, RabbitMQ closes feedd's connections in the middle of one, and
// the read path goes to a replica.

// userTokens mints a token for each of ids.
func userTokens(t *testing.T, in *instance, ids []int64) []string {
	t.Helper()
	toks := make([]string, len(ids))
	for i, id := range ids {
		toks[i] = in.must(201, "POST", "/v1/users/"+feed.FormatID(id)+"/tokens", in.admin, map[string]any{"ttl_seconds": 3600}).str("token")
	}
	return toks
}

// feedsEventually waits until the first page of every token's home feed is
// exactly want: complete, in order, without duplicates.
func feedsEventually(t *testing.T, in *instance, tokens []string, want []string, within time.Duration) {
	t.Helper()
	pending := slices.Clone(tokens)
	var last []string
	testenv.Eventually(t, within, fmt.Sprintf("%d feeds are exactly %v", len(tokens), want), func() bool {
		rest := pending[:0]
		for _, tok := range pending {
			r := in.do("GET", "/v1/me/feed?limit=50", tok, nil)
			var got []string
			for _, it := range r.items() {
				id, _ := it["id"].(string)
				got = append(got, id)
			}
			if r.status != 200 || !slices.Equal(got, want) {
				rest = append(rest, tok)
				last = got
			}
		}
		pending = rest
		if len(pending) > 0 {
			t.Logf("%d feeds not yet complete; one is %v", len(pending), last)
		}
		return len(pending) == 0
	})
}

// TestClusterMasterDiesDuringFanout kills (SIGKILL) the Redis Cluster
// master holding a share of the followers' inboxes while a fan-out writes
// them: go-redis retries through the failover, tasks that still fail are
// redelivered, and writes the dead master acknowledged but never
// replicated are repaired by the read path's smart refresh from SQL. Every
// follower's feed ends complete. The killed node is restarted afterwards
// (.ci/redis-cluster.sh), and rejoins as a replica.
//
// It runs on a Cluster of its own, FEEDD_TEST_REDIS_FAILOVER_CLUSTER_URL
// (.ci/run starts one on ports 7100-7105), because other packages' tests
// use the shared one at the same time; it has it to itself
// (testenv.LockCluster), as other tests kill its nodes too.
func TestClusterMasterDiesDuringFanout(t *testing.T) {
	testenv.LockCluster(t, testenv.RedisFailoverCluster)
	url := clusterURLFrom(t, "FEEDD_TEST_REDIS_FAILOVER_CLUSTER_URL", "FEEDD_CLUSTER_PORT=7100 .ci/redis-cluster.sh")
	env := servicesEnv(t, mariaDB, url)
	c := clusterClient(t, url)
	t.Cleanup(func() { deletePrefix(t, c, env["FEEDD_REDIS_PREFIX"]) })
	t.Cleanup(func() { restoreCluster(t, url) })

	in := startFeedd(t, env, nil, "FEEDD_BATCH_SIZE", "25", "FEEDD_DIRECT_FANOUT", "10", "FEEDD_WORKERS", "2")
	author, authorTok := in.user("author")
	authorID, _ := feed.ParseID(author)
	followers := bulkFollowers(t, in, authorID, 600)
	ctx := context.Background()
	for _, f := range followers {
		if err := in.d.cache.FillInbox(ctx, f, nil, true, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	tokens := userTokens(t, in, followers)

	// The victim is the master of the first follower's inbox.
	key := rediscache.New(nil, rediscache.Options{Prefix: env["FEEDD_REDIS_PREFIX"]}).InboxKeys(followers[0])[0]

	var posts []string
	posts = append(posts, in.post(authorTok, "before the crash"))
	// Kill the master once the fan-out is under way: some inbox holds
	// the post.
	first, _ := feed.ParseID(posts[0])
	testenv.Eventually(t, 20*time.Second, "the fan-out starts", func() bool {
		for _, f := range followers {
			if pg, err := in.d.cache.InboxPage(ctx, f, 0, 5); err == nil && slices.Contains(pg.IDs, first) {
				return true
			}
		}
		return false
	})
	addr := testenv.KillRedisMaster(t, c, key)
	t.Logf("killed master %s", addr)
	posts = append(posts, in.post(authorTok, "during the failover"))
	t.Logf("failover of %s took %v", addr, testenv.WaitRedisFailover(t, c, addr).Round(time.Millisecond))
	posts = append(posts, in.post(authorTok, "after the failover"))

	slices.Reverse(posts)
	feedsEventually(t, in, tokens, posts, 90*time.Second)
	if n, err := in.d.broker.DeadLetters(ctx, feed.QueueTasks); err != nil || n != 0 {
		t.Errorf("dead-lettered tasks = %d, %v; want 0", n, err)
	}
}

// restoreCluster restarts any dead node of the test Cluster and waits
// until it is whole again, so that later tests find three masters with a
// replica each.
func restoreCluster(t *testing.T, rawURL string) {
	t.Helper()
	u, err := url.Parse(strings.Replace(strings.Split(rawURL, ",")[0], "redis+cluster://", "redis://", 1))
	if err != nil {
		t.Errorf("restore cluster: %v", err)
		return
	}
	script, err := filepath.Abs("../../.ci/redis-cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "FEEDD_CLUSTER_PORT="+u.Port(), "FEEDD_CLUSTER_DIR="+clusterDir(u.Port()))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("restore cluster with %s: %v\n%s", script, err, out)
	}
}

// clusterDir is where .ci/redis-cluster.sh keeps the nodes of the Cluster
// on base port: the script's default for 7000, a directory per port
// otherwise, as .ci/run starts them.
func clusterDir(port string) string {
	if port == "7000" {
		return "/tmp/feedd-redis-cluster"
	}
	return "/tmp/feedd-redis-cluster-" + port
}

// brokerConnections returns the pids of the RabbitMQ connections whose
// client-provided name starts with "feedd <prefix>": one test's feedd
// only, on a broker other tests share.
func brokerConnections(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "-q", "list_connections", "pid", "client_properties").CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl list_connections: %v\n%s", err, out)
	}
	var pids []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, `"feedd `+prefix) {
			pids = append(pids, strings.Fields(line)[0])
		}
	}
	return pids
}

// closeBrokerConnections has the broker close every connection of the
// feedd using prefix and returns how many it closed.
func closeBrokerConnections(t *testing.T, prefix string) int {
	t.Helper()
	pids := brokerConnections(t, prefix)
	for _, pid := range pids {
		out, err := exec.Command("rabbitmqctl", "-q", "close_connection", pid, "feedd test: closed by the broker").CombinedOutput()
		if err != nil {
			t.Fatalf("rabbitmqctl close_connection %s: %v\n%s", pid, err, out)
		}
	}
	return len(pids)
}

// TestBrokerClosesConnectionsDuringFanout: RabbitMQ closes feedd's
// connections (both, publishing and consuming) twice while posts fan out,
// on quorum and on classic queues, on either SQL server. feedd reconnects, declares its
// topology again and resumes: every inbox holds every post exactly once,
// and nothing is dead-lettered.
func TestBrokerClosesConnectionsDuringFanout(t *testing.T) {
	if _, err := exec.LookPath("rabbitmqctl"); err != nil {
		feedtest.Missing(t, "rabbitmqctl is not on PATH: %v", err)
	}
	for _, stack := range sqlServerStacks {
		t.Run(stack, func(t *testing.T) {
			for _, qt := range []string{"quorum", "classic"} {
				t.Run(qt, func(t *testing.T) { testBrokerClosesConnections(t, stackEnv(t, stack), qt) })
			}
		})
	}
}

func testBrokerClosesConnections(t *testing.T, env map[string]string, qt string) {
	prefix := env["FEEDD_AMQP_PREFIX"]
	in := startFeedd(t, env, nil, "FEEDD_AMQP_QUEUE_TYPE", qt,
		"FEEDD_BATCH_SIZE", "25", "FEEDD_DIRECT_FANOUT", "10", "FEEDD_WORKERS", "2")
	author, authorTok := in.user("author")
	authorID, _ := feed.ParseID(author)
	followers := bulkFollowers(t, in, authorID, 1500)
	ctx := context.Background()
	for _, f := range followers {
		if err := in.d.cache.FillInbox(ctx, f, nil, true, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, "feedd's two connections show in rabbitmqctl", func() bool {
		return len(brokerConnections(t, prefix)) == 2
	})
	var ids []int64
	for i := range 3 {
		p := in.post(authorTok, fmt.Sprintf("post %d", i))
		id, _ := feed.ParseID(p)
		ids = append(ids, id)
		if i < 2 {
			// In the middle of this post's fan-out: some inbox
			// has it, not all.
			// Generous: after the first close the consumers
			// reconnect with backoff, which a loaded machine
			// stretches; what is proven is that it resumes.
			testenv.Eventually(t, time.Minute, "the fan-out starts", func() bool {
				pg, err := in.d.cache.InboxPage(ctx, followers[len(followers)-1], 0, 5)
				return err == nil && slices.Contains(pg.IDs, id) ||
					func() bool {
						pg, err := in.d.cache.InboxPage(ctx, followers[0], 0, 5)
						return err == nil && slices.Contains(pg.IDs, id)
					}()
			})
			if n := closeBrokerConnections(t, prefix); n == 0 {
				t.Fatalf("found no connection named \"feedd %s…\" to close", prefix)
			}
		}
	}
	slices.Reverse(ids)
	deadline := time.Now().Add(90 * time.Second)
	for _, f := range followers {
		for {
			pg, err := in.d.cache.InboxPage(ctx, f, 0, 10)
			if err == nil && slices.Equal(pg.IDs, ids) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("inbox of %d = %v, %v; want exactly %v", f, pg.IDs, err, ids)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, q := range []string{feed.QueuePosts, feed.QueueTasks} {
		if n, err := in.d.broker.DeadLetters(ctx, q); err != nil || n != 0 {
			t.Errorf("dead letters of %s = %d, %v; want 0", q, n, err)
		}
	}
	testenv.Eventually(t, 10*time.Second, "feedd reconnected both connections", func() bool {
		return len(brokerConnections(t, prefix)) == 2
	})
}
