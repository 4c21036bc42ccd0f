package main

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/freshness"
	"github.com/feedd/feedd/internal/httpapi"
	"github.com/feedd/feedd/internal/sqlstore"
)

// watchReplicas runs, until ctx ends, the heartbeat of each of d's stores
// that reads from a replica (sqlstore.Store.WatchReplica: it decides which
// reads the replica takes), and registers the replica's lag as the
// metrics feedd_sql_replica_lag_seconds and feedd_sql_replica_up.
func watchReplicas(ctx context.Context, cfg config, d *deps, logger *slog.Logger, work *sync.WaitGroup) {
	logger = logger.With("component", "replica")
	var stores []*sqlstore.Store
	for _, s := range distinct(append(databases(d.store), databases(d.workStore)...)) {
		if s.HasReplica() {
			stores = append(stores, s)
		}
	}
	if len(stores) == 0 {
		return
	}
	for _, s := range stores {
		work.Go(func() { s.WatchReplica(ctx, cfg.replicaMaxLag, logger) })
	}
	// The API's store, whose replica the users' reads go to (logical
	// shards are opened without replicas).
	s := stores[0]
	d.register().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "feedd_sql_replica_lag_seconds",
		Help: "How far the SQL read replica is behind the primary, as the process's heartbeat through it measured; while it does not answer, the time since it last did.",
	}, func() float64 { lag, _ := s.ReplicaLag(); return lag.Seconds() }))
	d.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "feedd_sql_replica_up",
		Help: "1 while the SQL read replica answers the heartbeat within FEEDD_REPLICA_MAX_LAG and takes reads; 0 while they go to the primary.",
	}, func() float64 {
		if lag, ok := s.ReplicaLag(); ok && lag <= cfg.replicaMaxLag {
			return 1
		}
		return 0
	}))
}

// writeMarks returns what keeps each user's reads as fresh as that
// user's writes when the API's store reads from a replica: marks in Redis
// through client, shared by every process, or in memory without Redis
// (one process). Nil without a replica: every read sees every write.
func writeMarks(cfg config, store truth, client redis.UniversalClient, logger *slog.Logger) httpapi.Freshness {
	if !slices.ContainsFunc(databases(store), (*sqlstore.Store).HasReplica) {
		return nil
	}
	return freshness.New(client, cfg.redisPrefix, cfg.replicaMaxLag, logger)
}
