package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	lockMigrations:   postgresLockMigrations,
	createMigrations: "CREATE TABLE IF NOT EXISTS schema_migrations (" +
		"version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
	forUpdate:  " FOR UPDATE",
	skipLocked: " FOR UPDATE SKIP LOCKED",
	// Read committed is PostgreSQL's default; said here as on MySQL.
	relayTx:      &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	feedJoin:     "JOIN",
	insertFollow: "INSERT INTO follows (follower_id, followee_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
	keepExisting: " ON CONFLICT DO NOTHING",
	keepLikes:    " ON CONFLICT DO NOTHING",
	duplicate:    func(err error) bool { return pgCode(err) == pgUniqueViolation },
	// A deadlock victim and a serialization failure both ran in a
	// transaction that can simply run again.
	retryable: func(err error) bool {
		c := pgCode(err)
		return c == pgDeadlockDetected || c == pgSerializationFailure
	},
	lockWaitTimeout: func(err error) bool { return pgCode(err) == pgLockNotAvailable },

	upsertLikes: " ON CONFLICT (user_id, post_id) DO UPDATE SET" +
		" liked = CASE WHEN excluded.version > likes.version THEN excluded.liked ELSE likes.liked END," +
		" version = GREATEST(likes.version, excluded.version)",
	upsertStats: " ON CONFLICT (post_id) DO UPDATE SET like_count = post_stats.like_count + excluded.like_count," +
		" updated_at = excluded.updated_at",
	addCounts: " ON CONFLICT (id) DO UPDATE SET follower_count = users.follower_count + excluded.follower_count," +
		" following_count = users.following_count + excluded.following_count",
	upsertMarker: " ON CONFLICT (user_id) DO UPDATE SET last_read_id = excluded.last_read_id," +
		" updated_at = excluded.updated_at WHERE excluded.last_read_id > markers.last_read_id",
	bumpStale:       " ON CONFLICT (user_id) DO UPDATE SET mark = stale_feeds.mark + 1",
	updateReturning: true,
	lockLikePairs:   postgresLockLikePairs,
	setMarker: "INSERT INTO markers (user_id, last_read_id, updated_at) VALUES (?, ?, ?)" +
		" ON CONFLICT (user_id) DO UPDATE SET last_read_id = excluded.last_read_id, updated_at = excluded.updated_at" +
		" WHERE excluded.last_read_id > markers.last_read_id RETURNING last_read_id, updated_at",
}

// postgresLockLikePairs takes a transaction advisory lock per (user, post)
// pair of a likes batch, in one order for every writer. The batch writer
// reads each pair's row FOR UPDATE and counts a like only if the row did
// not say liked; PostgreSQL's row locks cover rows that exist only, so two
// writers of the same new like would both read no row and both count it.
// With the lock, the second waits for the first to commit and then reads
// its row. Pairs share a lock when their 32-bit hashes collide, which only
// makes one wait for the other.
func postgresLockLikePairs(ctx context.Context, tx *sql.Tx, pairs []likePair) error {
	// The two-key form, whose keys are apart from the migration lock's.
	const space = 0x6c696b65 // "like"
	keys := make([]int64, len(pairs))
	for i, p := range pairs {
		h := (uint64(p.user)*0x9e3779b97f4a7c15 ^ uint64(p.post)) * 0xc2b2ae3d27d4eb4f
		keys[i] = int64(int32(h >> 32))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for start := 0; start < len(keys); start += chunkSize {
		chunk := keys[start:min(start+chunkSize, len(keys))]
		args := make([]any, len(chunk))
		for i, k := range chunk {
			args[i] = k
		}
		// The VALUES rows are locked in the order written, ascending.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock("+strconv.Itoa(space)+", k::int) FROM (VALUES "+
			strings.TrimSuffix(strings.Repeat("(?::bigint), ", len(chunk)), ", ")+") AS pairs (k)", args...); err != nil {
			return fmt.Errorf("lock %d like pairs: %w", len(chunk), err)
		}
	}
	return nil
}

// postgresLockMigrations takes a session advisory lock: other processes
// migrating the same database wait for it. The lock belongs to conn's
// session, so the migration runs on conn.
func postgresLockMigrations(ctx context.Context, conn *sql.Conn) (func(), error) {
	// Any constant will do; this one spells "feedd" in ASCII.
	const key = 0x6665656464
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", key); err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	return func() {
		// A fresh context: the lock must go even when ctx has ended, or
		// the pooled session would keep it.
		conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(?)", key)
	}, nil
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
	s.replica = r.db
	s.counters = append(s.counters, r.counters...)
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
	where := cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
	c := &counter{pool: pool, rebind: true}
	open := func(n int, timeout time.Duration) *sql.DB {
		cfg := cfg.Copy()
		setRuntime(cfg, "statement_timeout", timeout)
		setRuntime(cfg, "lock_timeout", timeouts.LockWait)
		// A session that dies inside a transaction must not keep its
		// locks for good (a client killed between statements).
		setRuntime(cfg, "idle_in_transaction_session_timeout", time.Minute)
		db := sql.OpenDB(countingConnector{Connector: stdlib.GetConnector(*cfg), c: c})
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(max(1, n/2))
		db.SetConnMaxLifetime(5 * time.Minute)
		db.SetConnMaxIdleTime(time.Minute)
		return db
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
	return &Store{db: db, rdb: rdb, replica: rdb, d: postgresDialect, counters: []*counter{c}, pullCandidates: chunkSize, pgConfig: cfg}, nil
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
