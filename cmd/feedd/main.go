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
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "feedd: %v\n", err)
	}
	stop()
	os.Exit(exitCode(err))
}

// usageError is a command line or environment that is wrong: a flag, a
// setting's value, a secret too short.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is the flag package's convention: 0 for success and for -h,
// 2 for a usage error, 1 for any other failure (a backend unreachable, a
// file unreadable).
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		return 2
	}
	return 1
}

// run is feedd's whole life, with every outside dependency passed in, so
// that tests start the real program in process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	// Whatever goes wrong, the configuration's secrets stay out of the
	// output: usage texts, log lines and the error main prints.
	red := newRedactor(args, getenv)
	stdout, stderr = red.writer(stdout), red.writer(stderr)
	defer func() { err = red.err(err) }()
	if len(args) > 0 && args[0] == "bench" {
		return runBench(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "import" {
		return runImport(ctx, args[1:], getenv, os.Stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "requeue-dead" {
		return runRequeueDead(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "export" {
		return runExport(ctx, args[1:], getenv, stdout, stderr)
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
