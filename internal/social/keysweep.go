package social

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// KeySweeper is the store side of KeySweep.
type KeySweeper interface {
	// SweepIdempotencyKeys deletes the keys expired at now, in small
	// batches, and returns how many it deleted.
	SweepIdempotencyKeys(ctx context.Context, now time.Time) (int64, error)
}

// MaxKeySweepEvery is the longest pause between two sweeps of expired
// idempotency keys; with a shorter TTL they run once per TTL.
const MaxKeySweepEvery = 10 * time.Minute

// KeySweep deletes expired idempotency keys now and then. An expired key
// already counts as new to Publish; the sweep only gives the space back,
// so it runs in the work role, off the request path. Several processes
// may sweep at once: each batch re-checks the expiry it deletes by.
// ("Purge" is an account deletion's; this is not one.)
type KeySweep struct {
	store  KeySweeper
	every  time.Duration
	logger *slog.Logger
	swept  prometheus.Counter
}

// NewKeySweep returns a sweep that runs every min(ttl, MaxKeySweepEvery),
// ttl being the keys' (Config.IdempotencyTTL); reg may be nil.
func NewKeySweep(logger *slog.Logger, store KeySweeper, ttl time.Duration, reg prometheus.Registerer) *KeySweep {
	k := &KeySweep{
		store: store, every: min(max(ttl, time.Second), MaxKeySweepEvery),
		logger: logger.With("component", "idempotency-sweep"),
		// The metric keeps its name, which dashboards scrape.
		swept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_idempotency_keys_purged_total", Help: "Expired idempotency keys deleted from SQL.",
		}),
	}
	if reg != nil {
		reg.MustRegister(k.swept)
	}
	return k
}

// Run sweeps at once and then every interval until ctx is done.
func (k *KeySweep) Run(ctx context.Context) {
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		n, err := k.store.SweepIdempotencyKeys(ctx, time.Now())
		k.swept.Add(float64(n))
		switch {
		case err != nil && ctx.Err() == nil:
			k.logger.Warn("sweeping expired idempotency keys failed; retrying at the next round", "err", err, "swept", n)
		case n > 0:
			k.logger.Debug("swept expired idempotency keys", "n", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
