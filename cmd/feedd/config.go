package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/fanout"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/httpapi"
	"github.com/feedd/feedd/internal/likes"
	"github.com/feedd/feedd/internal/limit"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/relay"
	"github.com/feedd/feedd/internal/stream"
	"github.com/feedd/feedd/internal/timeline"
)

// config is every setting of feedd. Each has a flag and an environment
// variable (FEEDD_ + the flag name upper-cased, dashes as underscores);
// a flag wins over the environment.
type config struct {
	role string

	addr           string
	dataDir        string
	adminToken     string
	jwtSecret      string
	mysqlDSN       string
	redisURL       string
	redisCluster   string
	mysqlReadDSN   string
	amqpQueue      string
	redisPrefix    string
	amqpURL        string
	amqpPrefix     string
	inboxMax       int
	directFanout   int
	batchSize      int
	workers        int
	relayWorkers   int
	activeDays     int
	refresh        time.Duration
	refreshHorizon time.Duration
	refreshMax     int
	fanoutMode     feed.FanoutMode
	pullAt         int
	autoMigrate    bool
	logLevel       string
	pprofAddr      string
	metricsAddr    string
	inboxGroups    int
	fanoutSQLReads int
	fanoutRetryFor time.Duration
	purgeLease     time.Duration
	logFormat      string

	// The defences (docs/operations.md, "Defences").
	rateUserWrite   limit.Rule
	rateUserRead    limit.Rule
	rateWrite       limit.Rule
	rateRead        limit.Rule
	rateUsers       int
	userMaxInflight int
	bodyTimeout     time.Duration
	maxReads        int
	maxWrites       int
	shedWait        time.Duration
	sqlTimeout      time.Duration
	breakerFailures int
	breakerCooldown time.Duration
	cacheFailures   int
	cacheCooldown   time.Duration
	sqlReadConns    int
	sqlWriteConns   int
	sqlWorkConns    int
	relayMaxPending int
	tasksMaxPending int
	switchPoll      time.Duration
	heartbeat       time.Duration
	hotPosts        int
	hotPostTTL      time.Duration
	idempotencyTTL  time.Duration
	unreadCap       int

	// The live stream.
	streamMaxPerUser int
	streamMax        int
	streamHeartbeat  time.Duration
	streamWriteRate  int

	// Likes (docs/likes.md).
	likeBatch    int
	likeLinger   time.Duration
	likeCountTTL time.Duration
}

var roles = map[string]string{
	"all":     "API, relay, dispatcher and workers in one process (the default)",
	"serve":   "the HTTP API only",
	"work":    "relay, dispatcher and batch workers; serves /healthz, /readyz and /metrics",
	"migrate": "apply the SQL migrations and exit",
}

