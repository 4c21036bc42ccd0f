// Package sqlstore is feedd's source of truth: users, posts, the follow
// graph, idempotency keys and the transactional outbox, on database/sql.
// One Store runs on MySQL / MariaDB or PostgreSQL (production, several
// processes) and on embedded SQLite (the single-process default); the
// differences live in a small dialect value. Everything the caches hold can be rebuilt from here.
package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// Store is the SQL store. It is safe for concurrent use.
type Store struct {
	// db takes every write. On SQLite it holds a single connection, so
	// writers queue in database/sql (first come, first served) instead of
	// polling SQLite's lock, and never see SQLITE_BUSY.
	db *sql.DB
	// rdb takes plain reads. On SQLite it is a separate read-only pool:
	// in WAL mode readers never wait for the writer. On MySQL it is db,
	// unless Pools.Read gives reads a pool of their own (a bulkhead).
	rdb *sql.DB
	// replica takes the read path that tolerates replication lag: the
	// queries of a feed page (inbox rebuild, refresh, SQL paging, pulled
	// authors, hydration) and of user and post listings. It is rdb unless
	// a read DSN was given (OpenMySQLReplicated). Anything that must see
	// its own writes — a post just created, an idempotent retry, the
	// follower lists a fan-out walks, the outbox — stays on rdb or db.
	replica *sql.DB
	// lag decides, read by read, whether the replica takes a
	// lag-tolerant read (replica.go); nil without a read replica.
	lag *lagWatch
	d   dialect
	// counters count the statements of the MySQL pools (count.go).
	counters []*counter
	// pgConfig is a PostgreSQL store's connection settings, for the
	// connection that listens for outbox notifications; nil elsewhere.
	pgConfig *pgx.ConnConfig
	// pullCandidates is how many pulled authors PullFollowees checks
	// against a reader's follows one by one; beyond it, it joins.
	pullCandidates int
	// lateralMin is the n above which a wide window's feed is read
	// followee by followee, where the dialect can (lateralFeed).
	lateralMin int
	// nodes is the cluster of a multi-host MySQL DSN (failover.go); nil
	// for one host.
	nodes *cluster
	// noticeWindow is how far apart a notification group's first and
	// newest notifications may be, in nanoseconds (0: the default;
	// SetNoticeWindow).
	noticeWindow atomic.Int64
}

// OpenSQLite opens (creating it if needed) the SQLite database at path,
// in WAL mode. path must name a file: the store opens it twice, once for
// the single writer and once for the readers. The file and its -wal and
// -shm companions are readable and writable by the process's user only
// (0600), whatever the umask.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlstore: open sqlite %q: want a plain file path", path)
	}
	if err := makePrivate(path); err != nil {
		return nil, fmt.Errorf("sqlstore: open sqlite %q: %w", path, err)
	}
	q := url.Values{}
	// busy_timeout only matters when another process writes the same file;
	// inside this process the write pool already serializes writers.
	q.Add("_pragma", "busy_timeout(10000)")
	// The database is the source of truth: a post acknowledged to a client
	// survives a power cut, hence synchronous=FULL even in WAL mode.
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "journal_mode(WAL)")
	// Every write transaction takes the write lock at BEGIN, so a
	// transaction never has to upgrade a read lock, which fails at once
	// with SQLITE_BUSY instead of waiting.
	q.Set("_txlock", "immediate")
	// The "sqlite" driver is modernc.org/sqlite, imported in dialect.go.
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open sqlite %q: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	// The writer connection switches the file to WAL before any reader
	// opens it.
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: open sqlite %q: %w", path, err)
	}

	rq := url.Values{}
	rq.Add("_pragma", "busy_timeout(10000)")
	rq.Set("_query_only", "1")
	rdb, err := sql.Open("sqlite", path+"?"+rq.Encode())
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: open sqlite %q for reading: %w", path, err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	rdb.SetMaxOpenConns(readers)
	rdb.SetMaxIdleConns(readers)
	if err := rdb.PingContext(ctx); err != nil {
		db.Close()
		rdb.Close()
		return nil, fmt.Errorf("sqlstore: open sqlite %q for reading: %w", path, err)
	}
	return &Store{db: db, rdb: rdb, replica: rdb, d: sqliteDialect, pullCandidates: chunkSize}, nil
}

