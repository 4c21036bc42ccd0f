package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/fanout"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/httpapi"
	"github.com/feedd/feedd/internal/likes"
	"github.com/feedd/feedd/internal/limit"
	"github.com/feedd/feedd/internal/ranked"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/relay"
	"github.com/feedd/feedd/internal/social"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/stream"
	"github.com/feedd/feedd/internal/timeline"
)

// The concerns help groups the settings by; docs/configuration.md has a
// section of each title (TestConfigurationDoc).
const (
	groupProcess  = "The process"
	groupBackends = "Backends"
	groupRead     = "Inboxes, fan-out and the read path"
	groupRank     = "Ranked feed"
	groupLikes    = "Likes"
	groupStream   = "Live stream"
	groupDefences = "Defences"
)

var groups = []string{groupProcess, groupBackends, groupRead, groupRank, groupLikes, groupStream, groupDefences}

// roleSet is the roles that read a setting: help shows a role only
// those. Every role accepts every setting, as it always has, so that one
// command line or environment serves a whole deployment.
type roleSet uint8

const (
	readByServe roleSet = 1 << iota
	readByWork
	readByMigrate
	readByBoth = readByServe | readByWork
	readByAll  = readByBoth | readByMigrate
)

// reads reports whether role reads a setting of r.
func (r roleSet) reads(role string) bool {
	switch role {
	case "serve":
		return r&readByServe != 0
	case "work":
		return r&readByWork != 0
	case "migrate":
		return r&readByMigrate != 0
	}
	return r&readByBoth != 0 // all
}

// setting is a row of the table: the variable is FEEDD_ and the flag's
// name upper-cased, dashes as underscores.
func setting(group string, roles roleSet, name, usage string, v value) *opt {
	return &opt{name: name, env: envFor("FEEDD_", name), group: group, usage: usage, roles: roles, value: v}
}

func secret(kind secretKind, o *opt) *opt {
	o.secret = kind
	return o
}

// The RabbitMQ settings' defaults, shared by the roles and the
// requeue-dead command, which must find the same queues.
const (
	defaultAMQPPrefix    = "feedd."
	defaultAMQPQueueType = "quorum"
)

