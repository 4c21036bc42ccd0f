package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/go-sql-driver/mysql"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations
var migrationFiles embed.FS

// dialect is what differs between MySQL, SQLite and PostgreSQL. The
// queries are otherwise shared: all take ? placeholders (rewritten to $n
// for PostgreSQL as they pass its connections) and LIMIT.
type dialect struct {
	// migrations holds this dialect's numbered .sql files.
	migrations fs.FS
	// transactionalDDL says whether a migration and its schema_migrations
	// row commit together (SQLite) or each DDL statement commits on its
	// own (MySQL).
	transactionalDDL bool
	// createMigrations creates the table that lists applied migrations.
	createMigrations string
	// lockMigrations keeps other processes from migrating at the same time
	// until release is called.
	lockMigrations func(ctx context.Context, conn *sql.Conn) (release func(), err error)
	// lockMigrationsTx, when set, replaces lockMigrations: Migrate runs
	// in one transaction that it locks first, with a lock the
	// transaction's end releases. Such a lock stays on one server
	// session even behind a pooler in transaction mode (PgBouncer),
	// where a session lock and its unlock may reach two.
	lockMigrationsTx func(ctx context.Context, tx *sql.Tx) error
	// forUpdate ends a SELECT that locks the rows it reads. SQLite needs
	// none: its write transactions are serialized.
	forUpdate string
	// skipLocked ends the SELECT that claims outbox rows, so that relays in
	// several processes each take different rows.
	skipLocked string
	// relayTx are the options of the relay's transaction.
	relayTx *sql.TxOptions
	// feedJoin joins follows to posts in FeedPostIDs (see there).
	feedJoin string
	// copyFrom: the bulk load writes with COPY (PostgreSQL's copyRows)
	// rather than multi-row INSERTs.
	copyFrom bool
	// afterBulkLoad readies the tables once a bulk load is done
	// (BulkLoadDone); empty: nothing to do.
	afterBulkLoad string
	// lateralFeed: a feed query over a wide window reads each followee's
	// newest posts with a LATERAL subquery (FeedPostIDs).
	lateralFeed bool
	// recentFirst: a feed query over a recent window walks the window's
	// posts newest first and probes follows (FeedPostIDs).
	recentFirst bool
	// insertFollow inserts a follow edge unless it exists; its result
	// counts one affected row only when the edge is new.
	insertFollow string
	// keepExisting ends an INSERT into mutes or blocks so that an existing
	// row stays as it is and counts no affected row.
	keepExisting string
	// upsertLikes and upsertStats end the batch writer's multi-row
	// inserts (likes.go): a newer version wins a likes row; a stats row
	// adds the delta.
	upsertLikes, upsertStats string
	// keepLikes ends the import's insert into likes so that an existing
	// row stays as it is and is not counted as affected.
	keepLikes string
	// upsertMarker ends the insert of a read marker (markers.go): an
	// existing row moves only forward, in the same statement, so that
	// racing writers cannot move it back.
	upsertMarker string
	// bumpStale ends the insert of a stale feed (stale.go): an existing
	// row counts one more miss.
	bumpStale string
	// addCounts ends the import's multi-row insert into users (importfollows.go)
	// whose rows all exist: each row adds its follower and following
	// counts to the stored ones, one statement for a whole batch.
	addCounts string
	// likesFromArrays, when set, is the import's insert of liked rows
	// (keeping existing ones) from three arrays: user ids, post ids and
	// versions.
	likesFromArrays string
	// claimLikes, when set, is how a server without gap locks
	// (PostgreSQL) locks the batch writer's pairs: a locking read of an
	// absent pair would lock nothing, and two writers could both count
	// its first like. ApplyLikes then inserts a row of version 0 (no
	// action) for every pair, ending with claimLikes, which turns an
	// existing row's conflict into a no-change update (a row lock) and
	// returns every pair's row: the claim and the locking read are one
	// statement. A concurrent writer's insert of the same pair waits on
	// it.
	claimLikes string
	// likesByKey pins the batch writer's locking read to the primary key,
	// so that it locks exactly its (user, post) pairs: left alone, MariaDB
	// picks a secondary index and locks every like of the users, or of a
	// hot post.
	likesByKey string
	// duplicate reports whether err is a primary-key or unique violation.
	duplicate func(err error) bool
	// retryable reports whether err aborted a transaction that can simply
	// run again (a deadlock victim).
	retryable func(err error) bool
	// lockWaitTimeout reports whether err ended a statement that waited
	// too long for another transaction's row lock.
	lockWaitTimeout func(err error) bool
	// updateReturning: UPDATE ... RETURNING gives back the row it wrote,
	// so an edit is one statement instead of a transaction of four
	// (PostgreSQL, SQLite; MariaDB has RETURNING on INSERT and DELETE
	// only).
	updateReturning bool
	// upsertSync ends the insert of a shard_syncs row (mirror.go): an
	// existing row's due_at moves strictly forward, so that a sync that
	// began before this write does not delete its row.
	upsertSync string
	// setMarker, when set, is SetMarker's upsert returning the marker it
	// wrote: a marker that moves forward costs one statement, not two.
	setMarker string
	// valuesIn: a batch of keys is matched with "(a, b) IN (VALUES (?, ?),
	// ...)", which MariaDB runs as a semi-join of primary-key lookups
	// (pairWhere), instead of ORed terms per first id.
	valuesIn bool
}

