package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/fanout"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/httpapi"
	"github.com/feedd/feedd/internal/likes"
	"github.com/feedd/feedd/internal/limit"
	"github.com/feedd/feedd/internal/notices"
	"github.com/feedd/feedd/internal/ranked"
	"github.com/feedd/feedd/internal/relay"
	"github.com/feedd/feedd/internal/replies"
	"github.com/feedd/feedd/internal/social"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/stream"
	"github.com/feedd/feedd/internal/timeline"
	"github.com/feedd/feedd/internal/webapp"
)

// start runs the configured role until ctx is done, then shuts down in
// order: stop taking requests and drain them, stop the consumers (letting
// messages in hand finish and ack), stop the relay; the caller then closes
// the backends.
func start(ctx context.Context, cfg config, d *deps, logger *slog.Logger, stdout io.Writer) error {
	metrics := promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{Registry: d.reg})
	// On a listener of its own, the metrics leave the public port, which
	// then answers /metrics 404 like any unknown path.
	apiMetrics := http.Handler(metrics)
	if cfg.metricsAddr != "" {
		apiMetrics = nil
	}
	serveAPI := cfg.role == "all" || cfg.role == "serve"
	runWork := cfg.role == "all" || cfg.role == "work"

	policy := feed.DeliveryPolicy{Mode: cfg.fanoutMode, PullThreshold: int64(cfg.pullAt)}
	registerBackendMetrics(d)
	announcer := stream.NewAnnouncer(d.notifier)
	var rel relays
	if runWork {
		rel = newRelays(logger, relay.Config{Workers: cfg.relayWorkers, MaxPending: cfg.relayMaxPending, Announce: announcer}, d.workStore, d.broker, d.reg)
	}
	// A work process needs every backend: without one it cannot move a
	// post along.
	workReady := func(ctx context.Context) []feed.Check {
		return feed.RunProbes(ctx, []feed.Probe{
			{Name: "sql", Required: true, Ping: d.workStore.Ping},
			{Name: "cache", Required: true, Ping: d.cache.Ping},
			{Name: "broker", Required: true, Ping: d.broker.Ping},
		})
	}

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var work sync.WaitGroup
	watchReplicas(workCtx, cfg, d, logger, &work)
	watchShards(workCtx, d, runWork, logger, &work)

	// Every process writes a heartbeat for the ops console; its breakers
	// are the likes' SQL breaker (a serving process's) and the Redis
	// servers'. It runs once the handler is built (likesBreaker set) and
	// stops with the workers.
	var likesBreaker *breaker.Breaker
	reporter := census.NewReporter(logger, census.Config{Role: cfg.role, Version: version(), PID: d.pid, Interval: cfg.heartbeat}, d.beats, d.figures,
		func() map[string]breaker.State {
			m := map[string]breaker.State{}
			if likesBreaker != nil {
				m["sql likes"] = likesBreaker.State()
			}
			if d.cacheBreaker != nil {
				for addr, st := range d.cacheBreaker.Nodes() {
					m["redis "+addr] = st
				}
			}
			return m
		})
	var hub *stream.Hub
	var handler http.Handler
	if serveAPI {
		// The switches live in the cache, shared by every process, and
		// are polled; the poller stops with the workers, after the HTTP
		// server has drained.
		switches := degrade.New(logger, d.cache, d.reg)
		if err := switches.Sync(ctx); err != nil {
			logger.Warn("could not read the degradation switches; starting with all off", "err", err)
		}
		work.Go(func() { switches.Run(workCtx, cfg.switchPoll) })
		// The broker is reported, not required: publishes go to the
		// outbox, in SQL, and wait there for the broker to return.
		var rk *ranked.Service
		opts := []timeline.Option{
			timeline.WithReadyCheck("broker", false, d.broker.Ping),
			timeline.WithBreaker(breaker.Config{Failures: cfg.breakerFailures, Timeout: cfg.sqlTimeout, Cooldown: cfg.breakerCooldown}),
			timeline.WithSwitches(switches),
			timeline.WithHotPosts(cfg.hotPosts, cfg.hotPostTTL),
			// The ranked feed, made below over the timeline, forgets the
			// candidates it gathered of a reader whose follows change;
			// it exists before the API serves the first follow.
			timeline.WithGraphHook(func(ctx context.Context, reader int64) { rk.Forget(ctx, reader) }),
		}
		if rel != nil {
			opts = append(opts, timeline.WithPublishHook(rel.Notify))
		} else {
			// No relay here: wake those of the work processes (on
			// PostgreSQL; on MySQL they find the post at their poll).
			waker := relay.NewWaker(logger, d.store)
			work.Go(func() { _ = waker.Run(workCtx) })
			opts = append(opts, timeline.WithPublishHook(waker.Notify))
		}
		svc := timeline.New(logger, timeline.Config{
			InboxMax:        cfg.inboxMax,
			InboxTTL:        cfg.inboxTTL(),
			RefreshInterval: cfg.refresh,
			RefreshHorizon:  cfg.refreshHorizon,
			RefreshMaxPosts: cfg.refreshMax,
			Policy:          policy,
			AuthorListMax:   authorListMax,
			UnreadCap:       cfg.unreadCap,
		}, d.store, d.cache, d.authorLists, d.register(), opts...)
		// Replies' counts are held in process as like counts are, for as
		// long (docs/replies.md).
		rs := replies.New(logger, replies.Config{LocalCountTTL: cfg.likeCountTTL, Breaker: svc.SQLBreaker()}, d.store, svc)
		// The writes go through the timeline's SQL breaker, and tell it
		// what they changed.
		ws := social.New(logger, social.Config{Policy: policy, IdempotencyTTL: cfg.idempotencyTTL, Shards: shardCount(d.store)},
			d.store, d.cache, svc, feed.NewIDGen(d.now), d.register(),
			social.WithBreaker(svc.SQLBreaker()), social.WithAnnouncer(announcer), social.WithReplyHook(rs.PostWritten))
		// Readers whose cached feed missed a change during a cache outage
		// are reset within a second of the cache answering again.
		work.Go(func() { svc.RunStaleSweeper(workCtx, time.Second) })
		shed := limit.NewShedder(map[limit.Class]int{limit.Read: cfg.maxReads, limit.Write: cfg.maxWrites}, cfg.shedWait)
		hub = stream.New(logger, stream.Config{
			MaxPerUser: cfg.streamMaxPerUser, Max: cfg.streamMax, Heartbeat: cfg.streamHeartbeat, WriteRate: cfg.streamWriteRate,
			Slots: d.cache, // the processes sharing Redis share the per-user bound
			// The API's requests go before the streams' deliveries.
			Busy:    func() bool { return shed.InFlight(limit.Write)+shed.InFlight(limit.Read) > 0 },
			Members: svc.ListMemberIDs,
		}, d.notifier, followees(d.store))
		work.Go(func() { hub.Run(workCtx) })
		d.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "feedd_streams_open", Help: "Live streams (GET /v1/me/feed/stream) open on this process.",
		}, func() float64 { return float64(hub.Len()) }))
		pages, err := webapp.New()
		if err != nil {
			return err
		}
		likesBreaker = breaker.New(breaker.Config{Failures: cfg.breakerFailures, Timeout: cfg.sqlTimeout, Cooldown: cfg.breakerCooldown})
		lk := newLikes(cfg, d, logger, svc, rs, switches, likesBreaker)
		// The ranked feed ranks the timeline's latest feed by the likes,
		// and keeps its snapshots in the cache.
		rk = ranked.New(svc, lk, d.cache, cfg.rank)
		handler = httpapi.NewServer(logger, httpapi.Config{
			AdminToken: d.adminToken, JWTSecret: d.jwtSecret,
			BodyTimeout: cfg.bodyTimeout,
			Rates: limit.NewRates(limit.Config{
				PerUser:  map[limit.Class]limit.Rule{limit.Write: cfg.rateUserWrite, limit.Read: cfg.rateUserRead},
				Global:   map[limit.Class]limit.Rule{limit.Write: cfg.rateWrite, limit.Read: cfg.rateRead},
				MaxUsers: cfg.rateUsers,
			}),
			UserSlots: limit.NewUserSlots(cfg.userMaxInflight),
			Shed:      shed,
			Switches:  switches,
			Live:      &httpapi.Live{Hub: hub, Tickets: d.cache},
			Console:   census.NewConsole(logger, reporter, d.beats, d.store, d.queues, switches),
			Freshness: d.fresh,
			Pages:     pages,
		}, api{svc, ws, rk, rs, notices.New(d.store, svc, lk, cfg.unreadCap)}, lk, d.register(), apiMetrics)
	} else {
		handler = httpapi.NewProbes(logger, workReady, apiMetrics)
	}
	work.Go(func() { reporter.Run(workCtx) })

	// The private listeners open first, so that a failure leaves nothing
	// open, and close last, so that the drain can be watched.
	var private []*privateServer
	defer func() {
		for _, p := range private {
			p.close()
		}
	}()
	if cfg.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics)
		if cfg.pprofAddr == cfg.metricsAddr {
			handleProfiles(mux, cfg.cmdline)
		}
		p, err := servePrivate("metrics", cfg.metricsAddr, mux, logger)
		if err != nil {
			return err
		}
		private = append(private, p)
		fmt.Fprintf(stdout, "metrics at %s/metrics\n", p.url)
	}
	if cfg.pprofAddr != "" && cfg.pprofAddr != cfg.metricsAddr {
		mux := http.NewServeMux()
		handleProfiles(mux, cfg.cmdline)
		p, err := servePrivate("profiles", cfg.pprofAddr, mux, logger)
		if err != nil {
			return err
		}
		private = append(private, p)
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "feedd %s listening on %s\n", cfg.role, url)
	if serveAPI {
		if d.generated {
			fmt.Fprintf(stdout, "admin token: %s\n", d.adminToken)
		} else {
			fmt.Fprintln(stdout, "admin token: the one in FEEDD_ADMIN_TOKEN")
		}
		fmt.Fprintf(stdout, "in a browser: the console at %s/ops, the app at %s/\n", url, url)
	}
	logger.Info("feedd started", "role", cfg.role, "url", url, "sql", cfg.sqlBackend(), "cache", orEmbedded(cfg.redis(), "redis"), "queue", orEmbedded(cfg.amqpURL != "", "rabbitmq"), "fanout_mode", cfg.fanoutMode)

	errs := make(chan error, 4)
	if runWork {
		disp, worker := fanout.New(logger, fanout.Config{
			DirectFanout: cfg.directFanout, BatchSize: cfg.batchSize, Policy: policy,
			MaxPendingTasks: cfg.tasksMaxPending, SQLReads: cfg.fanoutSQLReads,
			RetryFor: cfg.fanoutRetryFor, Done: workCtx.Done(),
			Announce: announcer,
		}, d.workStore, d.cache, d.authorLists, d.broker, d.register())
		work.Go(func() { rel.Run(workCtx) })
		keySweep := social.NewKeySweep(logger, d.workStore, cfg.idempotencyTTL, d.reg)
		work.Go(func() { keySweep.Run(workCtx) })
		var counters social.LikeCounters
		if lc, ok := d.likes.(social.LikeCounters); ok {
			counters = lc
		}
		purges := d.purges
		if purges == nil {
			purges = d.workStore
		}
		purger := social.NewPurger(logger, social.PurgerConfig{
			Lease: cfg.purgeLease, PostTTL: timeline.DefaultConfig().PostTTL, ForgetHidden: timeline.ForgetHidden,
		}, purges, d.cache, d.authorLists, counters)
		work.Go(func() { purger.Run(workCtx) })
		work.Go(func() {
			if err := d.broker.Consume(workCtx, feed.QueuePosts, feed.ConsumeOptions{Concurrency: 4}, disp.Handle); err != nil {
				errs <- fmt.Errorf("dispatcher: %w", err)
			}
		})
		work.Go(func() {
			if err := d.broker.Consume(workCtx, feed.QueueTasks, feed.ConsumeOptions{Concurrency: cfg.workers}, worker.Handle); err != nil {
				errs <- fmt.Errorf("workers: %w", err)
			}
		})
		if likesViaBroker(cfg) {
			// Retried for minutes (holding the messages) before a
			// batch's messages are handed back, well under RabbitMQ's
			// 30-minute consumer timeout.
			w := likes.NewWriter(logger, likes.WriterConfig{
				MaxBatch: cfg.likeBatch, Linger: cfg.likeLinger, RetryFor: 5 * time.Minute, Done: workCtx.Done(), Cache: d.likes,
			}, d.workStore, d.reg)
			work.Go(func() {
				if err := d.broker.Consume(workCtx, feed.QueueLikes, feed.ConsumeOptions{Concurrency: w.Concurrency()}, w.Handle); err != nil {
					errs <- fmt.Errorf("likes writer: %w", err)
				}
			})
		}
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("http: %w", err)
		}
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
		logger.Error("a component failed; shutting down", "err", runErr)
	}
	if hub != nil {
		// The HTTP server's Shutdown waits for requests in progress, and a
		// stream never ends by itself: end them first, each with a retry
		// hint, so that their clients reconnect to another process.
		logger.Info("shutting down: ending live streams", "streams", hub.Len())
		hub.Shutdown()
	}
	logger.Info("shutting down: draining requests")
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	if hub != nil {
		if err := hub.Drain(shutCtx); err != nil {
			logger.Warn("live streams shutdown", "err", err)
		}
	}
	logger.Info("shutting down: draining consumers and relay")
	stopWork()
	work.Wait()
	if hub != nil {
		_ = hub.Close()
	}
	logger.Info("shutting down: metrics and profiles")
	for _, p := range private {
		p.shutdown(shutCtx)
	}
	logger.Info("feedd stopped")
	return runErr
}

