package timeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// KeyPurger is the store side of KeyPurge.
type KeyPurger interface {
	// PurgeIdempotencyKeys deletes the keys expired at now, in small
	// batches, and returns how many it deleted.
	PurgeIdempotencyKeys(ctx context.Context, now time.Time) (int64, error)
}

// MaxKeyPurgeEvery is the longest pause between two purges of expired
// idempotency keys; with a shorter TTL they run once per TTL.
const MaxKeyPurgeEvery = 10 * time.Minute

// KeyPurge deletes expired idempotency keys now and then. An expired key
// already counts as new to Publish; the purge only gives the space back,
// so it runs in the work role, off the request path. Several processes
// may purge at once: each batch re-checks the expiry it deletes by.
type KeyPurge struct {
	store  KeyPurger
	every  time.Duration
	logger *slog.Logger
	purged prometheus.Counter
}

// NewKeyPurge returns a purge that runs every min(ttl, MaxKeyPurgeEvery),
// ttl being the keys' (Config.IdempotencyTTL); reg may be nil.
func NewKeyPurge(logger *slog.Logger, store KeyPurger, ttl time.Duration, reg prometheus.Registerer) *KeyPurge {
	k := &KeyPurge{
		store: store, every: min(max(ttl, time.Second), MaxKeyPurgeEvery),
		logger: logger.With("component", "idempotency-purge"),
		purged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "feedd_idempotency_keys_purged_total", Help: "Expired idempotency keys deleted from SQL.",
		}),
	}
	if reg != nil {
		reg.MustRegister(k.purged)
	}
	return k
}

// Run purges at once and then every interval until ctx is done.
func (k *KeyPurge) Run(ctx context.Context) {
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		n, err := k.store.PurgeIdempotencyKeys(ctx, time.Now())
		k.purged.Add(float64(n))
		switch {
		case err != nil && ctx.Err() == nil:
			k.logger.Warn("purging expired idempotency keys failed; retrying at the next round", "err", err, "purged", n)
		case n > 0:
			k.logger.Debug("purged expired idempotency keys", "n", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
