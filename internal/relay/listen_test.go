package relay

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/inmemqueue"
	"github.com/feedd/feedd/internal/rabbit"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// newPostgresOutbox returns a migrated store on a fresh PostgreSQL
// database with user 1 in it, and a second store on the database (the
// process that posts), both closed when tb ends.
func newPostgresOutbox(tb testing.TB) (store, poster *sqlstore.Store) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	probe, err := sqlstore.OpenPostgres(ctx, testenv.PostgresDSN())
	if err != nil {
		feedtest.Missing(tb, "PostgreSQL is unreachable (%v): start it or set FEEDD_TEST_POSTGRES_DSN", err)
	}
	probe.Close()
	dsn := testenv.CreatePostgresDatabase(tb, "feedd_relay_")
	for _, s := range []**sqlstore.Store{&store, &poster} {
		if *s, err = sqlstore.OpenPostgres(ctx, dsn); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { (*s).Close() })
	}
	if err := store.Migrate(ctx); err != nil {
		tb.Fatal(err)
	}
	if _, err := store.CreateUser(ctx, feed.User{ID: 1, Name: "author"}); err != nil {
		tb.Fatal(err)
	}
	return store, poster
}

// runWaker runs a Waker on n until tb ends.
func runWaker(tb testing.TB, n Notifier) *Waker {
	w := NewWaker(slog.New(slog.DiscardHandler), n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	return w
}

// confirmed is a Publisher that notes, by post id, when the relay
// published each post's event and when pub confirmed it.
type confirmed struct {
	pub    feed.Publisher
	mu     sync.Mutex
	called map[int64]time.Time
	at     map[int64]time.Time
}

func newConfirmed(pub feed.Publisher) *confirmed {
	return &confirmed{pub: pub, called: map[int64]time.Time{}, at: map[int64]time.Time{}}
}

func (c *confirmed) Publish(ctx context.Context, queue string, bodies ...[]byte) error {
	c.note(c.called, bodies)
	if err := c.pub.Publish(ctx, queue, bodies...); err != nil {
		return err
	}
	c.note(c.at, bodies)
	return nil
}

func (c *confirmed) note(m map[int64]time.Time, bodies [][]byte) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range bodies {
		if ev, err := feed.DecodeEvent(b); err == nil {
			m[ev.PostID] = now
		}
	}
}

