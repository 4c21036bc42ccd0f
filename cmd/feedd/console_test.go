package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

// failingPosts is the broker of a work process whose dispatcher fails
// every post event while fail is set, as it would with a dependency down
// for longer than its retries: the events go to the dead letters.
type failingPosts struct {
	feed.Broker
	fail *atomic.Bool
}

func (b failingPosts) Consume(ctx context.Context, queue string, opts feed.ConsumeOptions, h feed.Handler) error {
	if queue == feed.QueuePosts {
		next := h
		h = func(ctx context.Context, d feed.Delivery) error {
			if b.fail.Load() {
				return errors.New("test: the dispatcher's dependency is down")
			}
			return next(ctx, d)
		}
	}
	return b.Broker.Consume(ctx, queue, opts, h)
}

// overview reads GET /v1/admin/overview as the console does.
func (in *instance) overview() census.Overview {
	in.t.Helper()
	r := in.must(200, "GET", "/v1/admin/overview", in.admin, nil)
	var o census.Overview
	if err := json.Unmarshal(r.raw, &o); err != nil {
		in.t.Fatalf("overview: %v: %s", err, r.raw)
	}
	return o
}

func deadLetters(o census.Overview, queue string) int64 {
	for _, q := range o.Queues {
		if q.Name == queue && q.DeadLetters != nil {
			return *q.DeadLetters
		}
	}
	return -1
}