// parseConfig reads the settings; every error it returns but -h's is a
// usageError.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (c config, err error) {
	defer func() {
		if err != nil && !errors.Is(err, flag.ErrHelp) {
			err = usageError{err}
		}
	}()
	c.role = "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c.role, args = args[0], args[1:]
	}
	if _, ok := roles[c.role]; !ok {
		return c, fmt.Errorf("unknown role %q: want one of all, serve, work, migrate, bench, import, requeue-dead, export", c.role)
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
	var rules []func() error
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
	// A setting that a package owns takes its default from that package.
	tl := timeline.DefaultConfig()
	str(&c.addr, "addr", "127.0.0.1:8080", "HTTP listen address")
	str(&c.dataDir, "data-dir", "./data", "directory of the embedded SQLite database and generated secrets")
	str(&c.adminToken, "admin-token", "", "admin bearer token, at least 32 bytes; generated into the data dir on the embedded default, required with MySQL")
	str(&c.jwtSecret, "jwt-secret", "", "HS256 secret for user tokens; same rule as the admin token")
	str(&c.mysqlDSN, "mysql-dsn", "", "MySQL/MariaDB DSN, e.g. root@tcp(127.0.0.1:3306)/feedd; empty: embedded SQLite")
	str(&c.mysqlReadDSN, "mysql-read-dsn", "", "DSN of a MySQL read replica (or a proxy to several) for the lag-tolerant read path; empty: the primary")
	str(&c.redisURL, "redis-url", "", "Redis URL, e.g. redis://127.0.0.1:6379/0, or a Cluster: redis+cluster://host:7000,host:7001; empty: in-process cache")
	str(&c.redisCluster, "redis-cluster", "", "Redis Cluster seed nodes, host:port,host:port…; makes FEEDD_REDIS_URL (then optional) give only credentials and options. A redis+cluster://host:port,host:port URL does the same alone")
	str(&c.redisPrefix, "redis-prefix", "feedd:", "prefix of every Redis key")
	str(&c.amqpURL, "amqp-url", "", "RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672/; several, comma-separated, to fail over between cluster nodes; empty: in-process queue")
	str(&c.amqpQueue, "amqp-queue-type", defaultAMQPQueueType, "quorum (replicated, for a RabbitMQ cluster) or classic")
	str(&c.amqpPrefix, "amqp-prefix", defaultAMQPPrefix, "prefix of every RabbitMQ queue and exchange")
	num(&c.inboxMax, "inbox-max", feed.DefaultInboxMax, "entries kept per home-feed inbox")
	num(&c.inboxGroups, "inbox-groups", rediscache.DefaultInboxGroups, "Redis hash tags the inboxes are spread over: a fan-out pushes into one group's inboxes with one script call, so fewer are cheaper and more spread a Cluster better; changing it rebuilds every inbox from SQL")
	num(&c.directFanout, "direct-fanout", fanout.DefaultDirectFanout, "authors with fewer followers are fanned out by the dispatcher directly, others in batch tasks")
	num(&c.batchSize, "batch-size", fanout.DefaultBatchSize, "followers per fan-out batch task")
	num(&c.workers, "workers", 8, "concurrent batch-task handlers per work process")
	num(&c.fanoutSQLReads, "fanout-sql-reads", fanout.DefaultSQLReads, "follower reads of the fan-out running at once per work process: they share the SQL primary with the API's writes")
	dur(&c.fanoutRetryFor, "fanout-retry-for", fanout.DefaultRetryFor, "a fan-out step that fails (Redis or SQL unreachable) is retried this long while its message is held, before the broker's redeliveries count")
	dur(&c.purgeLease, "purge-lease", timeline.DefaultPurgeLease, "a work process owns a user's purge this long after its last batch: if it dies, another resumes the purge after this")
	num(&c.relayWorkers, "relay-workers", relay.DefaultWorkers, "concurrent outbox relay loops per work process")
	num(&c.activeDays, "active-days", int(tl.InboxTTL/(24*time.Hour)), "an inbox unread for this many days expires and is rebuilt when its reader returns")
	dur(&c.refresh, "refresh-interval", tl.RefreshInterval, "at most one smart refresh of a reader's first page per interval")
	dur(&c.refreshHorizon, "refresh-horizon", tl.RefreshHorizon, "a smart refresh looks for posts at most this far back (older ones not yet delivered arrive with their fan-out)")
	num(&c.refreshMax, "refresh-max-posts", tl.RefreshMaxPosts, "nor further back than the newest this many posts by anyone (bounds the refresh query when posts come fast)")
	var mode string
	str(&mode, "fanout-mode", string(tl.Policy.Mode), "timeline model: push, pull, or hybrid (push below the pull threshold, pull above)")
	num(&c.pullAt, "pull-threshold", int(tl.Policy.PullThreshold), "in hybrid mode, authors with at least this many followers are pulled at read time, not fanned out (back to push below 90% of it)")
	num(&c.likeBatch, "like-batch", likes.DefaultMaxBatch, "like events written to SQL in one batch at most")
	dur(&c.likeLinger, "like-linger", likes.DefaultLinger, "with RabbitMQ, how long a batch of like events waits to fill before it is written")
	dur(&c.likeCountTTL, "like-count-ttl", likes.DefaultLocalCountTTL, "how long a process keeps a like count in memory before asking Redis again: how late other processes' likes may show in its counts (0: not at all)")
	num(&c.streamMaxPerUser, "stream-max-per-user", stream.DefaultMaxPerUser, "live streams (GET /v1/me/feed/stream) one user may have open, across the processes sharing Redis; beyond it 429")
	num(&c.streamMax, "stream-max", stream.DefaultMax, "live streams one process keeps open; beyond it 503 with Retry-After")
	dur(&c.streamHeartbeat, "stream-heartbeat", stream.DefaultHeartbeat, "a live stream sends a comment (: ping) at least this often, so proxies keep it and clients notice a dead one")
	num(&c.streamWriteRate, "stream-write-rate", stream.DefaultWriteRate, "live streams a second a process hands a new post to, at most, in waves of 16, so that their writes leave the CPUs to the API's requests; raise it on a machine with cores to spare")
	boolean(&c.autoMigrate, "auto-migrate", true, "apply SQL migrations at start (they are idempotent)")
	str(&c.pprofAddr, "pprof-addr", "", "if set, serve Go's profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060; keep it private")
	str(&c.metricsAddr, "metrics-addr", "", "if set, serve /metrics on this address, e.g. 127.0.0.1:9090, and not on the API's (which then answers it 404); the profiles join it when -pprof-addr is the same address")
	str(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	str(&c.logFormat, "log-format", "json", "json (one object per line, with request_id) or text")
	rule := func(p *limit.Rule, name, def, usage string) {
		var s string
		str(&s, name, def, usage+`: "RATE:BURST" (RATE per second, may be fractional), or "0" for no limit`)
		rules = append(rules, func() error {
			r, err := parseRule(s)
			if err != nil {
				return fmt.Errorf("%s=%q: %w", env(name), s, err)
			}
			*p = r
			return nil
		})
	}
	rule(&c.rateUserWrite, "rate-user-write", formatRule(limit.Rule{Rate: limit.DefaultUserWriteRate, Burst: limit.DefaultUserWriteBurst}), "per-user token bucket of writes (posts, follows, likes, deletes), per process")
	rule(&c.rateUserRead, "rate-user-read", formatRule(limit.Rule{Rate: limit.DefaultUserReadRate, Burst: limit.DefaultUserReadBurst}), "per-user token bucket of reads (feeds, users, posts, likes), per process")
	rule(&c.rateWrite, "rate-write", "0", "token bucket of all writes together, per process")
	rule(&c.rateRead, "rate-read", "0", "token bucket of all reads together, per process")
	num(&c.rateUsers, "rate-users", limit.DefaultMaxUsers, "per-user buckets kept in memory; the least recently active user's is dropped past this")
	num(&c.userMaxInflight, "user-max-inflight", limit.DefaultUserMaxInFlight, "requests one user may have in flight per process, reads and writes together; beyond it 429 (0: no bound)")
	dur(&c.bodyTimeout, "body-timeout", httpapi.DefaultBodyTimeout, "a request body must arrive in full this long after its headers, or the request gets 408 and its connection closes")
	num(&c.maxReads, "max-inflight-reads", limit.DefaultMaxReads, "reads in flight per process; beyond it a read waits up to -shed-wait, then gets 503")
	num(&c.maxWrites, "max-inflight-writes", limit.DefaultMaxWrites, "writes in flight per process; same rule")
	dur(&c.shedWait, "shed-wait", limit.DefaultShedWait, "how long a request beyond the in-flight bound waits for a slot before 503")
	dur(&c.sqlTimeout, "sql-timeout", 5*time.Second, "an API SQL call slower than this fails and counts against the breaker")
	num(&c.breakerFailures, "breaker-failures", 5, "consecutive failed or slow SQL calls that open the breaker")
	dur(&c.breakerCooldown, "breaker-cooldown", 5*time.Second, "how long the open breaker refuses SQL calls before probing")
	num(&c.cacheFailures, "cache-breaker-failures", 5, "consecutive calls to one Redis server (Cluster node) failing as unreachable (network error, timeout, LOADING, CLUSTERDOWN…) that open its cache breaker")
	dur(&c.cacheCooldown, "cache-breaker-cooldown", time.Second, "how long the open cache breaker refuses Redis calls before probing")
	num(&c.sqlReadConns, "sql-read-conns", 24, "MySQL: connections of the API's read pool")
	num(&c.sqlWriteConns, "sql-write-conns", 8, "MySQL: connections of the API's write pool")
	num(&c.sqlWorkConns, "sql-work-conns", 8, "MySQL: connections of the relay, dispatcher and workers")
	num(&c.relayMaxPending, "relay-max-pending", relay.DefaultMaxPending, "the relay pauses while the posts queue holds more messages than this")
	num(&c.tasksMaxPending, "tasks-max-pending", fanout.DefaultMaxPendingTasks, "the dispatcher pauses splitting while the tasks queue holds more than this")
	dur(&c.switchPoll, "switch-poll", degrade.DefaultPoll, "how often a process reads the shared degradation switches")
	dur(&c.heartbeat, "heartbeat", census.DefaultInterval, "how often a process writes its heartbeat (role, rates, latencies, breakers) to the shared cache for the ops console; one silent for three is no longer listed")
	num(&c.hotPosts, "hot-posts", 10_000, "post bodies kept in process memory in front of the cache (0: none)")
	dur(&c.hotPostTTL, "hot-post-ttl", 5*time.Second, "how long a post body stays in process memory")
	num(&c.unreadCap, "unread-cap", timeline.DefaultUnreadCap, "GET/PUT /v1/me/markers/home count unread posts up to this many (unread_capped beyond it); a count reads at most this many ids")
	dur(&c.idempotencyTTL, "idempotency-ttl", tl.IdempotencyTTL, "how long a POST /v1/posts Idempotency-Key is kept: a retry within it gets the first answer, after it the key is new; the work role sweeps expired keys")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: feedd [role] [flags]\n\nroles:\n")
		for _, r := range []string{"all", "serve", "work", "migrate"} {
			fmt.Fprintf(stderr, "  %-8s %s\n", r, roles[r])
		}
		fmt.Fprintf(stderr, "\ncommands (feedd <command> -h for their flags):\n")
		fmt.Fprintf(stderr, "  %-13s %s\n", "bench", "the load tool: write a synthetic graph, drive workloads and report")
		fmt.Fprintf(stderr, "  %-13s %s\n", "import", "import an existing app's users, follows, posts and likes from JSON Lines files")
		fmt.Fprintf(stderr, "  %-13s %s\n", "requeue-dead", "move RabbitMQ's dead letters back onto their queues, attempts reset")
		fmt.Fprintf(stderr, "  %-13s %s\n", "export", "write everything feedd holds about one user as JSON Lines")
		fmt.Fprintf(stderr, "\nflags (each also read from the environment variable in brackets):\n")
		fs.PrintDefaults()
	}
	hideSecretDefaults(fs)
	if err = fs.Parse(args); err != nil {
		return c, err
	}
	if envErr != nil {
		return c, envErr
	}
	for _, r := range rules {
		if err := r(); err != nil {
			return c, err
		}
	}
	if err := errors.Join(checkSecretLength("FEEDD_ADMIN_TOKEN", "admin-token", c.adminToken),
		checkSecretLength("FEEDD_JWT_SECRET", "jwt-secret", c.jwtSecret)); err != nil {
		return c, err
	}
	if c.logFormat != "json" && c.logFormat != "text" {
		return c, fmt.Errorf("log-format must be json or text, got %q", c.logFormat)
	}
	if c.fanoutMode, err = feed.ParseFanoutMode(mode); err != nil {
		return c, err
	}
	if err := checkAMQPQueueType(c.amqpQueue); err != nil {
		return c, err
	}
	if c.mysqlReadDSN != "" && c.mysqlDSN == "" {
		return c, errors.New("FEEDD_MYSQL_READ_DSN needs FEEDD_MYSQL_DSN: the embedded SQLite has no replicas")
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"inbox-max", c.inboxMax}, {"inbox-groups", c.inboxGroups}, {"direct-fanout", c.directFanout}, {"batch-size", c.batchSize}, {"workers", c.workers}, {"fanout-sql-reads", c.fanoutSQLReads}, {"relay-workers", c.relayWorkers}, {"active-days", c.activeDays}, {"pull-threshold", c.pullAt},
		{"rate-users", c.rateUsers}, {"max-inflight-reads", c.maxReads}, {"max-inflight-writes", c.maxWrites},
		{"breaker-failures", c.breakerFailures}, {"cache-breaker-failures", c.cacheFailures}, {"sql-read-conns", c.sqlReadConns}, {"sql-write-conns", c.sqlWriteConns},
		{"sql-work-conns", c.sqlWorkConns}, {"relay-max-pending", c.relayMaxPending}, {"tasks-max-pending", c.tasksMaxPending},
		{"like-batch", c.likeBatch}, {"refresh-max-posts", c.refreshMax}, {"unread-cap", c.unreadCap},
		{"stream-max-per-user", c.streamMaxPerUser}, {"stream-max", c.streamMax}} {
		if v.n <= 0 {
			return c, fmt.Errorf("%s must be positive, got %d", v.name, v.n)
		}
	}
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"like-count-ttl", c.likeCountTTL}, {"fanout-retry-for", c.fanoutRetryFor}, {"purge-lease", c.purgeLease}} {
		if v.d < 0 {
			return c, fmt.Errorf("%s must not be negative, got %s", v.name, v.d)
		}
	}
	if c.idempotencyTTL < time.Millisecond {
		// Keys expire in whole milliseconds.
		return c, fmt.Errorf("idempotency-ttl must be at least 1ms, got %s", c.idempotencyTTL)
	}
	if c.userMaxInflight < 0 {
		return c, fmt.Errorf("user-max-inflight must not be negative (0: no bound), got %d", c.userMaxInflight)
	}
	if c.streamHeartbeat <= 0 {
		return c, fmt.Errorf("stream-heartbeat must be positive, got %s", c.streamHeartbeat)
	}
	if c.streamWriteRate < 100 {
		return c, fmt.Errorf("stream-write-rate must be at least 100 streams a second, got %d", c.streamWriteRate)
	}
	if c.heartbeat <= 0 {
		return c, fmt.Errorf("heartbeat must be positive, got %s", c.heartbeat)
	}
	if c.bodyTimeout <= 0 {
		return c, fmt.Errorf("body-timeout must be positive, got %s", c.bodyTimeout)
	}
	return c, nil
}

