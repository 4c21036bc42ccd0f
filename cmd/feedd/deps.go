package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/httpapi"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/inmemqueue"
	"github.com/feedd/feedd/internal/rabbit"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/social"
	"github.com/feedd/feedd/internal/sqlstore"
)

// authorListMax is how many post ids a pulled author's list keeps: under
// Redis's listpack limit of 128 entries, so each list stays compact.
const authorListMax = 100

// deps are the backends one process talks to.
type deps struct {
	// store is the API's: on a SQL server its own write and read pools
	// (on shards, each shard's share of them).
	store truth
	// workStore is the relay's, the dispatcher's and the workers' (a
	// bulkhead: a slow fan-out cannot take the API's connections). On
	// SQLite it is store: the file has one writer anyway, and readers
	// never wait for it.
	workStore truth
	// purges is what the purger claims and runs purges on: workStore
	// when nil (tests put a fault in front of it).
	purges social.PurgeStore
	cache  feed.Cache
	// likes is the like counters and recent sets: the same backend as
	// cache.
	likes feed.LikeCache
	// authorLists caches pulled authors' newest post ids: the inbox
	// structure in its own key space (nil unless the mode is hybrid).
	authorLists feed.Inboxes
	// closeAuthorLists closes authorLists when they have their own
	// backend (nil when they share the inbox cache's Redis client).
	closeAuthorLists func() error
	broker           feed.Broker
	// notifier carries the live stream's per-author messages: the same
	// backend as cache.
	notifier feed.Notifier
	// beats keeps the processes' heartbeats (package census): the same
	// backend as cache.
	beats census.Board
	// queues is broker as the ops console reads and mends it.
	queues census.Queues
	// cacheBreaker is the Redis servers' breakers (nil on the embedded
	// cache).
	cacheBreaker *rediscache.Breaker
	// fresh keeps users' reads as fresh as their writes when the API's
	// store reads from a replica; nil without one.
	fresh httpapi.Freshness
	reg   *prometheus.Registry
	// figures holds the metrics the heartbeat reads, which are also on
	// reg (see register): gathering it asks no backend anything, where
	// gathering reg asks the broker and SQL for their gauges.
	figures    *prometheus.Registry
	adminToken string
	jwtSecret  []byte
	// now is the clock of the id generator (time.Now when nil); tests set
	// it to make many posts share a millisecond.
	now func() time.Time
	// pid names the process among the heartbeats (os.Getpid when 0);
	// tests that run several processes in one binary set it.
	pid int
	// generated is set when the admin token was generated or read from the
	// data dir, so it is safe (and useful) to print it.
	generated bool
}

func newLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if format == "text" {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(requestIDHandler{next: h})
}

// requestIDHandler adds the request id of a record's context to it, so
// that every line logged with a request's context (API, relay, dispatcher,
// worker) names the request, without each call site adding it. A line
// that names it already (the API's request line, a logger made With it)
// keeps its own: a key twice in one JSON object is read differently by
// different tools.
type requestIDHandler struct {
	next slog.Handler
	has  bool // the attributes bound by WithAttrs name a request_id
}

const logKeyRequestID = "request_id"

func (h requestIDHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := feed.RequestID(ctx); id != "" && !h.has && !recordHas(r, logKeyRequestID) {
		r.AddAttrs(slog.String(logKeyRequestID, id))
	}
	return h.next.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	has := h.has
	for _, a := range attrs {
		has = has || a.Key == logKeyRequestID
	}
	return requestIDHandler{next: h.next.WithAttrs(attrs), has: has}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{next: h.next.WithGroup(name), has: h.has}
}

// recordHas reports whether r has a top-level attribute named key.
func recordHas(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}

// migrate is the migrate role. On shards it also creates each shard's
// database where it is missing and records which shard it is
// (shards.Migrate, which refuses a wrong map before it creates anything).
func migrate(ctx context.Context, cfg config, logger *slog.Logger, stdout io.Writer) error {
	if cfg.sharded() {
		m, err := cfg.shardMap()
		if err != nil {
			return err
		}
		if err := shards.Migrate(ctx, m); err != nil {
			if errors.Is(err, sqlstore.ErrShardMismatch) {
				return usageError{fmt.Errorf("%w; fix FEEDD_SHARDS and FEEDD_SHARD_DSNS to place each shard where it lives", err)}
			}
			return err
		}
		fmt.Fprintf(stdout, "feedd: migrations applied to %d shards\n", m.N)
		return nil
	}
	store, err := openStore(ctx, cfg, sqlstore.Pools{Write: 2}, sqlstore.Timeouts{})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "feedd: migrations applied")
	return nil
}