// settings is every setting of feedd, stored in c: the one table that the
// roles, the commands (which pick the ones they read), help and the
// documentation's test read. A setting that a package owns takes its
// default from that package.
func settings(c *config) []*opt {
	tl := timeline.DefaultConfig()
	rk := ranked.DefaultConfig()
	return []*opt{
		setting(groupProcess, readByBoth, "addr", "HTTP listen address", bind(textKind, &c.addr, "127.0.0.1:8080")),
		setting(groupProcess, readByAll, "data-dir", "directory of the embedded SQLite database and generated secrets", bind(textKind, &c.dataDir, "./data")),
		secret(wholeSecret, setting(groupProcess, readByBoth, "admin-token", "admin bearer token, at least 32 bytes; generated into the data dir on the embedded default, required with MySQL or PostgreSQL", bind(textKind, &c.adminToken, "", checkSecret))),
		secret(wholeSecret, setting(groupProcess, readByBoth, "jwt-secret", "HS256 secret for user tokens; same rule as the admin token", bind(textKind, &c.jwtSecret, "", checkSecret))),
		setting(groupProcess, readByBoth, "auto-migrate", "apply SQL migrations at start (they are idempotent)", bind(boolKind, &c.autoMigrate, true)),
		setting(groupProcess, readByAll, "log-level", "debug, info, warn or error", bind(textKind, &c.logLevel, "info", checkLogLevel)),
		setting(groupProcess, readByAll, "log-format", "json (one object per line, with request_id) or text", bind(textKind, &c.logFormat, "json", oneOf("json", "text"))),
		setting(groupProcess, readByBoth, "pprof-addr", "if set, serve Go's profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060; keep it private", bind(textKind, &c.pprofAddr, "")),
		setting(groupProcess, readByBoth, "metrics-addr", "if set, serve /metrics on this address, e.g. 127.0.0.1:9090, and not on the API's (which then answers it 404); the profiles join it when -pprof-addr is the same address", bind(textKind, &c.metricsAddr, "")),
		setting(groupProcess, readByBoth, "heartbeat", "how often a process writes its heartbeat (role, rates, latencies, breakers) to the shared cache for the ops console; one silent for three is no longer listed", bind(durKind, &c.heartbeat, census.DefaultInterval, positiveDur)),

		secret(credentialURL, setting(groupBackends, readByAll, "mysql-dsn", "MySQL/MariaDB DSN, e.g. root@tcp(127.0.0.1:3306)/feedd; several hosts (a Galera cluster: writes go through the first ready one, then fail over), e.g. root@tcp(db1:3306,db2:3306,db3:3306)/feedd; empty: embedded SQLite", bind(textKind, &c.mysqlDSN, ""))),
		secret(credentialURL, setting(groupBackends, readByAll, "mysql-read-dsn", "DSN of a MySQL read replica (or a proxy to several) for the lag-tolerant read path; empty: the primary", bind(textKind, &c.mysqlReadDSN, ""))),
		secret(connString, setting(groupBackends, readByAll, "postgres-dsn", "PostgreSQL connection string as libpq takes it: a URL, e.g. postgres://feedd@127.0.0.1:5432/feedd?sslmode=disable, or keywords, e.g. host=db dbname=feedd user=feedd; not with FEEDD_MYSQL_DSN; empty: embedded SQLite (or MySQL)", bind(textKind, &c.postgresDSN, ""))),
		secret(connString, setting(groupBackends, readByAll, "postgres-read-dsn", "connection string of a PostgreSQL streaming replica (or a pooler in front of several) for the lag-tolerant read path; empty: the primary", bind(textKind, &c.postgresRead, ""))),
		// Shards (docs/operations.md, "Sharding"): the count is fixed when
		// the data is created; the map says where each shard lives.
		setting(groupBackends, readByAll, "shards", "logical shards the SQL truth is spread over by user id, fixed when the data is created: 1 (one database, FEEDD_MYSQL_DSN's or FEEDD_POSTGRES_DSN's) or a power of two up to 256 with FEEDD_SHARD_DSNS", bind(intKind, &c.shards, 1)),
		secret(shardList, setting(groupBackends, readByAll, "shard-dsns", "where the logical shards live: FROM-TO=DSN;FROM-TO=DSN…, e.g. 0-31=root@tcp(db1:3306)/feedd;32-63=root@tcp(db2:3306)/feedd (MySQL DSNs or PostgreSQL URLs); each shard is the database PREFIX_s<k> of its server, created by feedd migrate; every shard placed once; not with FEEDD_MYSQL_DSN or FEEDD_POSTGRES_DSN", bind(textKind, &c.shardDSNs, ""))),
		// Read replicas: how stale a replica may be and still be read.
		setting(groupBackends, readByBoth, "replica-max-lag", "a read replica (FEEDD_MYSQL_READ_DSN, FEEDD_POSTGRES_READ_DSN) further behind the primary than this is not read: its reads go to the primary until it catches up", bind(durKind, &c.replicaMaxLag, 10*time.Second, positiveDur)),
		secret(credentialURL, setting(groupBackends, readByBoth, "redis-url", "Redis URL, e.g. redis://127.0.0.1:6379/0, or a Cluster: redis+cluster://host:7000,host:7001; empty: in-process cache", bind(textKind, &c.redisURL, ""))),
		secret(credentialURL, setting(groupBackends, readByBoth, "redis-cluster", "Redis Cluster seed nodes, host:port,host:port…; makes FEEDD_REDIS_URL (then optional) give only credentials and options. A redis+cluster://host:port,host:port URL does the same alone", bind(textKind, &c.redisCluster, ""))),
		setting(groupBackends, readByBoth, "redis-prefix", "prefix of every Redis key", bind(textKind, &c.redisPrefix, "feedd:")),
		secret(credentialURL, setting(groupBackends, readByBoth, "amqp-url", "RabbitMQ URL, e.g. amqp://guest:guest@127.0.0.1:5672/; several, comma-separated, to fail over between cluster nodes; empty: in-process queue", bind(textKind, &c.amqpURL, ""))),
		setting(groupBackends, readByBoth, "amqp-queue-type", "quorum (replicated, for a RabbitMQ cluster) or classic", bind(textKind, &c.amqpQueue, defaultAMQPQueueType, oneOf("quorum", "classic"))),
		setting(groupBackends, readByBoth, "amqp-prefix", "prefix of every RabbitMQ queue and exchange", bind(textKind, &c.amqpPrefix, defaultAMQPPrefix)),

		setting(groupRead, readByBoth, "inbox-max", "entries kept per home-feed inbox", bind(intKind, &c.inboxMax, feed.DefaultInboxMax, positive)),
		setting(groupRead, readByBoth, "inbox-groups", "Redis hash tags the inboxes are spread over: a fan-out pushes into one group's inboxes with one script call, so fewer are cheaper and more spread a Cluster better; changing it rebuilds every inbox from SQL", bind(intKind, &c.inboxGroups, rediscache.DefaultInboxGroups, positive)),
		setting(groupRead, readByWork, "direct-fanout", "authors with fewer followers are fanned out by the dispatcher directly, others in batch tasks", bind(intKind, &c.directFanout, fanout.DefaultDirectFanout, positive)),
		setting(groupRead, readByWork, "batch-size", "followers per fan-out batch task", bind(intKind, &c.batchSize, fanout.DefaultBatchSize, positive)),
		setting(groupRead, readByWork, "workers", "concurrent batch-task handlers per work process", bind(intKind, &c.workers, 8, positive)),
		setting(groupRead, readByWork, "fanout-sql-reads", "follower reads of the fan-out running at once per work process: they share the SQL primary with the API's writes", bind(intKind, &c.fanoutSQLReads, fanout.DefaultSQLReads, positive)),
		setting(groupRead, readByWork, "fanout-retry-for", "a fan-out step that fails (Redis or SQL unreachable) is retried this long while its message is held, before the broker's redeliveries count", bind(durKind, &c.fanoutRetryFor, fanout.DefaultRetryFor, notNegative)),
		setting(groupRead, readByWork, "purge-lease", "a work process owns a user's purge this long after its last batch: if it dies, another resumes the purge after this", bind(durKind, &c.purgeLease, social.DefaultPurgeLease, notNegative)),
		setting(groupRead, readByWork, "relay-workers", "concurrent outbox relay loops per work process", bind(intKind, &c.relayWorkers, relay.DefaultWorkers, positive)),
		setting(groupRead, readByBoth, "fanout-mode", "timeline model: push, pull, or hybrid (push below the pull threshold, pull above)", bind(modeKind, &c.fanoutMode, tl.Policy.Mode)),
		setting(groupRead, readByBoth, "pull-threshold", "in hybrid mode, authors with at least this many followers are pulled at read time, not fanned out (back to push below 90% of it)", bind(intKind, &c.pullAt, int(tl.Policy.PullThreshold), positive)),
		setting(groupRead, readByBoth, "active-days", "an inbox unread for this many days expires and is rebuilt when its reader returns", bind(intKind, &c.activeDays, int(tl.InboxTTL/(24*time.Hour)), positive)),
		setting(groupRead, readByServe, "refresh-interval", "at most one smart refresh of a reader's first page per interval", bind(durKind, &c.refresh, tl.RefreshInterval)),
		setting(groupRead, readByServe, "refresh-horizon", "a smart refresh looks for posts at most this far back (older ones not yet delivered arrive with their fan-out)", bind(durKind, &c.refreshHorizon, tl.RefreshHorizon)),
		setting(groupRead, readByServe, "refresh-max-posts", "nor further back than the newest this many posts by anyone (bounds the refresh query when posts come fast)", bind(intKind, &c.refreshMax, tl.RefreshMaxPosts, positive)),
		setting(groupRead, readByServe, "hot-posts", "post bodies kept in process memory in front of the cache (0: none)", bind(intKind, &c.hotPosts, 10_000)),
		setting(groupRead, readByServe, "hot-post-ttl", "how long a post body stays in process memory", bind(durKind, &c.hotPostTTL, 5*time.Second)),
		// Keys expire in whole milliseconds.
		setting(groupRead, readByBoth, "idempotency-ttl", "how long a POST /v1/posts Idempotency-Key is kept: a retry within it gets the first answer, after it the key is new; the work role sweeps expired keys", bind(durKind, &c.idempotencyTTL, social.DefaultConfig().IdempotencyTTL, atLeast(time.Millisecond, ""))),
		setting(groupRead, readByServe, "unread-cap", "GET/PUT /v1/me/markers/home count unread posts up to this many (unread_capped beyond it); a count reads at most this many ids", bind(intKind, &c.unreadCap, timeline.DefaultUnreadCap, positive)),
		setting(groupRead, readByBoth, "notification-window", "notifications of one kind about one post (or the follows of a user) form one group while its newest is less than this after its first; then a new group starts", bind(durKind, &c.noticeWindow, feed.DefaultNoticeWindow, positiveDur)),

		// The ranked feed's score (docs/ranking.md has the formula).
		setting(groupRank, readByServe, "rank-window", "GET /v1/me/feed?order=ranked ranks the latest feed's posts of this window", bind(durKind, &c.rank.Window, rk.Window, positiveDur)),
		setting(groupRank, readByServe, "rank-candidates", "a ranked feed ranks at most this many posts (up to 10000)", bind(intKind, &c.rank.Candidates, rk.Candidates, between(1, ranked.MaxCandidates))),
		setting(groupRank, readByServe, "rank-half-life", "a post's score halves every half-life of its age", bind(durKind, &c.rank.HalfLife, rk.HalfLife, positiveDur)),
		setting(groupRank, readByServe, "rank-engagement", "weight of ln(1+likes) in the score (0: likes do not count)", bind(floatKind, &c.rank.Engagement, rk.Engagement, nonNegativeNumber)),
		setting(groupRank, readByServe, "rank-affinity", "weight of ln(1+the reader's recent likes of the author) in the score (0: affinity does not count)", bind(floatKind, &c.rank.Affinity, rk.Affinity, nonNegativeNumber)),
		setting(groupRank, readByServe, "rank-affinity-likes", "how many of the reader's latest likes make their affinity", bind(intKind, &c.rank.AffinityLikes, rk.AffinityLikes, positive)),
		setting(groupRank, readByServe, "rank-regather", "a reader's ranked feed reuses the candidates it gathered (with the posts that came after) this long, then gathers them anew; a follow or unfollow gathers anew at once", bind(durKind, &c.rank.Regather, rk.Regather, positiveDur)),
		setting(groupRank, readByServe, "rank-snapshot-ttl", "a ranked feed's snapshot (what its cursor pages through) lives this long after its last page; then its cursor answers 410 cursor_expired", bind(durKind, &c.rank.SnapshotTTL, rk.SnapshotTTL, atLeast(time.Second, ""))),

		setting(groupLikes, readByBoth, "like-batch", "like events written to SQL in one batch at most", bind(intKind, &c.likeBatch, likes.DefaultMaxBatch, positive)),
		setting(groupLikes, readByWork, "like-linger", "with RabbitMQ, how long a batch of like events waits to fill before it is written", bind(durKind, &c.likeLinger, likes.DefaultLinger)),
		setting(groupLikes, readByServe, "like-count-ttl", "how long a process keeps a like count in memory before asking Redis again: how late other processes' likes may show in its counts (0: not at all)", bind(durKind, &c.likeCountTTL, likes.DefaultLocalCountTTL, notNegative)),

		setting(groupStream, readByServe, "stream-max-per-user", "live streams (GET /v1/me/feed/stream) one user may have open, across the processes sharing Redis; beyond it 429", bind(intKind, &c.streamMaxPerUser, stream.DefaultMaxPerUser, positive)),
		setting(groupStream, readByServe, "stream-max", "live streams one process keeps open; beyond it 503 with Retry-After", bind(intKind, &c.streamMax, stream.DefaultMax, positive)),
		setting(groupStream, readByServe, "stream-heartbeat", "a live stream sends a comment (: ping) at least this often, so proxies keep it and clients notice a dead one", bind(durKind, &c.streamHeartbeat, stream.DefaultHeartbeat, positiveDur)),
		setting(groupStream, readByServe, "stream-write-rate", "live streams a second a process hands a new post to, at most, in waves of 16, so that their writes leave the CPUs to the API's requests; raise it on a machine with cores to spare", bind(intKind, &c.streamWriteRate, stream.DefaultWriteRate, atLeast(100, " streams a second"))),

		setting(groupDefences, readByServe, "rate-user-write", "per-user token bucket of writes (posts, follows, likes, deletes), per process"+ruleUsage, bind(ruleKind, &c.rateUserWrite, limit.Rule{Rate: limit.DefaultUserWriteRate, Burst: limit.DefaultUserWriteBurst})),
		setting(groupDefences, readByServe, "rate-user-read", "per-user token bucket of reads (feeds, users, posts, likes), per process"+ruleUsage, bind(ruleKind, &c.rateUserRead, limit.Rule{Rate: limit.DefaultUserReadRate, Burst: limit.DefaultUserReadBurst})),
		// No limit: "0", as parseRule reads it.
		setting(groupDefences, readByServe, "rate-write", "token bucket of all writes together, per process"+ruleUsage, bind(ruleKind, &c.rateWrite, limit.Rule{Burst: 1})),
		setting(groupDefences, readByServe, "rate-read", "token bucket of all reads together, per process"+ruleUsage, bind(ruleKind, &c.rateRead, limit.Rule{Burst: 1})),
		setting(groupDefences, readByServe, "rate-users", "per-user buckets kept in memory; the least recently active user's is dropped past this", bind(intKind, &c.rateUsers, limit.DefaultMaxUsers, positive)),
		setting(groupDefences, readByServe, "user-max-inflight", "requests one user may have in flight per process, reads and writes together; beyond it 429 (0: no bound)", bind(intKind, &c.userMaxInflight, limit.DefaultUserMaxInFlight, notNegative)),
		setting(groupDefences, readByServe, "body-timeout", "a request body must arrive in full this long after its headers, or the request gets 408 and its connection closes", bind(durKind, &c.bodyTimeout, httpapi.DefaultBodyTimeout, positiveDur)),
		setting(groupDefences, readByServe, "max-inflight-reads", "reads in flight per process; beyond it a read waits up to -shed-wait, then gets 503", bind(intKind, &c.maxReads, limit.DefaultMaxReads, positive)),
		setting(groupDefences, readByServe, "max-inflight-writes", "writes in flight per process; same rule", bind(intKind, &c.maxWrites, limit.DefaultMaxWrites, positive)),
		setting(groupDefences, readByServe, "shed-wait", "how long a request beyond the in-flight bound waits for a slot before 503", bind(durKind, &c.shedWait, limit.DefaultShedWait)),
		setting(groupDefences, readByServe, "sql-timeout", "an API SQL call slower than this fails and counts against the breaker", bind(durKind, &c.sqlTimeout, 5*time.Second)),
		setting(groupDefences, readByServe, "breaker-failures", "consecutive failed or slow SQL calls that open the breaker", bind(intKind, &c.breakerFailures, 5, positive)),
		setting(groupDefences, readByServe, "breaker-cooldown", "how long the open breaker refuses SQL calls before probing", bind(durKind, &c.breakerCooldown, time.Second)),
		setting(groupDefences, readByBoth, "cache-breaker-failures", "consecutive calls to one Redis server (Cluster node) failing as unreachable (network error, timeout, LOADING, CLUSTERDOWN…) that open its cache breaker", bind(intKind, &c.cacheFailures, 5, positive)),
		setting(groupDefences, readByBoth, "cache-breaker-cooldown", "how long the open cache breaker refuses Redis calls before probing", bind(durKind, &c.cacheCooldown, time.Second)),
		setting(groupDefences, readByServe, "sql-read-conns", "SQL server: connections of the API's read pool", bind(intKind, &c.sqlReadConns, 24, positive)),
		setting(groupDefences, readByServe, "sql-write-conns", "SQL server: connections of the API's write pool", bind(intKind, &c.sqlWriteConns, 8, positive)),
		setting(groupDefences, readByWork, "sql-work-conns", "SQL server: connections of the relay, dispatcher and workers", bind(intKind, &c.sqlWorkConns, 8, positive)),
		// Migrations, imports and the other commands set none: they run
		// long on purpose.
		setting(groupDefences, readByBoth, "sql-read-timeout", "PostgreSQL: statement_timeout of the read pool's and the replica's sessions: the server cancels a read running longer (0: the server's setting)", bind(durKind, &c.sqlReadTimeout, sqlstore.DefaultTimeouts.Read, notNegative)),
		setting(groupDefences, readByBoth, "sql-write-timeout", "PostgreSQL: statement_timeout of the write pool's sessions (writes, the relay, the fan-out's reads) (0: the server's setting)", bind(durKind, &c.sqlWriteTimeout, sqlstore.DefaultTimeouts.Write, notNegative)),
		setting(groupDefences, readByBoth, "sql-lock-timeout", "PostgreSQL: lock_timeout of every session: a statement that waits longer for another transaction's lock fails, as innodb_lock_wait_timeout makes it on MySQL (0: the server's setting)", bind(durKind, &c.sqlLockTimeout, sqlstore.DefaultTimeouts.LockWait, notNegative)),
		setting(groupDefences, readByWork, "relay-max-pending", "the relay pauses while the posts queue holds more messages than this", bind(intKind, &c.relayMaxPending, relay.DefaultMaxPending, positive)),
		setting(groupDefences, readByWork, "tasks-max-pending", "the dispatcher pauses splitting while the tasks queue holds more than this", bind(intKind, &c.tasksMaxPending, fanout.DefaultMaxPendingTasks, positive)),
		setting(groupDefences, readByServe, "switch-poll", "how often a process reads the shared degradation switches", bind(durKind, &c.switchPoll, degrade.DefaultPoll)),
	}
}

const ruleUsage = `: "RATE:BURST" (RATE per second, may be fractional), or "0" for no limit`

// checkLogLevel accepts what slog reads (debug, info, warn, error, any
// case, with an offset such as warn+2), and nothing else: a level it
// cannot read would otherwise log at info without a word.
func checkLogLevel(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return errors.New("want debug, info, warn or error")
	}
	return nil
}

// checkSecret refuses an operator's admin token or JWT secret that is too
// short to resist guessing, or blank: a token of spaces, or one with
// spaces around it, is one no client sends back as it was set (headers
// and files lose them).
func checkSecret(v string) error {
	const how = "e.g. the output of `openssl rand -hex 32`"
	switch trimmed := strings.TrimSpace(v); {
	case v == "":
		return nil // generated, or required later with a SQL server
	case trimmed == "":
		return fmt.Errorf("is blank (%d bytes of white space): want a random secret of at least %d bytes, %s", len(v), minSecretLen, how)
	case trimmed != v:
		return errors.New("starts or ends with white space, which clients and files drop: remove it")
	case len(v) < minSecretLen:
		return fmt.Errorf("is %d bytes long: want at least %d, %s", len(v), minSecretLen, how)
	}
	return nil
}