// wait returns when post's event was published and confirmed, waiting
// up to d for the confirm.
func (c *confirmed) wait(post int64, d time.Duration) (called, at time.Time, ok bool) {
	deadline := time.Now().Add(d)
	for {
		c.mu.Lock()
		called, at = c.called[post], c.at[post]
		_, ok = c.at[post]
		c.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return called, at, ok
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// post creates post id by user 1 and returns when it committed, then
// asks w to wake the relays, as the API does.
func post(tb testing.TB, store *sqlstore.Store, w *Waker, id int64) time.Time {
	tb.Helper()
	if _, _, err := store.CreatePost(context.Background(), feed.Post{ID: id, AuthorID: 1, Content: "p", CreatedAt: time.Now()}, feed.Idempotency{}); err != nil {
		tb.Fatalf("post %d: %v", id, err)
	}
	committed := time.Now()
	w.Notify()
	return committed
}

// listenerPID waits for the outbox listener's session on store's
// database, other than not, and returns its pid.
func listenerPID(tb testing.TB, store *sqlstore.Store, not int) int {
	tb.Helper()
	var pid int
	testenv.Eventually(tb, 5*time.Second, "the relay listens", func() bool {
		err := store.DB().QueryRowContext(context.Background(),
			"SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = ? AND pid <> ?",
			"feedd outbox listener", not).Scan(&pid)
		return err == nil
	})
	return pid
}

// poll is how long the relays of these tests wait between polls: far
// longer than a notified relay may take.
const poll = 10 * time.Second

// TestRelayWokenByNotify: on PostgreSQL a post written by another process
// reaches the broker as it commits, well before the relay's poll, also
// right after the listener's session was cut (the relay listens again and
// relays what it missed).
func TestRelayWokenByNotify(t *testing.T) {
	store, poster := newPostgresOutbox(t)
	w := runWaker(t, poster)
	q := inmemqueue.New()
	t.Cleanup(func() { q.Close() })
	pub := newConfirmed(q)
	r := New(slog.New(slog.DiscardHandler), Config{Workers: 1, Poll: poll}, store, pub, nil)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { stop(); <-done }()

	within := func(id int64, committed time.Time, what string) {
		t.Helper()
		_, at, ok := pub.wait(id, poll/4)
		if !ok {
			t.Fatalf("post %d (%s) not published %v after its commit; the poll is %v", id, what, poll/4, poll)
		}
		t.Logf("post %d (%s) published %v after its commit", id, what, at.Sub(committed))
	}
	pid := listenerPID(t, store, 0)
	within(1, post(t, poster, w, 1), "the relay idle")
	within(2, post(t, poster, w, 2), "the next one")

	// The server ends the listener's session; the post committed before
	// the relay listens again is relayed when it does.
	var ok bool
	if err := store.DB().QueryRowContext(ctx, "SELECT pg_terminate_backend(?)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the listener: got %v, %v; want true", ok, err)
	}
	within(3, post(t, poster, w, 3), "the listener's session just ended")
	listenerPID(t, store, pid)
	within(4, post(t, poster, w, 4), "listening again")

	stop()
	<-done
	// The server notes a closed session a moment after the client closed
	// it: the session must go, within a few seconds.
	var n int
	var err error
	testenv.Eventually(t, 5*time.Second, "no listener session after the relay stopped", func() bool {
		err = store.DB().QueryRowContext(context.Background(),
			"SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?",
			"feedd outbox listener").Scan(&n)
		return err == nil && n == 0
	})
}

// BenchmarkRelayLatency measures how long a post waits between its commit
// (CreatePost returned) and the relay's publish of its event (publish-ms)
// and the broker's confirm of it (confirm-ms), on PostgreSQL and the
// machine's RabbitMQ, one post at a time on an idle relay with the default
// poll, the post written on another store (the API's process) with a
// Waker: "poll" relays when the poll comes round, "notify" when
// PostgreSQL tells it of the Waker's NOTIFY.
//
//	go test -run '^$' -bench BenchmarkRelayLatency -benchtime 400x ./internal/relay
func BenchmarkRelayLatency(b *testing.B) {
	store, poster := newPostgresOutbox(b)
	w := runWaker(b, poster)
	prefix := "bench" + testenv.RandHex(4) + "."
	broker, err := rabbit.Dial(b.Context(), testenv.AMQPURL(), rabbit.Options{Prefix: prefix}, nil)
	if err != nil {
		feedtest.Missing(b, "RabbitMQ is unreachable (%v): start it or set FEEDD_TEST_AMQP_URL", err)
	}
	b.Cleanup(func() {
		broker.Close()
		testenv.DeleteQueues(b, testenv.AMQPURL(), prefix)
	})
	var id int64
	for _, bc := range []struct {
		name   string
		outbox Outbox
	}{
		{"poll", pollOnly{store}},
		{"notify", store},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pub := newConfirmed(broker)
			r := New(slog.New(slog.DiscardHandler), Config{}, bc.outbox, pub, nil)
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = r.Run(ctx) }()
			defer func() { stop(); <-done }()
			// The first publish declares the queue: not measured.
			id++
			post(b, poster, w, id)
			if _, _, ok := pub.wait(id, 5*time.Second); !ok {
				b.Fatalf("post %d not published within 5 s", id)
			}
			var woken, lat []time.Duration
			for b.Loop() {
				id++
				committed := post(b, poster, w, id)
				called, at, ok := pub.wait(id, 5*time.Second)
				if !ok {
					b.Fatalf("post %d not published within 5 s", id)
				}
				woken = append(woken, called.Sub(committed))
				lat = append(lat, at.Sub(committed))
				// Posts come at random moments of the poll's cycle.
				time.Sleep(rand.N(DefaultPoll))
			}
			slices.Sort(woken)
			slices.Sort(lat)
			q := func(d []time.Duration, p float64) float64 {
				return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(q(woken, 0.50), "publish-ms-p50")
			b.ReportMetric(q(woken, 0.99), "publish-ms-p99")
			b.ReportMetric(q(lat, 0.50), "confirm-ms-p50")
			b.ReportMetric(q(lat, 0.99), "confirm-ms-p99")
		})
	}
}

// pollOnly is store without its notifications: the relay polls.
type pollOnly struct{ s *sqlstore.Store }

func (p pollOnly) RelayOutbox(ctx context.Context, n int, publish func(context.Context, []feed.OutboxEvent) error) (int, error) {
	return p.s.RelayOutbox(ctx, n, publish)
}
func (p pollOnly) SweepOutbox(ctx context.Context, sentBefore time.Time) (int64, error) {
	return p.s.SweepOutbox(ctx, sentBefore)
}
func (p pollOnly) OutboxBacklog(ctx context.Context) (int64, error) { return p.s.OutboxBacklog(ctx) }
