package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgreSQL runs the same queries as MySQL through pgx's database/sql
// driver. The queries are written with ? placeholders; the connection
// rewrites them to $1, $2… (rebind) before pgx sees them, so no query is
// written twice. What differs is in postgresDialect: ON CONFLICT upserts
// (SQLite's syntax, which PostgreSQL invented), no index hints, and the
// error codes of a duplicate key, a deadlock and a lock wait.

// PostgreSQL error codes (SQLSTATE).
const (
	pgUniqueViolation      = "23505"
	pgSerializationFailure = "40001"
	pgDeadlockDetected     = "40P01"
	pgLockNotAvailable     = "55P03"
	// A write refused because the server is read-only: a standby, or a
	// primary demoted behind an address that moved to another server.
	pgReadOnlyTransaction = "25006"
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

var postgresDialect = dialect{
	migrations:       mustSub(migrationFiles, "migrations/postgres"),
	transactionalDDL: true,
	lockMigrationsTx: postgresLockMigrations,
	createMigrations: "CREATE TABLE IF NOT EXISTS schema_migrations (" +
		"version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
	forUpdate:  " FOR UPDATE",
	skipLocked: " FOR UPDATE SKIP LOCKED",
	// Read committed is PostgreSQL's default; said here as on MySQL.
	relayTx:  &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	feedJoin: "JOIN",
	copyFrom: true,
	// A statement of its own, outside any transaction, as VACUUM must be.
	afterBulkLoad: "VACUUM (ANALYZE) users, follows, posts",
	lateralFeed:   true,
	insertFollow:  "INSERT INTO follows (follower_id, followee_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
	keepExisting:  " ON CONFLICT DO NOTHING",
	keepLikes:     " ON CONFLICT DO NOTHING",
	likesFromArrays: "INSERT INTO likes (user_id, post_id, liked, version)" +
		" SELECT u, p, 1, v FROM unnest(?::bigint[], ?::bigint[], ?::bigint[]) AS t(u, p, v) ON CONFLICT DO NOTHING",
	claimLikes: " ON CONFLICT (user_id, post_id) DO UPDATE SET version = likes.version" +
		" RETURNING user_id, post_id, liked, version",
	duplicate: func(err error) bool { return pgCode(err) == pgUniqueViolation },
	// A deadlock victim and a serialization failure both ran in a
	// transaction that can simply run again. So did a transaction that a
	// read-only server refused: it wrote nothing, and its connection
	// closed itself (closeOnReadOnly), so the next attempt connects anew
	// and finds the read-write server among the DSN's hosts. A lost
	// connection (57P01 admin_shutdown, a reset) is not retried here: it
	// may have been lost after the server committed, and the API answers
	// 503 for the client to retry with its Idempotency-Key.
	retryable: func(err error) bool {
		switch pgCode(err) {
		case pgDeadlockDetected, pgSerializationFailure, pgReadOnlyTransaction:
			return true
		}
		return false
	},
	lockWaitTimeout: func(err error) bool { return pgCode(err) == pgLockNotAvailable },

	upsertLikes: " ON CONFLICT (user_id, post_id) DO UPDATE SET" +
		" liked = CASE WHEN excluded.version > likes.version THEN excluded.liked ELSE likes.liked END," +
		" version = GREATEST(likes.version, excluded.version)",
	upsertStats:     onConflictStats,
	addCounts:       onConflictCounts,
	upsertMarker:    onConflictMarker,
	bumpStale:       onConflictStale,
	upsertSync:      " ON CONFLICT (kind, a, b) DO UPDATE SET due_at = GREATEST(excluded.due_at, shard_syncs.due_at + 1)",
	updateReturning: true,
	setMarker: "INSERT INTO markers (user_id, last_read_id, updated_at) VALUES (?, ?, ?)" +
		" ON CONFLICT (user_id) DO UPDATE SET last_read_id = excluded.last_read_id, updated_at = excluded.updated_at" +
		" WHERE excluded.last_read_id > markers.last_read_id RETURNING last_read_id, updated_at",
}

// postgresLockMigrations takes a transaction advisory lock in the
// transaction that applies the migrations: other processes migrating the
// same database wait for it, then find the migrations applied. A session
// lock (pg_advisory_lock) would not do behind PgBouncer in transaction
// mode: the lock and its unlock could run on two server connections, and
// the lock stay with an idle one for good.
func postgresLockMigrations(ctx context.Context, tx *sql.Tx) error {
	// Any constant will do; this one spells "feedd" in ASCII.
	const key = 0x6665656464
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := tx.ExecContext(wait, "SELECT pg_advisory_xact_lock(?)", key); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	return nil
}

// Timeouts bound the statements of one class of work on PostgreSQL, as
// its session's statement_timeout: a query that runs away is cancelled by
// the server, not left holding a connection and its locks. 0 leaves the
// server's setting.
type Timeouts struct {
	// Read bounds a statement of the read pool (the API's reads).
	Read time.Duration
	// Write bounds a statement of the write pool (writes, and background
	// work such as the relay and the fan-out).
	Write time.Duration
	// LockWait bounds a wait for another transaction's row lock
	// (lock_timeout), as innodb_lock_wait_timeout does on MySQL.
	LockWait time.Duration
}

// DefaultTimeouts are the statement timeouts of an API or work process.
// Imports and migrations set none: they run long on purpose.
var DefaultTimeouts = Timeouts{Read: 5 * time.Second, Write: 30 * time.Second, LockWait: 10 * time.Second}

// OpenPostgres connects to PostgreSQL with a libpq connection string, a
// URL such as "postgres://feedd@127.0.0.1:5432/feedd?sslmode=disable" or
// keywords such as "host=127.0.0.1 dbname=feedd", with one pool of 32
// connections and the default timeouts.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	return openPostgres(ctx, dsn, Pools{}, DefaultTimeouts, "primary")
}