// Pools sizes a MySQL store's connection pools: the bulkheads that keep
// one kind of work from starving another of connections.
type Pools struct {
	// Write bounds the connections of writes (and of reads when Read is
	// 0); 0 means 32.
	Write int
	// Read, when positive, gives plain reads a pool of their own of this
	// many connections, so a burst of slow writes cannot take the
	// connections the read path needs, nor the other way round.
	Read int
}

// makePrivate creates the database file with mode 0600 before SQLite
// opens it (SQLite would create it 0644 less the umask), and takes the
// group's and others' access off an existing one and its -wal and -shm
// files: they hold every user's data. SQLite gives the -wal and -shm files it creates the
// database file's mode.
func makePrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		err = f.Chmod(0o600) // the umask may have taken bits off
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case !errors.Is(err, fs.ErrExist):
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) && p != path {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// OpenMySQL connects to MySQL or MariaDB with a go-sql-driver DSN such as
// "user:pass@tcp(host:3306)/feedd", with one pool of 32 connections. The
// options the store relies on are set whatever the DSN says: integer times
// (no parseTime), utf8mb4, and client-side interpolation (one round trip
// per statement).
func OpenMySQL(ctx context.Context, dsn string) (*Store, error) {
	return openMySQL(ctx, dsn, Pools{}, "primary")
}

// openMySQL is OpenMySQL with sized pools, whose statements are counted
// under pool.
func openMySQL(ctx context.Context, dsn string, pools Pools, pool string) (*Store, error) {
	// Several hosts (a Galera cluster): failover.go.
	dsn, hosts := splitHosts(dsn)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		// The error may quote the DSN, password included; keep it out.
		return nil, errors.New("sqlstore: open mysql: the DSN does not parse")
	}
	cfg.ParseTime = false
	cfg.InterpolateParams = true
	cfg.MultiStatements = false
	// Affected rows must count changed rows only: Follow relies on an
	// upsert that changes nothing reporting 0.
	cfg.ClientFoundRows = false
	if err := cfg.Apply(mysql.Charset("utf8mb4", "utf8mb4_unicode_ci")); err != nil {
		return nil, fmt.Errorf("sqlstore: open mysql: %w", err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	if _, ok := cfg.Params["sql_mode"]; !ok {
		// Strict mode: too long a value is an error, never a silent cut.
		cfg.Params["sql_mode"] = "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
		if hosts != nil {
			// A node that does not answer a dial within 2 s is passed
			// over for the next.
			cfg.Timeout = 2 * time.Second
		}
	}
	var conn driver.Connector
	var nodes *cluster
	if hosts == nil {
		conn, err = mysql.NewConnector(cfg)
	} else {
		nodes, err = newCluster(cfg, hosts)
		conn = nodes
		cfg.Addr = strings.Join(hosts, ",")
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open mysql: %w", err)
	}
	c := &counter{pool: pool}
	counted := countingConnector{Connector: conn, c: c}
	open := func(n int) *sql.DB { return serverPool(counted, n, max(1, n/2)) }
	if pools.Write <= 0 {
		pools.Write = 32
	}
	db := open(pools.Write)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: open mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	rdb := db
	if pools.Read > 0 {
		rdb = open(pools.Read)
	}
	return &Store{db: db, rdb: rdb, replica: rdb, d: mysqlDialect, counters: []*counter{c}, pullCandidates: chunkSize, nodes: nodes}, nil
}

// OpenMySQLReplicated is OpenMySQL with sized pools, and with one more
// pool, on readDSN (a replica, or a proxy in front of several), that takes
// the lag-tolerant read path (see Store.replica), sized like the read pool
// (or the write pool when reads have none of their own); an empty readDSN
// adds none. A process that runs the API and the fan-out workers opens one
// store per role, so the roles do not share connections either.
func OpenMySQLReplicated(ctx context.Context, dsn, readDSN string, pools Pools) (*Store, error) {
	s, err := openMySQL(ctx, dsn, pools, "primary")
	if err != nil || readDSN == "" {
		return s, err
	}
	r, err := openMySQL(ctx, readDSN, Pools{Write: cmp.Or(pools.Read, pools.Write)}, "replica")
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlstore: read replica: %w", err)
	}
	s.readFrom(r)
	return s, nil
}

// serverPool is a pool of at most n connections to a database server
// (MySQL or PostgreSQL), of which it keeps idle.
func serverPool(conn driver.Connector, n, idle int) *sql.DB {
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(idle)
	// Below the usual server and proxy idle timeouts, so the pool does
	// not hand out connections the other side already dropped.
	db.SetConnMaxLifetime(5 * time.Minute)
	db.SetConnMaxIdleTime(time.Minute)
	return db
}

// readFrom sends s's lag-tolerant reads to r, a store on a read replica,
// whose statements s counts from now on.
func (s *Store) readFrom(r *Store) {
	s.replica = r.db
	s.lag = &lagWatch{}
	s.lag.lag.Store(-1) // not measured yet
	s.counters = append(s.counters, r.counters...)
}

// Pools returns the write pool and the read pool (the same pool when
// reads have none of their own), for pool metrics.
func (s *Store) Pools() (write, read *sql.DB) { return s.db, s.rdb }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: ping: %w", err)
	}
	if s.rdb != s.db {
		if err := s.rdb.PingContext(ctx); err != nil {
			return fmt.Errorf("sqlstore: ping readers: %w", err)
		}
	}
	// The read replica is left out: while it is down its reads go to the
	// primary (replica.go), so the process is ready without it.
	return nil
}

