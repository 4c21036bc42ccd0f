package timeline

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// purger hands out results one purge at a time (a negative one fails)
// and records when it ran.
type purger struct {
	mu      sync.Mutex
	results []int64
	calls   chan time.Time
}

func (p *purger) PurgeIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls <- now
	if len(p.results) == 0 {
		return 0, nil
	}
	n := p.results[0]
	p.results = p.results[1:]
	if n < 0 {
		return 0, errors.New("sql: gone")
	}
	return n, nil
}

// TestKeyPurge: the purge runs at once, then every TTL (here), counts
// what it deleted, carries on after a failure, and stops with its context.
func TestKeyPurge(t *testing.T) {
	p := &purger{results: []int64{1500, -1, 7}, calls: make(chan time.Time, 10)}
	reg := prometheus.NewRegistry()
	k := NewKeyPurge(slog.New(slog.DiscardHandler), p, time.Second, reg)
	if k.every != time.Second {
		t.Fatalf("every = %s; want the TTL, 1s", k.every)
	}
	if long := NewKeyPurge(slog.New(slog.DiscardHandler), p, 24*time.Hour, nil); long.every != MaxKeyPurgeEvery {
		t.Fatalf("every with a day's TTL = %s; want %s", long.every, MaxKeyPurgeEvery)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	for range 3 { // 1500, a failure, 7
		<-p.calls
	}
	cancel()
	<-done
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "feedd_idempotency_keys_purged_total" {
		t.Fatalf("registry: got %v, %v; want the purge counter", mfs, err)
	}
	if got := mfs[0].GetMetric()[0].GetCounter().GetValue(); got != 1507 {
		t.Fatalf("feedd_idempotency_keys_purged_total = %v; want 1507", got)
	}
}