// OpenPostgresReplicated is OpenMySQLReplicated for PostgreSQL: sized pools
// on dsn with per-class statement timeouts, and a pool on readDSN (a
// streaming replica, or a pooler in front of several) for the
// lag-tolerant read path; an empty readDSN adds none.
func OpenPostgresReplicated(ctx context.Context, dsn, readDSN string, pools Pools, timeouts Timeouts) (*Store, error) {
	s, err := openPostgres(ctx, dsn, pools, timeouts, "primary")
	if err != nil || readDSN == "" {
		return s, err
	}
	readOnly := Timeouts{Read: timeouts.Read, Write: timeouts.Read}
	r, err := openPostgres(ctx, readDSN, Pools{Write: max(pools.Read, pools.Write)}, readOnly, "replica")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlstore: read replica: %w", err)
	}
	s.readFrom(r)
	return s, nil
}

func openPostgres(ctx context.Context, dsn string, pools Pools, timeouts Timeouts, pool string) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx masks the password when it quotes the string, but a
		// malformed string may not parse far enough to find it.
		return nil, errors.New("sqlstore: open postgres: the DSN does not parse")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	closeOnReadOnly(&cfg.Config)
	where := pgHosts(&cfg.Config) + "/" + cfg.Database
	c := &counter{pool: pool, rebind: true}
	open := func(n int, timeout time.Duration) *sql.DB {
		cfg := cfg.Copy()
		setRuntime(cfg, "statement_timeout", timeout)
		setRuntime(cfg, "lock_timeout", timeouts.LockWait)
		// A session that dies inside a transaction must not keep its
		// locks for good (a client killed between statements).
		setRuntime(cfg, "idle_in_transaction_session_timeout", time.Minute)
		// pgx prepares each statement once per connection, and after five
		// runs PostgreSQL may keep a generic plan, made without the
		// values: for the feed's id windows it guesses 0.5% of posts and
		// walks the whole posts table newest first, 30-60 ms where a
		// custom plan takes 0.5-6 (docs/performance.md). Planning every
		// run costs 0.05 ms for a lookup by ids, 0.5 for the feed's union.
		if _, ok := cfg.RuntimeParams["plan_cache_mode"]; !ok {
			cfg.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
		}
		// Every connection stays until it has idled a minute: a new one
		// is a server process to fork and warm up (a round of
		// authentication, empty catalog caches), and a pool that kept
		// half of them idle opened and closed connections all the time
		// under a load above that half: push reads of the 1M bench ran at a fifth
		// of the rate (962 pages/s against 4,598).
		return serverPool(countingConnector{Connector: stdlib.GetConnector(*cfg), c: c}, n, n)
	}
	if pools.Write <= 0 {
		pools.Write = 32
	}
	db := open(pools.Write, timeouts.Write)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: open postgres %s: %w", where, err)
	}
	rdb := db
	if pools.Read > 0 {
		rdb = open(pools.Read, timeouts.Read)
	}
	return &Store{db: db, rdb: rdb, replica: rdb, d: postgresDialect, counters: []*counter{c}, pullCandidates: chunkSize, lateralMin: lateralMin, pgConfig: cfg}, nil
}