// Close closes the connection pools.
func (s *Store) Close() error {
	err := s.db.Close()
	if s.rdb != s.db {
		err = errors.Join(err, s.rdb.Close())
	}
	if s.replica != s.rdb {
		err = errors.Join(err, s.replica.Close())
	}
	if err != nil {
		return fmt.Errorf("sqlstore: close: %w", err)
	}
	return nil
}

// DB returns the pool that takes writes, for tests and tools. On SQLite it
// holds one connection: a caller must not keep it (an open transaction or
// unclosed rows) while calling the store.
func (s *Store) DB() *sql.DB { return s.db }

// maxAttempts bounds how often write retries a transaction the database
// aborted to break a deadlock.
const maxAttempts = 5

// write runs fn in a transaction on the write pool and commits it if fn
// returns nil. When the database picks the transaction as a deadlock
// victim, write runs fn again from the start, so fn must not have effects
// outside the transaction.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.inTx(ctx, nil, fn)
		if err == nil || attempt == maxAttempts || !s.d.retryable(err) {
			return err
		}
		// A little jitter, so that the two sides of a deadlock do not
		// meet again at once.
		backoff := time.Duration(attempt)*5*time.Millisecond + rand.N(5*time.Millisecond)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
	}
}

func (s *Store) inTx(ctx context.Context, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return commitError{err}
	}
	return nil
}

// commitError is a COMMIT that failed: unless the server said it rolled
// the transaction back, whether it took effect is unknown, and running
// the transaction again could do it twice (dialect.retryable).
type commitError struct{ err error }

func (e commitError) Error() string { return "commit: " + e.err.Error() }
func (e commitError) Unwrap() error { return e.err }

// atCommit reports whether err is a failed COMMIT.
func atCommit(err error) bool {
	var ce commitError
	return errors.As(err, &ce)
}

// millis and fromMillis convert between times and the unix milliseconds the
// schema stores.
func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// placeholders returns "?, ?, ?" for n arguments.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// chunkSize bounds the ids of one IN (...) list.
const chunkSize = 500

// chunks splits ids, without duplicates, into slices of at most chunkSize.
func chunks(ids []int64) [][]any {
	seen := make(map[int64]bool, len(ids))
	var out [][]any
	var cur []any
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		cur = append(cur, id)
		if len(cur) == chunkSize {
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// scanIDs reads a one-column result of ids.
func scanIDs(rows *sql.Rows, n int) ([]int64, error) {
	defer rows.Close()
	ids := make([]int64, 0, min(n, 1024))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