// privateServer is a listener off the API's address (metrics, profiles),
// so that only an operator who can reach that address (loopback, a
// private network) can scrape or profile a running process.
type privateServer struct {
	srv *http.Server
	url string
}

func servePrivate(what, addr string, mux *http.ServeMux, logger *slog.Logger) (*privateServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for %s on %s: %w", what, addr, err)
	}
	p := &privateServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, url: "http://" + ln.Addr().String()}
	go func() { _ = p.srv.Serve(ln) }()
	logger.Info("serving "+what, "url", p.url)
	return p, nil
}

// shutdown lets a scrape in progress finish; close is for the error paths.
func (p *privateServer) shutdown(ctx context.Context) { _ = p.srv.Shutdown(ctx) }
func (p *privateServer) close()                       { _ = p.srv.Close() }

// handleProfiles serves Go's profiles, and the command line as cmdline
// (pprof.Cmdline's format): with its secrets hidden, where pprof.Cmdline
// would serve os.Args as typed, -admin-token's value included.
func handleProfiles(mux *http.ServeMux, cmdline string) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, cmdline)
	})
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// registerBackendMetrics exposes the queue depths, dead letters and SQL
// pool use of this process's backends.
func registerBackendMetrics(d *deps) {
	for _, q := range []string{feed.QueuePosts, feed.QueueTasks, feed.QueueLikes} {
		d.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "feedd_queue_depth", Help: "Messages ready in a queue (-1: the broker did not answer).",
			ConstLabels: prometheus.Labels{"queue": q},
		}, func() float64 { return count(d.broker.Pending, q) }))
		d.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "feedd_queue_dead_letters", Help: "Messages in a queue's dead-letter queue (-1: the broker did not answer).",
			ConstLabels: prometheus.Labels{"queue": q},
		}, func() float64 { return count(d.broker.DeadLetters, q) }))
	}
	pools := map[string]*sql.DB{}
	// On shards, each shard's pools are named for it: api_write_s3.
	suffix := func(k int) string {
		if _, one := d.store.(*sqlstore.Store); one {
			return ""
		}
		return "_s" + strconv.Itoa(k)
	}
	for k, db := range databases(d.store) {
		w, r := db.Pools()
		pools["api_write"+suffix(k)], pools["api_read"+suffix(k)] = w, r
	}
	if d.workStore != d.store {
		for k, db := range databases(d.workStore) {
			pools["work"+suffix(k)], _ = db.Pools()
		}
	}
	seen := map[*sql.DB]bool{}
	for name, db := range pools {
		if !seen[db] {
			seen[db] = true
			d.reg.MustRegister(collectors.NewDBStatsCollector(db, name))
		}
	}
}

