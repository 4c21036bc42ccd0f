package proctest

import (
	"context"
	"testing"
	"time"

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
		before = 4 * time.Second // load before the crash
		outage = 4 * time.Second // between the crash and the start
		after  = 12 * time.Second
	)
	pg := startPostgres(t)
	s := newStack(t, pg.backend())
	ctx := context.Background()
	load := startSteadyLoad(t, s, 2000, 20, 11)

	time.Sleep(before)
	t.Log("crash PostgreSQL (pg_ctl stop -m immediate)")
	crashed := time.Now()
	pg.crash()
	time.Sleep(outage)
	pg.start()
	up := time.Now()
	t.Logf("PostgreSQL accepts connections again %v after the crash", up.Sub(crashed).Round(time.Millisecond))
	time.Sleep(after)
	all := load.finish()

	// The answers: fast, clean, and successes again soon after the
	// database is back.
	var failed []answer
	var worst answer
	for _, a := range all {
		if a.took > worst.took {
			worst = a
		}
		if a.ok() {
			continue
		}
		failed = append(failed, a)
		if !a.clean() {
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
	authorPosts, streamPosts, follows, likes, reads := load.summary()
	t.Logf("load: %d author posts, %d stream posts, %d follows, %d likes, %d feed reads; %d answers, %d of them 503/409 (p50 %v, max %v), the slowest answer %v (%s, status %d); the last failure %v after the database was back",
		authorPosts, streamPosts, follows, likes, reads, len(all), len(failed),
		quantile(lat, .5), quantile(lat, 1), worst.took.Round(time.Millisecond), worst.what, worst.status, last.Sub(up).Round(time.Millisecond))
	if recovered := last.Sub(up); recovered > 15*time.Second {
		t.Errorf("requests still failed %v after PostgreSQL was back; want the processes serving again within 15s", recovered)
	}

	// The end state. The test's own store had its connections cut too.
	testenv.Eventually(t, 30*time.Second, "the test's store reaches PostgreSQL again", func() bool {
		return s.store.DB().PingContext(ctx) == nil
	})
	load.checkEnd(ctx)
}
