package relay

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemqueue"
	"github.com/feedd/feedd/internal/sqlstore"
)

// TestRelayBackPressure: while the posts queue is deeper than MaxPending
// the relay leaves the backlog in the outbox (on disk) instead of piling
// it into the broker; once consumers drain the queue it relays again.
func TestRelayBackPressure(t *testing.T) {
	ctx := context.Background()
	store, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "feedd.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	q := inmemqueue.New()
	defer q.Close()

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
