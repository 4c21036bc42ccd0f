// Command feedd is the follow-feed service: one binary that runs the API,
// the outbox relay, the fan-out dispatcher and workers, together (the
// default) or as separate roles sharing a SQL server (MySQL or
// PostgreSQL), Redis and RabbitMQ.
//
// A command line goes through main.go (run), commands.go (the command
// table: which role or command runs), settings.go and flags.go (the
// settings table, and how a variable or flag becomes a value of config.go's
// config), then, for a role, deps.go (the backends it opens) and start.go
// (what it runs, and its shutdown). The commands have a file each:
// bench.go, import.go, export.go, requeue.go, version.go.
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
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "feedd: %v\n", err)
		if errors.As(err, new(usageError)) {
			fmt.Fprintln(os.Stderr, `run "feedd help" or "feedd help <role or command>" for usage`)
		}
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
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	// Whatever goes wrong, the configuration's secrets stay out of the
	// output: usage texts, log lines and the error main prints.
	red := newRedactor(args, getenv)
	stdout, stderr = red.writer(stdout), red.writer(stderr)
	defer func() { err = red.err(err) }()
	return dispatch(ctx, commandTable(), args, getenv, stdin, stdout, stderr)
}
