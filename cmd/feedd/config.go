package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// config is every setting of feedd. Each has a flag and an environment
// variable (FEEDD_ + the flag name upper-cased, dashes as underscores);
// a flag wins over the environment.
type config struct {
	role string

	addr         string
	dataDir      string
	adminToken   string
	jwtSecret    string
	mysqlDSN     string
	redisURL     string
	redisPrefix  string
	amqpURL      string
	amqpPrefix   string
	inboxMax     int
	directFanout int
	batchSize    int
	workers      int
	relayWorkers int
	activeDays   int
	refresh      time.Duration
	fanoutMode   feed.FanoutMode
	pullAt       int
	autoMigrate  bool
	logLevel     string
}

var roles = map[string]string{
	"all":     "API, relay, dispatcher and workers in one process (the default)",
	"serve":   "the HTTP API only",
	"work":    "relay, dispatcher and batch workers; serves /healthz, /readyz and /metrics",
	"migrate": "apply the SQL migrations and exit",
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	c.role = "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c.role, args = args[0], args[1:]
	}
	if _, ok := roles[c.role]; !ok {
		return c, fmt.Errorf("unknown role %q: want one of all, serve, work, migrate, bench", c.role)
	}
	fs := flag.NewFlagSet("feedd "+c.role, flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(name string) string { return "FEEDD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) }
	str := func(p *string, name, def, usage string) {
		if v := getenv(env(name)); v != "" {
			def = v
		}
		fs.StringVar(p, name, def, usage+" ("+env(name)+")")
	}
	var envErr error
	num := func(p *int, name string, def int, usage string) {
		if v := getenv(env(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				envErr = errors.Join(envErr, fmt.Errorf("%s=%q is not an integer", env(name), v))
			}
			def = n
		}
		fs.IntVar(p, name, def, usage+" ("+env(name)+")")
	}
	dur := func(p *time.Duration, name string, def time.Duration, usage string) {
		if v := getenv(env(name)); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				envErr = errors.Join(envErr, fmt.Errorf("%s=%q is not a duration like 5s", env(name), v))
			}
			def = d
		}
		fs.DurationVar(p, name, def, usage+" ("+env(name)+")")
	}
	boolean := func(p *bool, name string, def bool, usage string) {
		if v := getenv(env(name)); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				envErr = errors.Join(envErr, fmt.Errorf("%s=%q is not a boolean", env(name), v))
			}
			def = b
		}
		fs.BoolVar(p, name, def, usage+" ("+env(name)+")")
	}
	str(&c.addr, "addr", "127.0.0.1:8080", "HTTP listen address")
	str(&c.dataDir, "data-dir", "./data", "directory of the embedded SQLite database and generated secrets")
	str(&c.adminToken, "admin-token", "", "admin bearer token; generated into the data dir on the embedded default, required with MySQL")
	str(&c.jwtSecret, "jwt-secret", "", "HS256 secret for user tokens; same rule as the admin token")
	str(&c.mysqlDSN, "mysql-dsn", "", "MySQL/MariaDB DSN, e.g. root@tcp(127.0.0.1:3306)/feedd; empty: embedded SQLite")
	str(&c.redisURL, "redis-url", "", "Redis URL, e.g. redis://127.0.0.1:6379/0; empty: in-process cache")
	str(&c.redisPrefix, "redis-prefix", "feedd:", "prefix of every Redis key")
	str(&c.amqpURL, "amqp-url", "", "RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672/; empty: in-process queue")
	str(&c.amqpPrefix, "amqp-prefix", "feedd.", "prefix of every RabbitMQ queue and exchange")
	num(&c.inboxMax, "inbox-max", 1000, "entries kept per home-feed inbox")
	num(&c.directFanout, "direct-fanout", 5000, "authors with fewer followers are fanned out by the dispatcher directly, others in batch tasks")
	num(&c.batchSize, "batch-size", 1000, "followers per fan-out batch task")
	num(&c.workers, "workers", 8, "concurrent batch-task handlers per work process")
	num(&c.relayWorkers, "relay-workers", 2, "concurrent outbox relay loops per work process")
	num(&c.activeDays, "active-days", 30, "an inbox unread for this many days expires and is rebuilt when its reader returns")
	dur(&c.refresh, "refresh-interval", 5*time.Second, "at most one smart refresh of a reader's first page per interval")
	var mode string
	str(&mode, "fanout-mode", "hybrid", "timeline model: push, pull, or hybrid (push below the pull threshold, pull above)")
	num(&c.pullAt, "pull-threshold", 100_000, "in hybrid mode, authors with at least this many followers are pulled at read time, not fanned out (back to push below 90% of it)")
	boolean(&c.autoMigrate, "auto-migrate", true, "apply SQL migrations at start (they are idempotent)")
	str(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: feedd [role] [flags]\n\nroles:\n")
		for _, r := range []string{"all", "serve", "work", "migrate"} {
			fmt.Fprintf(stderr, "  %-8s %s\n", r, roles[r])
		}
		fmt.Fprintf(stderr, "\nflags (each also read from the environment variable in brackets):\n")
		fs.PrintDefaults()
	}
	var err error
	if err = fs.Parse(args); err != nil {
		return c, err
	}
	if envErr != nil {
		return c, envErr
	}
	if c.fanoutMode, err = feed.ParseFanoutMode(mode); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"inbox-max", c.inboxMax}, {"direct-fanout", c.directFanout}, {"batch-size", c.batchSize}, {"workers", c.workers}, {"relay-workers", c.relayWorkers}, {"active-days", c.activeDays}, {"pull-threshold", c.pullAt}} {
		if v.n <= 0 {
			return c, fmt.Errorf("%s must be positive, got %d", v.name, v.n)
		}
	}
	return c, nil
}

// embedded reports whether the SQL store is the embedded SQLite file.
func (c config) embedded() bool { return c.mysqlDSN == "" }
