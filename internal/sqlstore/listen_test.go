package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"
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

// testListenOutbox: on PostgreSQL a relay hears of outbox events as their
// transaction commits — once per transaction, never for one rolled back —
// and a listener whose connection is cut returns an error to be listened
// again; elsewhere ListenOutbox says it is unsupported.
func testListenOutbox(t *testing.T, e *env) {
	s := e.store(t)
	if e.backend != "postgres" {
		err := s.ListenOutbox(t.Context(), func() { t.Error("wake on " + e.backend) })
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("ListenOutbox on %s: got %v; want errors.ErrUnsupported", e.backend, err)
		}
		return
	}
	ctx := t.Context()
	mustUsers(t, s, 1)
	l := listen(t, s)
	wakes := l.wakes
	waitWake(t, wakes, "listening (events may have committed before)")

	mustPost(t, s, 10, 1)
	took := waitWake(t, wakes, "CreatePost committed")
	t.Logf("woken %v after the commit", took)
	noWake(t, wakes, "one post")

	// Several events in one transaction: one notification.
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := tx.ExecContext(ctx, "INSERT INTO outbox (payload, created_at) VALUES (?, ?)", []byte(`{}`), 1); err != nil {
			t.Fatal(err)
		}
	}
	noWake(t, wakes, "events written but not committed")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	waitWake(t, wakes, "three events committed")
	noWake(t, wakes, "one transaction")

	// A rolled-back transaction published nothing.
	tx, err = s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO outbox (payload, created_at) VALUES (?, ?)", []byte(`{}`), 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	noWake(t, wakes, "a rollback")

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

	// Listening again hears the next post.
	wakes = listen(t, s).wakes
	waitWake(t, wakes, "listening again")
	mustPost(t, s, 11, 1)
	waitWake(t, wakes, "CreatePost committed after the reconnection")
}
