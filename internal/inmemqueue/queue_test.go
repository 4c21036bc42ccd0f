package inmemqueue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/inmemqueue"
)

func TestQueue(t *testing.T) {
	feedtest.TestBroker(t, func(t *testing.T) feed.Broker {
		q := inmemqueue.New()
		t.Cleanup(func() { q.Close() })
		return q
	})
}

func TestRequeue(t *testing.T) {
	feedtest.TestRequeue(t, func(t *testing.T) feedtest.Requeuer {
		q := inmemqueue.New()
		t.Cleanup(func() { q.Close() })
		return q
	})
}

func TestCloseStopsConsumers(t *testing.T) {
	q := inmemqueue.New()
	ctx := t.Context()
	if err := q.Publish(ctx, "q", []byte("a"), []byte("b")); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	var handled []string
	go func() {
		done <- q.Consume(ctx, "q", feed.ConsumeOptions{}, func(ctx context.Context, d feed.Delivery) error {
			handled = append(handled, string(d.Body))
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Consume returned %v with a handler in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err == nil {
		t.Error("Consume after Close: err = nil; want an error")
	}
	if !slices.Equal(handled, []string{"a"}) {
		t.Errorf("handled %v; want [a]", handled)
	}
	if err := q.Publish(ctx, "q", []byte("c")); err == nil {
		t.Error("Publish after Close: err = nil; want an error")
	}
	if err := q.Ping(ctx); err == nil {
		t.Error("Ping after Close: err = nil; want an error")
	}
	if err := q.Consume(ctx, "q", feed.ConsumeOptions{}, nil); err == nil {
		t.Error("Consume after Close: err = nil; want an error")
	}
}

func TestPublishCopiesBodies(t *testing.T) {
	q := inmemqueue.New()
	defer q.Close()
	ctx, cancel := context.WithCancel(t.Context())
	body := []byte("a")
	if err := q.Publish(ctx, "q", body); err != nil {
		t.Fatal(err)
	}
	body[0] = 'z' // the caller reuses its buffer
	got, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, "q", feed.ConsumeOptions{}, func(ctx context.Context, d feed.Delivery) error {
			got <- string(d.Body)
			return nil
		})
	}()
	if s := <-got; s != "a" {
		t.Errorf("delivered %q; want %q", s, "a")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Consume: %v", err)
	}
}
