package feedtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// notifyWait bounds how long the suite waits for a message that should
// arrive, and quiet how long it listens for one that should not.
const (
	notifyWait  = 5 * time.Second
	notifyQuiet = 300 * time.Millisecond
)

// TestNotifier runs the behavioural suite of feed.Notifier against the
// implementation newNotifier builds: a fresh one per subtest, whose
// channels no other test uses (a key prefix of its own), cleaning up
// after itself.
func TestNotifier(t *testing.T, newNotifier func(t *testing.T) feed.Notifier) {
	t.Helper()

	t.Run("a subscription receives its authors' messages only", func(t *testing.T) {
		n := newNotifier(t)
		s := subscribe(t, n, 1, 2)
		waitSubscribed(t, n, s, 1)
		waitSubscribed(t, n, s, 2)
		notify(t, n, 3, "three") // not listened to
		notify(t, n, 2, "two")
		notify(t, n, 1, "one")
		// Order holds within a channel only: on a Cluster, channels of
		// different shards arrive on different connections.
		got := map[string]int64{}
		for range 2 {
			m := receive(t, s)
			got[string(m.Msg)] = m.Author
		}
		if got["one"] != 1 || got["two"] != 2 || len(got) != 2 {
			t.Fatalf("received %v; want one from 1 and two from 2", got)
		}
		expectNone(t, s)
	})

	t.Run("messages of one channel keep their order", func(t *testing.T) {
		n := newNotifier(t)
		s := subscribe(t, n, 7)
		waitSubscribed(t, n, s, 7)
		for i := range 50 {
			notify(t, n, 7, fmt.Sprint(i))
		}
		for i := range 50 {
			expect(t, s, feed.Notification{Author: 7, Msg: []byte(fmt.Sprint(i))})
		}
	})

	t.Run("every subscription to a channel gets each message", func(t *testing.T) {
		n := newNotifier(t)
		a, b := subscribe(t, n, 5), subscribe(t, n, 5, 6)
		waitSubscribed(t, n, a, 5)
		waitSubscribed(t, n, b, 5)
		drainProbes(a) // b's probes reached a too
		notify(t, n, 5, "hello")
		expect(t, a, feed.Notification{Author: 5, Msg: []byte("hello")})
		expect(t, b, feed.Notification{Author: 5, Msg: []byte("hello")})
	})

	t.Run("authors in many groups", func(t *testing.T) {
		// Enough authors to spread over every shard of a Cluster.
		n := newNotifier(t)
		authors := make([]int64, 40)
		for i := range authors {
			authors[i] = int64(1000 + i*7919)
		}
		s := subscribe(t, n, authors...)
		for _, a := range authors {
			waitSubscribed(t, n, s, a)
		}
		for _, a := range authors {
			notify(t, n, a, "x")
		}
		got := map[int64]bool{}
		for range authors {
			m := receive(t, s)
			got[m.Author] = true
		}
		if len(got) != len(authors) {
			t.Errorf("messages came from %d authors; want %d", len(got), len(authors))
		}
	})

	t.Run("remove stops a channel, others go on", func(t *testing.T) {
		n := newNotifier(t)
		s := subscribe(t, n, 1, 2)
		waitSubscribed(t, n, s, 1)
		waitSubscribed(t, n, s, 2)
		if err := s.Remove(t.Context(), 1); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		// A server applies the removal a moment after Remove returns;
		// notifyQuiet is ample for it.
		time.Sleep(notifyQuiet)
		notify(t, n, 1, "gone")
		notify(t, n, 2, "here")
		expect(t, s, feed.Notification{Author: 2, Msg: []byte("here")})
		expectNone(t, s)
	})

	t.Run("a channel removed and added again delivers", func(t *testing.T) {
		// The subscription's connections may close when their last
		// channel goes; C stays open and the next Add listens again.
		n := newNotifier(t)
		s := subscribe(t, n, 1)
		waitSubscribed(t, n, s, 1)
		if err := s.Remove(t.Context(), 1); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if err := s.Add(t.Context(), 1); err != nil {
			t.Fatalf("Add again: %v", err)
		}
		waitSubscribed(t, n, s, 1)
		notify(t, n, 1, "again")
		expect(t, s, feed.Notification{Author: 1, Msg: []byte("again")})
		expectNone(t, s)
	})

	t.Run("close closes C and stops delivery", func(t *testing.T) {
		n := newNotifier(t)
		s := n.Subscribe()
		if err := s.Add(t.Context(), 9); err != nil {
			t.Fatalf("Add: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		notify(t, n, 9, "late")
		select {
		case m, ok := <-s.C():
			if ok {
				t.Fatalf("received %+v after Close; want C closed", m)
			}
		case <-time.After(notifyWait):
			t.Fatal("C not closed after Close")
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})

	t.Run("notify with no subscriber", func(t *testing.T) {
		n := newNotifier(t)
		notify(t, n, 42, "nobody")
	})
}

func subscribe(t *testing.T, n feed.Notifier, authors ...int64) feed.Subscription {
	t.Helper()
	s := n.Subscribe()
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Add(t.Context(), authors...); err != nil {
		t.Fatalf("Add(%v): %v", authors, err)
	}
	return s
}

func notify(t *testing.T, n feed.Notifier, author int64, msg string) {
	t.Helper()
	if err := n.Notify(t.Context(), author, []byte(msg)); err != nil {
		t.Fatalf("Notify(%d, %q): %v", author, msg, err)
	}
}

// waitSubscribed sends probes on author's channel until s receives one,
// then drains the probes: a subscription to a server takes effect when
// the server has read the command, a moment after Add returns.
func waitSubscribed(t *testing.T, n feed.Notifier, s feed.Subscription, author int64) {
	t.Helper()
	deadline := time.Now().Add(notifyWait)
	for time.Now().Before(deadline) {
		notify(t, n, author, "probe")
		select {
		case m := <-s.C():
			if m.Author == author && string(m.Msg) == "probe" {
				// Later probes may still be in flight: let them land and
				// drop them.
				time.Sleep(50 * time.Millisecond)
				drainProbes(s)
				return
			}
			t.Fatalf("while waiting for a probe on %d: received %+v", author, m)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("no probe on author %d's channel arrived within %s", author, notifyWait)
}

func drainProbes(s feed.Subscription) {
	for {
		select {
		case m := <-s.C():
			if string(m.Msg) != "probe" {
				panic(fmt.Sprintf("feedtest: drained a non-probe message %+v", m))
			}
		default:
			return
		}
	}
}

func receive(t *testing.T, s feed.Subscription) feed.Notification {
	t.Helper()
	select {
	case m, ok := <-s.C():
		if !ok {
			t.Fatal("C closed; want a message")
		}
		return m
	case <-time.After(notifyWait):
		t.Fatalf("no message within %s", notifyWait)
	}
	return feed.Notification{}
}

func expect(t *testing.T, s feed.Subscription, want feed.Notification) {
	t.Helper()
	got := receive(t, s)
	if got.Author != want.Author || string(got.Msg) != string(want.Msg) {
		t.Fatalf("received {%d %q}; want {%d %q}", got.Author, got.Msg, want.Author, want.Msg)
	}
}

func expectNone(t *testing.T, s feed.Subscription) {
	t.Helper()
	select {
	case m := <-s.C():
		t.Fatalf("received {%d %q}; want nothing", m.Author, m.Msg)
	case <-time.After(notifyQuiet):
	}
}
