package likes

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// flakyStore fails its first failures batches, then records the rest.
type flakyStore struct {
	failures atomic.Int64
	mu       sync.Mutex
	batches  [][]feed.LikeEvent
}

func (s *flakyStore) ApplyLikes(ctx context.Context, evs []feed.LikeEvent) (feed.LikesWritten, error) {
	if s.failures.Add(-1) >= 0 {
		return feed.LikesWritten{}, errors.New("database restarting")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, evs)
	return feed.LikesWritten{Writes: 2}, nil
}

func ev(user int64) feed.LikeEvent {
	return feed.LikeEvent{User: user, Post: 1, Liked: true, Version: 1}
}

// TestWriterRetries: a failed batch is retried while its callers wait, so
// a short database outage costs no delivery attempt.
func TestWriterRetries(t *testing.T) {
	st := &flakyStore{}
	st.failures.Store(3)
	w := NewWriter(slog.New(slog.DiscardHandler), WriterConfig{Linger: 20 * time.Millisecond, RetryFor: time.Minute}, st, nil)
	var wg sync.WaitGroup
	for u := range int64(10) {
		wg.Go(func() {
			if err := w.Submit(t.Context(), ev(u+1)); err != nil {
				t.Errorf("submit: %v; want success after the retries", err)
			}
		})
	}
	wg.Wait()
	var n int
	for _, b := range st.batches {
		n += len(b)
	}
	if n != 10 {
		t.Errorf("%d events written; want 10", n)
	}
}

// TestWriterStopsRetrying: closing Done ends the retries at once, and the
// callers get the error (a broker then redelivers).
func TestWriterStopsRetrying(t *testing.T) {
	st := &flakyStore{}
	st.failures.Store(1 << 40)
	done := make(chan struct{})
	w := NewWriter(slog.New(slog.DiscardHandler), WriterConfig{Linger: time.Millisecond, RetryFor: time.Hour, Done: done}, st, nil)
	errc := make(chan error, 1)
	go func() { errc <- w.Submit(t.Context(), ev(1)) }()
	time.Sleep(300 * time.Millisecond)
	close(done)
	select {
	case err := <-errc:
		if err == nil {
			t.Error("submit succeeded against a database that always fails")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("submit still waiting 5s after Done closed")
	}
}

// TestWriterBatches: events that arrive within the linger share a batch;
// a full batch leaves at once.
func TestWriterBatches(t *testing.T) {
	st := &flakyStore{}
	w := NewWriter(slog.New(slog.DiscardHandler), WriterConfig{MaxBatch: 50, Linger: 300 * time.Millisecond}, st, nil)
	var wg sync.WaitGroup
	start := time.Now()
	for u := range int64(120) {
		wg.Go(func() { _ = w.Submit(t.Context(), ev(u+1)) })
	}
	wg.Wait()
	if len(st.batches) > 4 {
		t.Errorf("120 events in %d batches; want at most 4 (two full, then the rest)", len(st.batches))
	}
	for _, b := range st.batches {
		if len(b) > 120 {
			t.Errorf("batch of %d", len(b))
		}
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %v", el)
	}
}
