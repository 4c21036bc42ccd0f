package main

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/relay"
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
	if db, one := any(store).(*sqlstore.Store); one { // any: see routed
		return relays{relay.New(logger, cfg, db, pub, reg)}
	}
	dbs := databases(store)
	cfg.Workers = max(1, cfg.Workers/len(dbs))
	rs := make(relays, len(dbs))
	for k, db := range dbs {
		shard := strconv.Itoa(k)
		rs[k] = relay.New(logger.With("shard", k), cfg, db, pub, prometheus.WrapRegistererWith(prometheus.Labels{"shard": shard}, reg))
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

// notifyAll is relay.Notifier over every database of a store: a serving
// process that runs no relay wakes the work processes' relays of every
// shard after a publish (PostgreSQL's NOTIFY; MySQL cannot, and its
// relays find the post at their poll).
type notifyAll []*sqlstore.Store

func (n notifyAll) NotifyOutbox(ctx context.Context) error {
	var errs []error
	unsupported := 0
	for _, db := range n {
		err := db.NotifyOutbox(ctx)
		if errors.Is(err, errors.ErrUnsupported) {
			unsupported++
			continue
		}
		errs = append(errs, err)
	}
	if unsupported == len(n) {
		return errors.ErrUnsupported
	}
	return errors.Join(errs...)
}
