// Command feedd is the follow-feed service: one binary that runs the API,
// the outbox relay, the fan-out dispatcher and workers, together (the
// default) or as separate roles sharing MySQL, Redis and RabbitMQ.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "feedd: %v\n", err)
		}
		os.Exit(1)
	}
}

// run is feedd's whole life, with every outside dependency passed in, so
// that tests start the real program in process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "bench" {
		return runBench(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "requeue-dead" {
		return runRequeueDead(ctx, args[1:], getenv, stdout, stderr)
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	if cfg.role == "migrate" {
		return migrate(ctx, cfg, logger, stdout)
	}
	d, err := openDeps(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer d.close(logger)
	return start(ctx, cfg, d, logger, stdout)
}