// TestOpsConsole runs the console's figures and its requeue against the
// real program on every stack: on the embedded default one process of
// role all, on the stacks of real services two serve processes and a
// work process, which every serving process's overview lists. Rates move
// once posts are published and feeds read; a post whose fan-out fails past
// its retries shows as a dead letter, and the console's requeue delivers
// it.
func TestOpsConsole(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		var fail atomic.Bool
		breakPosts := func(pid int) func(*deps) {
			return func(d *deps) {
				d.pid = pid
				d.broker = failingPosts{Broker: d.broker, fail: &fail}
			}
		}
		withPID := func(pid int) func(*deps) { return func(d *deps) { d.pid = pid } }
		// Push delivery without the read path's refresh, so that a post
		// reaches the feed only through its fan-out.
		beat := []string{"FEEDD_HEARTBEAT", "100ms", "FEEDD_FANOUT_MODE", "push", "FEEDD_REFRESH_INTERVAL", "1h"}

		var writer, reader, worker *instance // publishes go to one, reads to the other
		var want []string                    // "role pid" of the processes
		if serverOf(env) == nil {
			writer = startFeedd(t, env, breakPosts(101), beat...)
			reader = writer
			want = []string{"all 101"}
		} else {
			worker = startRole(t, "work", env, breakPosts(103), beat...)
			writer = startRole(t, "serve", env, withPID(101), beat...)
			reader = startRole(t, "serve", env, withPID(102), beat...)
			want = []string{"serve 101", "serve 102", "work 103"}
		}
		roles := func(o census.Overview) []string {
			var got []string
			for _, p := range o.Processes {
				got = append(got, fmt.Sprintf("%s %d", p.Role, p.PID))
			}
			return got
		}
		for _, in := range []*instance{writer, reader} {
			var o census.Overview
			testenv.Eventually(t, 10*time.Second, "every process in the overview", func() bool {
				o = in.overview()
				return slices.Equal(roles(o), want)
			})
			for _, p := range o.Processes {
				if p.Version == "" || p.StartedAt.IsZero() || time.Since(p.LastSeen.Time) > 5*time.Second || !strings.HasSuffix(p.ID, fmt.Sprintf(":%d", p.PID)) {
					t.Errorf("process %+v: want a version, a start, a recent last seen and an id host:pid", p)
				}
			}
			if o.HeartbeatSeconds != 0.1 || len(o.Problems) != 0 || o.Outbox.Unsent == nil || len(o.Queues) != 3 {
				t.Errorf("overview = %+v; want heartbeat 0.1 s, no problems, the outbox and three queues", o)
			}
		}

		// Traffic: publishes through one process, reads through the other.
		author, authorTok := writer.user("author")
		_, readerTok := writer.user("reader")
		writer.follow(readerTok, author)
		var posted []string
		for i := range 5 {
			posted = append([]string{writer.post(authorTok, fmt.Sprintf("post %d", i))}, posted...)
		}
		reader.feedEventually(readerTok, 20, posted)
		var o census.Overview
		testenv.Eventually(t, 10*time.Second, "publish, read and fan-out rates above 0", func() bool {
			o = reader.overview()
			return o.Publish.PerSecond > 0 && o.Read.PerSecond > 0 && o.Fanout.InboxWritesPerSecond > 0 &&
				o.Publish.P99Ms != nil && o.Read.P50Ms != nil && o.Fanout.LagP50Ms != nil
		})
		if len(want) > 1 {
			// Each process reports its own share.
			for _, p := range o.Processes {
				switch p.PID {
				case 101:
					if p.Publish.PerSecond == 0 || p.Read.PerSecond != 0 {
						t.Errorf("writer's figures %+v; want publishes and no reads", p)
					}
				case 102:
					if p.Read.PerSecond == 0 || p.Publish.PerSecond != 0 {
						t.Errorf("reader's figures %+v; want reads and no publishes", p)
					}
				case 103:
					if p.Fanout.InboxWritesPerSecond == 0 || p.Publish.PerSecond != 0 {
						t.Errorf("worker's figures %+v; want inbox writes and no publishes", p)
					}
				}
			}
		}
		var names []string
		for _, b := range o.Breakers {
			names = append(names, b.Name)
			if b.State != "closed" || b.Open != 0 {
				t.Errorf("breaker %+v; want closed", b)
			}
		}
		if !slices.Contains(names, "sql") || !slices.Contains(names, "sql likes") {
			t.Errorf("breakers %q; want sql and sql likes", names)
		}
		if redis := env["FEEDD_REDIS_URL"]; redis != "" && !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "redis 127.0.0.1:") }) {
			t.Errorf("breakers %q; want one per Redis server", names)
		}

		// A post whose fan-out fails past its retries is a dead letter.
		if n := deadLetters(o, feed.QueuePosts); n != 0 {
			t.Fatalf("posts dead letters before the fault = %d; want 0", n)
		}
		fail.Store(true)
		doomed := writer.post(authorTok, "doomed at first")
		// Five deliveries with their backoff: under a loaded CI machine
		// this took over 20 s on PostgreSQL.
		testenv.Eventually(t, 60*time.Second, "the post's event in the dead letters", func() bool {
			return deadLetters(reader.overview(), feed.QueuePosts) == 1
		})
		fail.Store(false)
		if got := reader.feedAll(readerTok, 20); slices.Contains(got, doomed) {
			t.Fatalf("the dead-lettered post is in the feed already")
		}
		r := writer.must(200, "POST", "/v1/admin/dead-letters/requeue", writer.admin, nil)
		var moved struct {
			Requeued map[string]int `json:"requeued"`
		}
		if err := json.Unmarshal(r.raw, &moved); err != nil || moved.Requeued["posts"] != 1 || moved.Requeued["tasks"] != 0 || moved.Requeued["likes"] != 0 || len(moved.Requeued) != 3 {
			t.Fatalf("requeue answered %s; want posts 1, tasks 0, likes 0", r.raw)
		}
		reader.feedEventually(readerTok, 20, append([]string{doomed}, posted...))
		if n := deadLetters(reader.overview(), feed.QueuePosts); n != 0 {
			t.Errorf("posts dead letters after the requeue = %d; want 0", n)
		}
		// The outbox drained: every event was relayed.
		testenv.Eventually(t, 10*time.Second, "the outbox drained", func() bool {
			o := reader.overview()
			return o.Outbox.Unsent != nil && *o.Outbox.Unsent == 0 && *o.Outbox.OldestAgeSeconds == 0
		})

		// The console is the admin's: a user token is refused, nothing moves.
		writer.must(403, "GET", "/v1/admin/overview", readerTok, nil)
		writer.must(403, "POST", "/v1/admin/dead-letters/requeue", readerTok, nil)
		writer.must(401, "POST", "/v1/admin/dead-letters/requeue", "", nil)
		writer.must(400, "POST", "/v1/admin/dead-letters/requeue", writer.admin, `{"queue":"outbox"}`)

		// A process that stops leaves the list.
		if worker != nil {
			worker.stop()
			testenv.Eventually(t, 5*time.Second, "the stopped work process gone from the overview", func() bool {
				return slices.Equal(roles(reader.overview()), []string{"serve 101", "serve 102"})
			})
		}
	})
}
