package social

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// keySweeper hands out results one sweep at a time (a negative one fails)
// and records when it ran.
type keySweeper struct {
	mu      sync.Mutex
	results []int64
	calls   chan time.Time
}

func (p *keySweeper) SweepIdempotencyKeys(ctx context.Context, now time.Time) (int64, error) {
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

// TestKeySweep: the sweep runs at once, then every TTL (here), counts
// what it deleted, carries on after a failure, and stops with its context.
func TestKeySweep(t *testing.T) {
	p := &keySweeper{results: []int64{1500, -1, 7}, calls: make(chan time.Time, 10)}
	reg := prometheus.NewRegistry()
	k := NewKeySweep(slog.New(slog.DiscardHandler), p, time.Second, reg)
	if k.every != time.Second {
		t.Fatalf("every = %s; want the TTL, 1s", k.every)
	}
	if long := NewKeySweep(slog.New(slog.DiscardHandler), p, 24*time.Hour, nil); long.every != MaxKeySweepEvery {
		t.Fatalf("every with a day's TTL = %s; want %s", long.every, MaxKeySweepEvery)
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
		t.Fatalf("registry: got %v, %v; want the sweep counter", mfs, err)
	}
	if got := mfs[0].GetMetric()[0].GetCounter().GetValue(); got != 1507 {
		t.Fatalf("feedd_idempotency_keys_purged_total = %v; want 1507", got)
	}
}
