package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/feedd/feedd/internal/fanout"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/httpapi"
	"github.com/feedd/feedd/internal/relay"
	"github.com/feedd/feedd/internal/timeline"
)

// start runs the configured role until ctx is done, then shuts down in
// order: stop taking requests and drain them, stop the consumers (letting
// messages in hand finish and ack), stop the relay; the caller then closes
// the backends.
func start(ctx context.Context, cfg config, d *deps, logger *slog.Logger, stdout io.Writer) error {
	metrics := promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{Registry: d.reg})
	serveAPI := cfg.role == "all" || cfg.role == "serve"
	runWork := cfg.role == "all" || cfg.role == "work"

	policy := feed.DeliveryPolicy{Mode: cfg.fanoutMode, PullThreshold: int64(cfg.pullAt)}
	var rel *relay.Relay
	if runWork {
		rel = relay.New(logger, relay.Config{Workers: cfg.relayWorkers}, d.store, d.broker, d.reg)
	}
	ready := func(ctx context.Context) error {
		for _, ping := range []func(context.Context) error{d.store.Ping, d.cache.Ping, d.broker.Ping} {
			if err := ping(ctx); err != nil {
				return feed.Errorf(feed.EUNAVAILABLE, "a backend is not reachable")
			}
		}
		return nil
	}

	var handler http.Handler
	if serveAPI {
		opts := []timeline.Option{timeline.WithReadyCheck(d.broker.Ping)}
		if rel != nil {
			opts = append(opts, timeline.WithPublishHook(rel.Notify))
		}
		svc := timeline.New(logger, timeline.Config{
			InboxMax:        cfg.inboxMax,
			InboxTTL:        time.Duration(cfg.activeDays) * 24 * time.Hour,
			RefreshInterval: cfg.refresh,
			Policy:          policy,
			OutboxMax:       outboxMax,
		}, d.store, d.cache, inboxesOrNil(d.outboxes), feed.NewIDGen(d.now), d.reg, opts...)
		handler = httpapi.NewServer(logger, httpapi.Config{
			AdminToken: d.adminToken, JWTSecret: d.jwtSecret,
		}, svc, d.reg, metrics)
	} else {
		handler = httpapi.NewOps(logger, ready, metrics)
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
	}
	logger.Info("feedd started", "role", cfg.role, "url", url, "sql", sqlKind(cfg), "cache", orEmbedded(cfg.redisURL != "", "redis"), "queue", orEmbedded(cfg.amqpURL != "", "rabbitmq"), "fanout_mode", cfg.fanoutMode)

	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var work sync.WaitGroup
	errs := make(chan error, 4)
	if runWork {
		disp, worker := fanout.New(logger, fanout.Config{
			DirectFanout: cfg.directFanout, BatchSize: cfg.batchSize, Policy: policy,
		}, d.store, d.cache, inboxesOrNil(d.outboxes), d.broker, d.reg)
		work.Go(func() { _ = rel.Run(workCtx) })
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
	logger.Info("shutting down: draining requests")
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	logger.Info("shutting down: draining consumers and relay")
	stopWork()
	work.Wait()
	logger.Info("feedd stopped")
	return runErr
}

// inboxesOrNil keeps a nil cache a nil interface.
func inboxesOrNil(c feed.Cache) feed.Inboxes {
	if c == nil {
		return nil
	}
	return c
}

func sqlKind(cfg config) string {
	if cfg.embedded() {
		return "sqlite"
	}
	return "mysql"
}

func orEmbedded(real bool, name string) string {
	if real {
		return name
	}
	return "embedded"
}