// MySQL error numbers (ER_DUP_ENTRY, ER_LOCK_WAIT_TIMEOUT,
// ER_LOCK_DEADLOCK).
const (
	mysqlDupEntry        = 1062
	mysqlLockWaitTimeout = 1205
	mysqlLockDeadlock    = 1213
)

// mysqlRetryable: the transaction was rolled back and can run again. A
// deadlock victim and a Galera certification failure (both 1213, the
// latter at COMMIT) were rolled back by the server. A lock wait that timed
// out (1205), a node that is not ready (1047) and a lost connection ended
// the transaction before its COMMIT, and write rolls it back. A COMMIT
// whose connection broke may have committed: it is not run again.
func mysqlRetryable(err error) bool {
	switch mysqlErrNumber(err) {
	case mysqlLockDeadlock:
		return true
	case mysqlLockWaitTimeout, mysqlNotReady:
		return !atCommit(err)
	}
	return connLost(err) && !atCommit(err)
}

func mysqlErrNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

var mysqlDialect = dialect{
	migrations:       mustSub(migrationFiles, "migrations/mysql"),
	transactionalDDL: false,
	lockMigrations:   mysqlLockMigrations,
	createMigrations: "CREATE TABLE IF NOT EXISTS schema_migrations (" +
		"version BIGINT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at BIGINT NOT NULL" +
		") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci",
	forUpdate:  " FOR UPDATE",
	skipLocked: " FOR UPDATE SKIP LOCKED",
	// Read committed: the claim locks the rows it takes and nothing else.
	// Under repeatable read its next-key locks would also cover the gap
	// where new outbox rows go, and every CreatePost would wait for the
	// broker to confirm the batch in flight.
	relayTx:     &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	feedJoin:    "JOIN",
	recentFirst: true,
	// Not INSERT IGNORE, which would also turn other errors into warnings.
	insertFollow: "INSERT INTO follows (follower_id, followee_id, created_at) VALUES (?, ?, ?)" +
		" ON DUPLICATE KEY UPDATE follower_id = follower_id",
	keepExisting:    " ON DUPLICATE KEY UPDATE created_at = created_at",
	duplicate:       func(err error) bool { return mysqlErrNumber(err) == mysqlDupEntry },
	retryable:       mysqlRetryable,
	lockWaitTimeout: func(err error) bool { return mysqlErrNumber(err) == mysqlLockWaitTimeout },

	// Assignments run left to right, so liked compares with the old
	// version before version moves.
	upsertLikes: " ON DUPLICATE KEY UPDATE liked = IF(VALUES(version) > version, VALUES(liked), liked)," +
		" version = GREATEST(version, VALUES(version))",
	upsertStats: " ON DUPLICATE KEY UPDATE like_count = like_count + VALUES(like_count), like_seq = like_seq + 1, updated_at = VALUES(updated_at)",
	likesByKey:  " FORCE INDEX (PRIMARY)",
	keepLikes:   " ON DUPLICATE KEY UPDATE version = version",
	addCounts: " ON DUPLICATE KEY UPDATE follower_count = follower_count + VALUES(follower_count)," +
		" following_count = following_count + VALUES(following_count)",
	// updated_at is assigned first, while last_read_id is still the old one.
	upsertMarker: " ON DUPLICATE KEY UPDATE" +
		" updated_at = IF(VALUES(last_read_id) > last_read_id, VALUES(updated_at), updated_at)," +
		" last_read_id = GREATEST(last_read_id, VALUES(last_read_id))",
	bumpStale:  " ON DUPLICATE KEY UPDATE mark = mark + 1",
	upsertSync: " ON DUPLICATE KEY UPDATE due_at = GREATEST(VALUES(due_at), due_at + 1)",
	valuesIn:   true,
}

