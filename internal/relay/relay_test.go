package relay

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemqueue"
	"github.com/feedd/feedd/internal/sqlstore"
)

// newOutbox returns a migrated SQLite store and an in-process queue,
// closed when t ends.
func newOutbox(t *testing.T) (*sqlstore.Store, *inmemqueue.Queue) {
	t.Helper()
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "feedd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	q := inmemqueue.New()
	t.Cleanup(func() { q.Close() })
	return store, q
}

// TestRelayBackPressure: while the posts queue is deeper than MaxPending
// the relay leaves the backlog in the outbox (on disk) instead of piling
// it into the broker; once consumers drain the queue it relays again.
func TestRelayBackPressure(t *testing.T) {
	ctx := context.Background()
	store, q := newOutbox(t)

	// The dispatchers are behind: 10 messages wait, the bound is 5.
	for range 10 {
		if err := q.Publish(ctx, feed.QueuePosts, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	ids := feed.NewIDGen(nil)
	for i := range 3 {
		id := ids.Next()
		if _, _, err := store.CreatePost(ctx, feed.Post{ID: id, AuthorID: 1, Content: "p", CreatedAt: feed.IDTime(id)}, feed.Idempotency{}); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	r := New(slog.New(slog.DiscardHandler), Config{Workers: 1, Poll: 5 * time.Millisecond, MaxPending: 5, DepthEvery: 5 * time.Millisecond}, store, q, nil)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(runCtx) }()
	defer func() { stop(); <-done }()

	time.Sleep(200 * time.Millisecond)
	if n, _ := store.OutboxBacklog(ctx); n != 3 {
		t.Fatalf("outbox backlog %d while the queue is over its bound; want 3 (nothing relayed)", n)
	}
	if n, _ := q.Pending(ctx, feed.QueuePosts); n != 10 {
		t.Fatalf("queue depth %d; want 10 (nothing added)", n)
	}

	// The dispatchers catch up: the relay resumes.
	cctx, cstop := context.WithCancel(ctx)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		_ = q.Consume(cctx, feed.QueuePosts, feed.ConsumeOptions{Concurrency: 2}, func(context.Context, feed.Delivery) error { return nil })
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, _ := store.OutboxBacklog(ctx)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox backlog still %d after the queue drained", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cstop()
	<-consumed
}

// failingPublisher refuses every publish: the broker is away.
type failingPublisher struct{ feed.Publisher }

func (failingPublisher) Publish(context.Context, string, ...[]byte) error {
	return errors.New("broker away")
}

// TestRelayAnnounces: each post the broker confirmed is announced to the
// live streams once its batch is marked sent, without waiting for a
// dispatcher to take the event up; a post the broker did not confirm is
// not (it stays in the outbox, and is announced when relayed).
func TestRelayAnnounces(t *testing.T) {
	ctx := context.Background()
	store, q := newOutbox(t)
	ids := feed.NewIDGen(nil)
	var want []int64
	for range 3 {
		id := ids.Next()
		if _, _, err := store.CreatePost(ctx, feed.Post{ID: id, AuthorID: 7, Content: "p", CreatedAt: feed.IDTime(id)}, feed.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	var got []int64
	announce := func(ctx context.Context, author, post int64) error {
		if author != 7 {
			t.Errorf("announced post %d of %d; want author 7", post, author)
		}
		got = append(got, post)
		return nil
	}
	down := New(slog.New(slog.DiscardHandler), Config{Announce: postCreated(announce)}, store, failingPublisher{}, nil)
	if _, err := down.Once(ctx); err == nil {
		t.Fatal("Once with the broker away: no error")
	}
	if len(got) != 0 {
		t.Fatalf("announced %v before the broker confirmed", got)
	}
	r := New(slog.New(slog.DiscardHandler), Config{Announce: postCreated(announce)}, store, q, nil)
	if n, err := r.Once(ctx); err != nil || n != 3 {
		t.Fatalf("Once: %d, %v; want 3 relayed", n, err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("announced %v; want %v", got, want)
	}
}

// TestRelayOutlivesItsAnnouncements: with the streams' backend hanging (a
// Redis outage), the relay still relays: a batch's announcements give up
// within announceBudget, at the first failure, and every event is sent.
func TestRelayOutlivesItsAnnouncements(t *testing.T) {
	ctx := context.Background()
	store, q := newOutbox(t)
	ids := feed.NewIDGen(nil)
	for range 5 {
		id := ids.Next()
		if _, _, err := store.CreatePost(ctx, feed.Post{ID: id, AuthorID: 7, Content: "p", CreatedAt: feed.IDTime(id)}, feed.Idempotency{}); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	hang := func(ctx context.Context, author, post int64) error {
		calls++
		<-ctx.Done() // an unreachable backend answers nothing
		return ctx.Err()
	}
	r := New(slog.New(slog.DiscardHandler), Config{Announce: postCreated(hang)}, store, q, nil)
	start := time.Now()
	if n, err := r.Once(ctx); err != nil || n != 5 {
		t.Fatalf("Once: %d, %v; want 5 relayed", n, err)
	}
	if took := time.Since(start); took > 10*announceBudget {
		t.Errorf("Once took %v with the announcements hanging; want about announceBudget (%v)", took, announceBudget)
	}
	if calls != 1 {
		t.Errorf("%d announcements tried; want 1: the first failure ends the batch's", calls)
	}
	if n, err := store.OutboxBacklog(ctx); err != nil || n != 0 {
		t.Errorf("outbox backlog %d, %v; want 0", n, err)
	}
}

// postCreated is a feed.Announcer that hands PostCreated to f and takes
// nothing else.
type postCreated func(ctx context.Context, author, post int64) error

func (f postCreated) PostCreated(ctx context.Context, author, post int64) error {
	return f(ctx, author, post)
}
func (postCreated) PostEdited(context.Context, int64, int64, int64) error { return nil }
func (postCreated) PostDeleted(context.Context, int64, int64) error       { return nil }
func (postCreated) FollowsChanged(context.Context, int64) error           { return nil }
func (postCreated) TokensChanged(context.Context, int64) error            { return nil }