// openDeps opens every backend the configuration names, and closes what
// it opened if a later one fails.
func openDeps(ctx context.Context, cfg config, logger *slog.Logger) (_ *deps, err error) {
	if cfg.role != "all" && (!cfg.redis() || cfg.amqpURL == "") {
		return nil, errors.New("the serve and work roles need FEEDD_REDIS_URL and FEEDD_AMQP_URL: the in-process cache and queue live in one process")
	}
	d := &deps{reg: prometheus.NewRegistry(), figures: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			d.close(logger)
		}
	}()
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if d.adminToken, d.jwtSecret, d.generated, err = secrets(cfg); err != nil {
		return nil, err
	}
	serveAPI, runWork := cfg.role == "all" || cfg.role == "serve", cfg.role == "all" || cfg.role == "work"
	apiPools := sqlstore.Pools{Write: cfg.sqlWriteConns, Read: cfg.sqlReadConns}
	workPools := sqlstore.Pools{Write: cfg.sqlWorkConns}
	switch {
	case cfg.embedded():
		if d.store, err = openStore(ctx, cfg, apiPools, cfg.timeouts()); err != nil {
			return nil, err
		}
		d.workStore = d.store
	case serveAPI && runWork:
		if d.store, err = openStore(ctx, cfg, apiPools, cfg.timeouts()); err != nil {
			return nil, err
		}
		if d.workStore, err = openStore(ctx, cfg, workPools, cfg.timeouts()); err != nil {
			return nil, err
		}
	case serveAPI:
		if d.store, err = openStore(ctx, cfg, apiPools, cfg.timeouts()); err != nil {
			return nil, err
		}
		d.workStore = d.store
	default:
		if d.store, err = openStore(ctx, cfg, workPools, cfg.timeouts()); err != nil {
			return nil, err
		}
		d.workStore = d.store
	}
	if cfg.autoMigrate || cfg.embedded() {
		if err := d.store.Migrate(ctx); err != nil {
			return nil, err
		}
	}
	var redisCounter *rediscache.CommandCounter
	if cfg.redis() {
		// A single server or a Cluster: rediscache touches one key (or one
		// hash tag) per command and script, so it works on either.
		client, err := rediscache.NewClient(cfg.redisURL, cfg.redisCluster, 0)
		if err != nil {
			return nil, fmt.Errorf("FEEDD_REDIS_URL: %w", err)
		}
		// The breaker goes first, so that the counter does not count the
		// commands it refuses.
		d.cacheBreaker = addCacheBreaker(client, cfg, d.reg, logger)
		redisCounter = rediscache.CountCommands(client)
		rc := rediscache.New(client, rediscache.Options{Prefix: cfg.redisPrefix, InboxMax: cfg.inboxMax, InboxGroups: cfg.inboxGroups, InboxTTL: cfg.inboxTTL()})
		d.cache, d.likes, d.notifier, d.beats = rc, rc, rc, rc
		d.fresh = writeMarks(cfg, d.store, client, logger)
		if err := d.cache.Ping(ctx); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		// Authors' lists of their newest post ids: the pulled authors'
		// in hybrid, and in every model those a list's feed reads. Same
		// client: closing the inbox cache closes it.
		d.authorLists = rediscache.New(client, rediscache.Options{Prefix: cfg.redisPrefix + rediscache.AuthorListPrefix, InboxMax: authorListMax, InboxGroups: cfg.inboxGroups, InboxTTL: cfg.inboxTTL()})
	} else {
		mc := inmemcache.New(inmemcache.Options{InboxMax: cfg.inboxMax, InboxTTL: cfg.inboxTTL()})
		d.cache, d.likes, d.notifier, d.beats = mc, mc, mc, mc
		d.fresh = writeMarks(cfg, d.store, nil, logger)
		lists := inmemcache.New(inmemcache.Options{InboxMax: authorListMax, InboxTTL: cfg.inboxTTL()})
		d.authorLists, d.closeAuthorLists = lists, lists.Close
	}
	// Asked at each collection: a shard that moved (shards.Move) is
	// counted at its new place.
	dbs := func() []*sqlstore.Store { return distinct(append(databases(d.store), databases(d.workStore)...)) }
	d.reg.MustRegister(newCostCollector(redisCounter, dbs))
	d.reg.MustRegister(newNodesCollector(dbs))
	if cfg.amqpURL != "" {
		b, err := rabbit.Dial(ctx, cfg.amqpURL, rabbit.Options{Prefix: cfg.amqpPrefix, QueueType: cfg.amqpQueue}, logger)
		if err != nil {
			return nil, fmt.Errorf("rabbitmq: %w", err)
		}
		d.broker, d.queues = b, b
	} else {
		q := inmemqueue.New()
		d.broker, d.queues = q, q
	}
	return d, nil
}