func count(f func(context.Context, string) (int, error), q string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := f(ctx, q)
	if err != nil {
		return -1
	}
	return float64(n)
}

// likesViaBroker reports whether like events travel through RabbitMQ to
// a batching consumer. The in-process queue dies with the process, so
// without RabbitMQ a like is written (group-committed) before the API
// answers instead.
func likesViaBroker(cfg config) bool { return cfg.amqpURL != "" }

func newLikes(cfg config, d *deps, logger *slog.Logger, posts likes.Posts, rc likes.ReplyCounter, switches *degrade.Switches, b *breaker.Breaker) *likes.Service {
	var record likes.Recorder
	if likesViaBroker(cfg) {
		record = likes.ViaBroker(d.broker, cfg.likeBatch)
	} else {
		w := likes.NewWriter(logger, likes.WriterConfig{MaxBatch: cfg.likeBatch, Cache: d.likes}, d.store, d.reg)
		record = w.Submit
	}
	// b is its own breaker, set like the timeline's: a page's likes never
	// wait on a SQL that the timeline already answers around.
	return likes.New(logger, likes.Config{Breaker: b, LocalCountTTL: cfg.likeCountTTL, Switches: switches, Replies: rc}, d.store, d.likes, posts, record, d.reg)
}

// api is what the API calls (httpapi.Timeline): the read engine, the
// writes and the ranked feed. One interface satisfied by the services side
// by side keeps httpapi, its route table and its test fakes as they were;
// they have no method in common, so none hides another's.
type api struct {
	*reads
	*writes
	*ranks
	*threads
	*notes
}

// reads, writes, ranks, threads and notes name the services in api.
type (
	reads   = timeline.Service
	writes  = social.Service
	ranks   = ranked.Service
	threads = replies.Service
	notes   = notices.Service
)

func orEmbedded(real bool, name string) string {
	if real {
		return name
	}
	return "embedded"
}

// followees reads whom a reader follows, for the live stream's hub.
func followees(store truth) stream.Followees {
	const page = 1000
	return func(ctx context.Context, reader int64) ([]int64, error) {
		var all []int64
		var after int64
		for {
			ids, err := store.Following(ctx, reader, after, page)
			if err != nil {
				return nil, err
			}
			all = append(all, ids...)
			if len(ids) < page {
				return all, nil
			}
			after = ids[len(ids)-1]
		}
	}
}
