package main

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/relay"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
)

// relays are a work process's outbox relays, one per database: each
// logical shard has an outbox of its own, written in the transaction of
// the post it announces. Every work process runs one on every shard; the
// store hands each a disjoint set of rows (FOR UPDATE SKIP LOCKED), so
// they never publish an event twice between them.
type relays []*relay.Relay

// newRelays returns a relay per database of store. On shards the
// -relay-workers loops of the process are shared out among them, at
// least one each, and each relay's metrics carry its shard as a label.
func newRelays(logger *slog.Logger, cfg relay.Config, store truth, pub feed.Publisher, reg prometheus.Registerer) relays {
	if db, one := store.(*sqlstore.Store); one {
		return relays{relay.New(logger, cfg, db, pub, reg)}
	}
	s := store.(*shards.Store)
	cfg.Workers = max(1, cfg.Workers/s.N())
	rs := make(relays, s.N())
	for k := range rs {
		// Outbox(k), not Shard(k): the relay follows the shard when
		// feedd shards move moves it.
		labels := prometheus.Labels{"shard": strconv.Itoa(k)}
		rs[k] = relay.New(logger.With("shard", k), cfg, s.Outbox(k), pub, prometheus.WrapRegistererWith(labels, reg))
	}
	return rs
}

// Notify wakes every relay: a publish hook does not say which shard the
// post went to, and a wake-up costs a relay one look at its outbox.
func (rs relays) Notify() {
	for _, r := range rs {
		r.Notify()
	}
}

// Run runs every relay until ctx is done.
func (rs relays) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() { _ = r.Run(ctx) })
	}
	wg.Wait()
}

// watchShards runs, until ctx ends, for each of d's sharded stores: the
// ping of every shard (shards.Store.Watch), so that a dead shard is known
// before a reader asks it and its return is seen without waiting for a
// call; the watch of moves (WatchMoves), so that a process that only
// reads a moved shard follows it within a second; and in a work process
// the repairer of the mirrors a crash left behind (RunSyncs).
func watchShards(ctx context.Context, d *deps, runWork bool, logger *slog.Logger, work *sync.WaitGroup) {
	stores := []truth{d.store}
	if d.workStore != d.store {
		stores = append(stores, d.workStore)
	}
	for _, store := range stores {
		if s, ok := store.(*shards.Store); ok {
			work.Go(func() { s.Watch(ctx, time.Second) })
			if store == d.store {
				registerShardHealth(d, s)
			}
			work.Go(func() { s.WatchMoves(ctx, time.Second) })
			if runWork && store == d.workStore {
				work.Go(func() { s.RunSyncs(ctx, time.Second, logger) })
			}
		}
	}
}

// registerShardHealth exports whether each of s's shards answers, as
// feedd_sql_shard_up{shard}; the heartbeat carries the shards down to
// the ops console.
func registerShardHealth(d *deps, s *shards.Store) {
	d.register().MustRegister(shardHealth{s})
}

type shardHealth struct{ s *shards.Store }

var shardUpDesc = prometheus.NewDesc("feedd_sql_shard_up",
	"1 while the logical SQL shard answers (its last call or its ping each second succeeded), 0 while its server is down: feeds are then served without its users' posts, marked degraded.",
	[]string{"shard"}, nil)

func (h shardHealth) Describe(ch chan<- *prometheus.Desc) { ch <- shardUpDesc }

func (h shardHealth) Collect(ch chan<- prometheus.Metric) {
	for k := range h.s.N() {
		up := 0.0
		if h.s.Up(k) {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(shardUpDesc, prometheus.GaugeValue, up, strconv.Itoa(k))
	}
}