// mysqlLockMigrations takes a named server lock for the current database.
// The lock belongs to conn's session, so the migration runs on conn.
func mysqlLockMigrations(ctx context.Context, conn *sql.Conn) (func(), error) {
	var db sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil {
		return nil, err
	}
	if !db.Valid {
		return nil, errors.New("no database selected: the DSN must name one")
	}
	// Lock names are at most 64 characters; database names too.
	name := "feedd.migrate." + db.String
	if len(name) > 64 {
		name = name[:64]
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", name).Scan(&got); err != nil {
		return nil, err
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, fmt.Errorf("lock %q: another process has been migrating for a minute", name)
	}
	return func() {
		// A fresh context: the lock must go even when ctx has ended, or
		// the pooled session would keep it.
		conn.ExecContext(context.Background(), "DO RELEASE_LOCK(?)", name)
	}, nil
}

var sqliteDialect = dialect{
	migrations:       mustSub(migrationFiles, "migrations/sqlite"),
	transactionalDDL: true,
	// Each migration runs in an immediate transaction, which excludes
	// other writers, other processes included, and re-checks whether it
	// was applied meanwhile.
	lockMigrations: func(context.Context, *sql.Conn) (func(), error) { return func() {}, nil },
	createMigrations: "CREATE TABLE IF NOT EXISTS schema_migrations (" +
		"version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
	// CROSS JOIN is SQLite's way to fix the join order: follows first.
	feedJoin: "CROSS JOIN",
	insertFollow: "INSERT INTO follows (follower_id, followee_id, created_at) VALUES (?, ?, ?)" +
		" ON CONFLICT DO NOTHING",
	keepExisting: " ON CONFLICT DO NOTHING",
	keepLikes:    " ON CONFLICT DO NOTHING",
	duplicate: func(err error) bool {
		var se *sqlite.Error
		if !errors.As(err, &se) {
			return false
		}
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return true
		}
		return false
	},
	// The single writer connection never deadlocks.
	retryable: func(error) bool { return false },
	// Nor waits for a row lock: writers queue for the connection.
	lockWaitTimeout: func(error) bool { return false },

	upsertLikes: " ON CONFLICT (user_id, post_id) DO UPDATE SET" +
		" liked = CASE WHEN excluded.version > likes.version THEN excluded.liked ELSE likes.liked END," +
		" version = MAX(likes.version, excluded.version)",
	upsertStats:     onConflictStats,
	addCounts:       onConflictCounts,
	upsertMarker:    onConflictMarker,
	bumpStale:       onConflictStale,
	upsertSync:      " ON CONFLICT (kind, a, b) DO UPDATE SET due_at = MAX(excluded.due_at, shard_syncs.due_at + 1)",
	updateReturning: true,
}

// The upserts SQLite took from PostgreSQL, word for word the same on
// both.
const (
	onConflictStats = " ON CONFLICT (post_id) DO UPDATE SET like_count = post_stats.like_count + excluded.like_count," +
		" like_seq = post_stats.like_seq + 1, updated_at = excluded.updated_at"
	onConflictCounts = " ON CONFLICT (id) DO UPDATE SET follower_count = users.follower_count + excluded.follower_count," +
		" following_count = users.following_count + excluded.following_count"
	onConflictMarker = " ON CONFLICT (user_id) DO UPDATE SET last_read_id = excluded.last_read_id," +
		" updated_at = excluded.updated_at WHERE excluded.last_read_id > markers.last_read_id"
	onConflictStale = " ON CONFLICT (user_id) DO UPDATE SET mark = stale_feeds.mark + 1"
)

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return sub
}