// addCacheBreaker puts circuit breakers in front of client, one per Redis
// server (see rediscache.Breaker): while a server is unreachable, cache
// calls to it fail at once and the callers' fallbacks (SQL, a 503, a
// retry) answer without waiting on go-redis's retries. The worst state is
// the gauge feedd_cache_breaker_state, the open ones are counted by
// feedd_cache_breaker_open_nodes; opening and closing are logged.
func addCacheBreaker(client redis.UniversalClient, cfg config, reg prometheus.Registerer, logger *slog.Logger) *rediscache.Breaker {
	logger = logger.With("component", "cache")
	b := rediscache.AddBreaker(client, breaker.Config{Failures: cfg.cacheFailures, Cooldown: cfg.cacheCooldown},
		func(node string, from, to breaker.State) {
			switch {
			case to == breaker.Open && from == breaker.Closed:
				logger.Warn("cache breaker opened: a Redis server is unreachable; its cache calls fail at once (reads from SQL, likes answer 503) until a probe finds it back",
					"node", node, "failures", cfg.cacheFailures, "cooldown", cfg.cacheCooldown)
			case to == breaker.Closed:
				logger.Warn("cache breaker closed: the Redis server answers again", "node", node)
			default: // probes during the outage, one per cool-down
				logger.Debug("cache breaker changed state", "node", node, "from", from.String(), "to", to.String())
			}
		})
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "feedd_cache_breaker_state", Help: "The Redis circuit breakers' worst state: 0 closed, 1 half-open (probing), 2 open (a server's calls refused).",
	}, func() float64 { return float64(b.State()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "feedd_cache_breaker_open_nodes", Help: "Redis servers (Cluster nodes) whose breaker is open: their keys are served from SQL meanwhile.",
	}, func() float64 { return float64(b.OpenNodes()) }))
	return b
}

// register is the Registerer for the metrics the heartbeat reads (the
// request histogram, the fan-out's, the SQL breaker's gauge): it puts them
// on reg, for /metrics, and on figures, for the heartbeat.
func (d *deps) register() prometheus.Registerer { return both{d.reg, d.figures} }

// both registers a collector on two registries; the first one's answer
// (an AlreadyRegisteredError with its collector) is the caller's.
type both [2]prometheus.Registerer

func (b both) Register(c prometheus.Collector) error {
	if err := b[0].Register(c); err != nil {
		return err
	}
	return b[1].Register(c)
}

func (b both) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := b.Register(c); err != nil {
			panic(err)
		}
	}
}

func (b both) Unregister(c prometheus.Collector) bool {
	b[1].Unregister(c)
	return b[0].Unregister(c)
}

func (d *deps) close(logger *slog.Logger) {
	if d.broker != nil {
		if err := d.broker.Close(); err != nil {
			logger.Warn("closing broker", "err", err)
		}
	}
	if d.closeAuthorLists != nil {
		_ = d.closeAuthorLists()
	}
	if d.cache != nil {
		if err := d.cache.Close(); err != nil {
			logger.Warn("closing cache", "err", err)
		}
	}
	if d.workStore != nil && d.workStore != d.store {
		if err := d.workStore.Close(); err != nil {
			logger.Warn("closing work store", "err", err)
		}
	}
	if d.store != nil {
		if err := d.store.Close(); err != nil {
			logger.Warn("closing store", "err", err)
		}
	}
}