// closeOnReadOnly makes a connection whose server refuses a write as
// read-only (25006) close itself, so that database/sql drops it and the
// next connection looks for the read-write server again through the DSN's
// hosts and target_session_attrs. Without it a connection opened before a
// failover could send writes to a standby for as long as it lives: the
// node that was the primary behind a moved address, or a multi-host DSN
// without target_session_attrs. FATAL errors still close it, as pgx's
// default handler does.
func closeOnReadOnly(cfg *pgconn.Config) {
	next := cfg.OnPgError
	cfg.OnPgError = func(c *pgconn.PgConn, pe *pgconn.PgError) bool {
		if pe.Code == pgReadOnlyTransaction {
			return false
		}
		return next == nil || next(c, pe)
	}
}

// pgHosts names every host of cfg, host:port, comma-separated as in a
// multi-host URL, for the messages of a failed open: the first host
// alone would hide that the others were tried too.
func pgHosts(cfg *pgconn.Config) string {
	hosts := []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	for _, f := range cfg.Fallbacks {
		h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port)))
		if !slices.Contains(hosts, h) { // sslmode=prefer lists each host twice
			hosts = append(hosts, h)
		}
	}
	return strings.Join(hosts, ",")
}

// setRuntime sets a session parameter in milliseconds unless the DSN
// already sets it or d is 0.
func setRuntime(cfg *pgx.ConnConfig, name string, d time.Duration) {
	if d <= 0 {
		return
	}
	if _, ok := cfg.RuntimeParams[name]; ok {
		return
	}
	cfg.RuntimeParams[name] = strconv.FormatInt(d.Milliseconds(), 10)
}

// rebind rewrites the ? placeholders of query to PostgreSQL's $1, $2…,
// leaving quoted strings and identifiers alone.
func rebind(query string) string {
	if strings.IndexByte(query, '?') < 0 {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(query); i++ {
		ch := query[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}

// copyRows is bulkInsert on PostgreSQL: the n rows go in one COPY, a
// stream of binary rows in one statement (so one transaction), without
// the parse and plan of a multi-row INSERT or its limit of 65,535 bound
// parameters. A duplicate key fails the whole COPY with 23505, as an
// INSERT would.
func (s *Store) copyRows(ctx context.Context, table string, columns []string, n int, row func(i int, args []any) []any) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		cc, ok := dc.(*countingConn)
		if !ok {
			return fmt.Errorf("copy into %s: a %T connection, not the store's", table, dc)
		}
		pc, err := cc.pgx(ctx, "copy")
		if err != nil {
			return fmt.Errorf("copy into %s: %w", table, err)
		}
		// pgx encodes each row before it asks for the next, so one slice
		// of arguments serves them all.
		args := make([]any, 0, len(columns))
		_, err = pc.CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromSlice(n, func(i int) ([]any, error) {
			args = row(i, args[:0])
			return args, nil
		}))
		return err
	})
}