// parseRule reads "RATE:BURST" (or "RATE", burst = max(1, RATE)); "0" is
// no limit.
func parseRule(s string) (limit.Rule, error) {
	rs, bs, hasBurst := strings.Cut(strings.TrimSpace(s), ":")
	r, err := strconv.ParseFloat(rs, 64)
	if err != nil || r < 0 {
		return limit.Rule{}, errors.New(`want "RATE:BURST", e.g. "20:200"`)
	}
	b := max(1, int(r))
	if hasBurst {
		if b, err = strconv.Atoi(bs); err != nil || b < 1 {
			return limit.Rule{}, errors.New(`the burst after ":" must be a positive integer`)
		}
	}
	return limit.Rule{Rate: r, Burst: b}, nil
}

// formatRule writes r as parseRule reads it.
func formatRule(r limit.Rule) string {
	return strconv.FormatFloat(r.Rate, 'g', -1, 64) + ":" + strconv.Itoa(r.Burst)
}

// redis reports whether the cache is Redis (a server or a Cluster).
func (c config) redis() bool { return c.redisURL != "" || c.redisCluster != "" }

// embedded reports whether the SQL store is the embedded SQLite file.
func (c config) embedded() bool { return c.mysqlDSN == "" }

// The RabbitMQ settings' defaults, shared by the roles and the
// requeue-dead command, which must find the same queues.
const (
	defaultAMQPPrefix    = "feedd."
	defaultAMQPQueueType = "quorum"
)

func checkAMQPQueueType(t string) error {
	if t != "quorum" && t != "classic" {
		return fmt.Errorf("FEEDD_AMQP_QUEUE_TYPE=%q: want quorum or classic", t)
	}
	return nil
}

// inboxTTL is how long an inbox nobody reads lives: FEEDD_ACTIVE_DAYS.
func (c config) inboxTTL() time.Duration { return time.Duration(c.activeDays) * 24 * time.Hour }
