package proctest

import (
	"context"
	"testing"
	"time"

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
		before = 4 * time.Second // load before the kill
		down   = 6 * time.Second // between the kill and the start
		after  = 8 * time.Second // load once the node takes writes again
	)
	testenv.UseGalera(t, true)
	writer := testenv.GaleraHosts(t)[0] // feedd writes through the first node of the list
	ctx := context.Background()
	s := newStack(t, galera)
	load := startSteadyLoad(t, s, 2000, 20, 26)

	time.Sleep(before)
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
	all := load.finish()

	// The answers: failures only 503s, and writes answered again soon.
	failed, writes := load.sortAnswers(all, killed)
	// The longest time between two successful writes, over the kill.
	gap, gapStart := longestGap(writes, killed, back)
	authorPosts, streamPosts, follows, likes, reads := load.summary()
	t.Logf("load: %d author posts, %d stream posts, %d follows, %d likes, %d feed reads; %d answers, %d of them 503/409; "+
		"the longest time without a successful write: %v, from %v after the kill",
		authorPosts, streamPosts, follows, likes, reads, len(all), len(failed),
		gap.Round(time.Millisecond), gapStart.Sub(killed).Round(time.Millisecond))
	if gap > 5*time.Second {
		t.Errorf("no write succeeded for %v; want at most 5s", gap.Round(time.Millisecond))
	}
	// What an operator sees: both processes write through the first node
	// again, after a move away and one back.
	for _, p := range []*proc{load.serve, load.work} {
		m := scrape(t, p)
		if m[`feedd_sql_writer{node="`+writer+`"}`] < 1 || m["feedd_sql_writer_moves_total"] < 2 {
			t.Errorf("%s: feedd_sql_writer{node=%q} = %v, feedd_sql_writer_moves_total = %v; want ≥ 1 and ≥ 2",
				p.name, writer, m[`feedd_sql_writer{node="`+writer+`"}`], m["feedd_sql_writer_moves_total"])
		}
	}
	load.checkEnd(ctx)
}
