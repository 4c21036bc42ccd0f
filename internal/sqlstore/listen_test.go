package sqlstore

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/relay"
)

// wakeBound is how soon after a commit the listener must wake: a
// notification is one packet on a loopback connection, the bound leaves
// room for a loaded machine.
const wakeBound = 2 * time.Second

// listening is a ListenOutbox running until the test ends: its wakes
// arrive on wakes; done is closed when it returns err.
type listening struct {
	wakes <-chan struct{}
	done  <-chan struct{}
	err   error
}

func listen(t *testing.T, s *Store) *listening {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wakes := make(chan struct{}, 16)
	done := make(chan struct{})
	l := &listening{wakes: wakes, done: done}
	go func() {
		defer close(done)
		l.err = s.ListenOutbox(ctx, func() {
			select {
			case wakes <- struct{}{}:
			default:
				t.Error("more than 16 wakes waiting: the test should have read them")
			}
		})
	}()
	t.Cleanup(func() {
		select {
		case <-done:
			return // ended before, which the test checked
		default:
		}
		cancel()
		select {
		case <-done:
			if l.err != nil {
				t.Errorf("ListenOutbox after its context ended: got %v; want nil", l.err)
			}
		case <-time.After(5 * time.Second):
			t.Error("ListenOutbox still runs 5 s after its context ended")
		}
	})
	return l
}

func waitWake(t *testing.T, wakes <-chan struct{}, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-wakes:
		return time.Since(start)
	case <-time.After(wakeBound):
		t.Fatalf("no wake within %v after %s", wakeBound, what)
		return 0
	}
}

func noWake(t *testing.T, wakes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-wakes:
		t.Fatalf("a wake after %s; want none", what)
	case <-time.After(200 * time.Millisecond):
	}
}

// testListenOutbox: on PostgreSQL a relay hears NotifyOutbox from another
// process at once, and a listener whose connection is cut returns an
// error to be listened again; elsewhere both say they are unsupported.
func testListenOutbox(t *testing.T, e *env) {
	ctx := t.Context()
	db := e.newDB(t)
	s := db.open(t)
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if e.backend != "postgres" {
		err := s.ListenOutbox(ctx, func() { t.Error("wake on " + e.backend) })
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("ListenOutbox on %s: got %v; want errors.ErrUnsupported", e.backend, err)
		}
		if err := s.NotifyOutbox(ctx); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("NotifyOutbox on %s: got %v; want errors.ErrUnsupported", e.backend, err)
		}
		return
	}
	other := db.open(t) // the process that posts
	mustUsers(t, other, 1)
	l := listen(t, s)
	wakes := l.wakes
	waitWake(t, wakes, "listening (events may have committed before)")

	// The post's own transaction does not notify (see NotifyOutbox).
	mustPost(t, other, 10, 1)
	noWake(t, wakes, "a post without NotifyOutbox")
	if err := other.NotifyOutbox(ctx); err != nil {
		t.Fatalf("NotifyOutbox: %v", err)
	}
	t.Logf("woken %v after NotifyOutbox returned", waitWake(t, wakes, "NotifyOutbox"))
	noWake(t, wakes, "one NotifyOutbox")

	// The server ends the listener's session (a restart, a failover, an
	// operator): ListenOutbox returns an error instead of waiting on a
	// dead connection, so that the relay listens again.
	var n int
	if err := s.DB().QueryRowContext(ctx,
		"SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?",
		"feedd outbox listener").Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate the listener's session: got %d, %v; want 1 terminated", n, err)
	}
	select {
	case <-l.done:
		if l.err == nil {
			t.Fatal("ListenOutbox after its session was terminated: got nil; want an error")
		}
		t.Logf("ListenOutbox after its session was terminated: %v", l.err)
	case <-time.After(wakeBound):
		t.Fatalf("ListenOutbox still runs %v after its session was terminated", wakeBound)
	}

	// Listening again hears the next one.
	wakes = listen(t, s).wakes
	waitWake(t, wakes, "listening again")
	if err := other.NotifyOutbox(ctx); err != nil {
		t.Fatalf("NotifyOutbox: %v", err)
	}
	waitWake(t, wakes, "NotifyOutbox after the reconnection")
}

// BenchmarkCreatePostNotify measures what it costs posts to wake the
// relays of other processes on PostgreSQL, which chose how they do it:
// a transaction that notifies takes the server's one notification lock
// at its commit and holds it while the commit is flushed, so concurrent
// notifying commits go one at a time. notify=none is the baseline;
// notify=in-tx notifies from each post's transaction (a statement-level
// AFTER INSERT trigger on outbox, as a first design had it); notify=waker
// is what feedd does, relay.Waker's NotifyOutbox after the posts, at most
// one each 5 ms; notify=after is NotifyOutbox after each post, the
// Waker's worst case. All with a listener, 16 writers at
// once, each variant on a fresh database in the same run; posts/s counts
// CreatePost calls.
//
//	go test -run x -bench CreatePostNotify -benchtime 3s -count 2 ./internal/sqlstore/
func BenchmarkCreatePostNotify(b *testing.B) {
	newDB := setupPostgres(b)
	var id atomic.Int64
	for _, notify := range []string{"none", "waker", "in-tx", "after"} {
		b.Run("notify="+notify, func(b *testing.B) {
			ctx := b.Context()
			s := newDB(b).open(b)
			if err := s.Migrate(ctx); err != nil {
				b.Fatalf("Migrate: %v", err)
			}
			if _, err := s.CreateUser(ctx, feed.User{ID: 1, Name: "author"}); err != nil {
				b.Fatal(err)
			}
			if notify == "in-tx" {
				for _, stmt := range []string{
					"CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM pg_notify('" + outboxChannel + "', ''); RETURN NULL; END$$",
					"CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify()",
				} {
					if _, err := s.DB().ExecContext(ctx, stmt); err != nil {
						b.Fatal(err)
					}
				}
			}
			lctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = s.ListenOutbox(lctx, func() {}) }()
			defer func() { cancel(); <-done }()
			waker := relay.NewWaker(slog.New(slog.DiscardHandler), s)
			wdone := make(chan struct{})
			go func() { defer close(wdone); _ = waker.Run(lctx) }()
			defer func() { cancel(); <-wdone }()

			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := id.Add(1)
					if _, _, err := s.CreatePost(ctx, feed.Post{ID: n, AuthorID: 1, Content: "p", CreatedAt: time.Now()}, feed.Idempotency{}); err != nil {
						b.Error(err)
						return
					}
					switch notify {
					case "waker":
						waker.Notify()
					case "after":
						if err := s.NotifyOutbox(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "posts/s")
		})
	}
}
