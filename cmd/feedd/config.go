package main

import (
	"errors"
	"fmt"
	"github.com/feedd/feedd/internal/ranked"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/limit"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
)

// config is every setting of feedd, as the settings table (settings.go)
// declares them: each has a flag and an environment variable (FEEDD_ +
// the flag name upper-cased, dashes as underscores); a flag wins over the
// environment.
type config struct {
	role string
	// cmdline is the command line as /debug/pprof/cmdline serves it:
	// NUL-separated, secrets hidden.
	cmdline string

	addr           string
	dataDir        string
	adminToken     string
	jwtSecret      string
	mysqlDSN       string
	redisURL       string
	redisCluster   string
	mysqlReadDSN   string
	postgresDSN    string
	postgresRead   string
	shards         int
	shardDSNs      string
	replicaMaxLag  time.Duration
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
	sqlReadTimeout  time.Duration
	sqlWriteTimeout time.Duration
	sqlLockTimeout  time.Duration
	relayMaxPending int
	tasksMaxPending int
	switchPoll      time.Duration
	heartbeat       time.Duration
	hotPosts        int
	hotPostTTL      time.Duration
	idempotencyTTL  time.Duration
	unreadCap       int

	// The ranked feed's settings (FEEDD_RANK_*).
	rank ranked.Config

	// The live stream.
	streamMaxPerUser int
	streamMax        int
	streamHeartbeat  time.Duration
	streamWriteRate  int

	// Likes (docs/likes.md).
	likeBatch    int
	likeLinger   time.Duration
	likeCountTTL time.Duration
	noticeWindow time.Duration
}

// parseConfig reads the settings of a role (args[0], or all when args
// start with a flag); every error it returns but -h's is a usageError.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (c config, err error) {
	c.role = "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		c.role, args = args[0], args[1:]
	}
	cmd, ok := findCommand(commandTable(), c.role)
	if !ok || !cmd.role {
		return c, unknownCommand(c.role)
	}
	head := "usage: feedd " + c.role + " [flags]\n\n" + cmd.summary + "\n"
	if c.role == "all" {
		head = overview()
	}
	f := newFlagSet("feedd "+c.role, getenv, stderr, head)
	f.settings(&c)
	f.show = func(o *opt) bool { return o.roles.reads(c.role) }
	if err := f.parse(args); err != nil {
		return c, err
	}
	return c, c.checkSQL()
}

// checkSQL refuses settings that name no one SQL server: both servers, or
// a replica without its primary. Every role and command that takes the
// DSNs calls it after parsing them.
func (c config) checkSQL() error {
	switch {
	case c.shardDSNs != "" && c.mysqlDSN != "":
		return usageError{errors.New("FEEDD_SHARD_DSNS and FEEDD_MYSQL_DSN are both set: with shards, FEEDD_SHARD_DSNS names every database; unset FEEDD_MYSQL_DSN")}
	case c.shardDSNs != "" && c.postgresDSN != "":
		return usageError{errors.New("FEEDD_SHARD_DSNS and FEEDD_POSTGRES_DSN are both set: with shards, FEEDD_SHARD_DSNS names every database; unset FEEDD_POSTGRES_DSN")}
	case c.shardDSNs == "" && c.shards != 1:
		// The count's own rule first (shards.Parse checks it before the
		// map): a map of every shard on one server passes if the count is
		// right.
		if _, err := shards.Parse(c.shards, fmt.Sprintf("0-%d=-", c.shards-1)); err != nil {
			return usageError{err}
		}
		return usageError{fmt.Errorf("FEEDD_SHARDS is %d but FEEDD_SHARD_DSNS is not set: say where the shards live, e.g. 0-%d=root@tcp(db1:3306)/feedd;%d-%d=root@tcp(db2:3306)/feedd", c.shards, c.shards/2-1, c.shards/2, c.shards-1)}
	case c.shardDSNs != "":
		if _, err := c.shardMap(); err != nil {
			return err
		}
		return nil
	case c.mysqlDSN != "" && c.postgresDSN != "":
		return usageError{errors.New("FEEDD_MYSQL_DSN and FEEDD_POSTGRES_DSN are both set: feedd keeps its data in one SQL database; set one of them (or neither, for the embedded SQLite)")}
	case c.mysqlReadDSN != "" && c.mysqlDSN == "":
		return usageError{errors.New("FEEDD_MYSQL_READ_DSN needs FEEDD_MYSQL_DSN: a MySQL replica serves the reads of a MySQL primary")}
	case c.postgresRead != "" && c.postgresDSN == "":
		return usageError{errors.New("FEEDD_POSTGRES_READ_DSN needs FEEDD_POSTGRES_DSN: a PostgreSQL replica serves the reads of a PostgreSQL primary")}
	}
	return nil
}

// shardMap is the layout FEEDD_SHARDS and FEEDD_SHARD_DSNS give; an
// error is a usageError.
func (c config) shardMap() (shards.Map, error) {
	m, err := shards.Parse(c.shards, c.shardDSNs)
	if err != nil {
		return shards.Map{}, usageError{err}
	}
	return m, nil
}

// sharded reports whether the SQL truth is logical shards
// (FEEDD_SHARD_DSNS), whatever their number.
func (c config) sharded() bool { return c.shardDSNs != "" }

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

// formatRule writes r as parseRule reads it: "0" for no limit.
func formatRule(r limit.Rule) string {
	if r.Rate == 0 {
		return "0"
	}
	return strconv.FormatFloat(r.Rate, 'g', -1, 64) + ":" + strconv.Itoa(r.Burst)
}

// redis reports whether the cache is Redis (a server or a Cluster).
func (c config) redis() bool { return c.redisURL != "" || c.redisCluster != "" }

// embedded reports whether the SQL store is the embedded SQLite file,
// not a server (MySQL or PostgreSQL) that several processes share.
func (c config) embedded() bool { return c.mysqlDSN == "" && c.postgresDSN == "" && !c.sharded() }

// sqlBackend names the SQL store, as the start line, bench's manifest and
// the errors say it: sqlite, mysql, postgres or shards (on MySQL or
// PostgreSQL servers, as FEEDD_SHARD_DSNS says).
func (c config) sqlBackend() string {
	switch {
	case c.sharded():
		return "shards"
	case c.postgresDSN != "":
		return "postgres"
	case c.mysqlDSN != "":
		return "mysql"
	}
	return "sqlite"
}

// sqlDSNVar is the variable that names the SQL server ("" when embedded),
// for messages that tell the operator what to set.
func (c config) sqlDSNVar() string {
	switch {
	case c.sharded():
		return "FEEDD_SHARD_DSNS"
	case c.postgresDSN != "":
		return "FEEDD_POSTGRES_DSN"
	case c.mysqlDSN != "":
		return "FEEDD_MYSQL_DSN"
	}
	return ""
}

// timeouts are the statement timeouts of a serving or working process
// on PostgreSQL.
func (c config) timeouts() sqlstore.Timeouts {
	return sqlstore.Timeouts{Read: c.sqlReadTimeout, Write: c.sqlWriteTimeout, LockWait: c.sqlLockTimeout}
}

// inboxTTL is how long an inbox nobody reads lives: FEEDD_ACTIVE_DAYS.
func (c config) inboxTTL() time.Duration { return time.Duration(c.activeDays) * 24 * time.Hour }
