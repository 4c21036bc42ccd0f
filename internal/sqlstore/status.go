package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// RowCountTables are the tables RowCounts counts, in the order an
// operator reads them (feedd shards status), and "outbox_backlog": the
// outbox events not yet relayed.
var RowCountTables = []string{"users", "posts", "follows", "likes", "outbox_backlog"}

// RowCounts returns the rows of the tables that say how full a database
// is (RowCountTables), for feedd shards status. Exact counts, read from
// the primary: a full scan of each table's smallest index, which an
// operator's command may afford and a request could not.
func (s *Store) RowCounts(ctx context.Context) (map[string]int64, error) {
	queries := map[string]string{
		"users":          "SELECT COUNT(*) FROM users",
		"posts":          "SELECT COUNT(*) FROM posts",
		"follows":        "SELECT COUNT(*) FROM follows",
		"likes":          "SELECT COUNT(*) FROM likes",
		"outbox_backlog": "SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL",
	}
	counts := make(map[string]int64, len(queries))
	for _, table := range RowCountTables {
		var n int64
		if err := s.db.QueryRowContext(ctx, queries[table]).Scan(&n); err != nil {
			return nil, fmt.Errorf("sqlstore: count %s: %w", table, err)
		}
		counts[table] = n
	}
	return counts, nil
}

// IsUnknownDatabase reports whether err says that the database a DSN
// names does not exist on its server (MySQL's error 1049, PostgreSQL's
// 3D000): for a shard, that the map places it where feedd migrate never
// created it.
func IsUnknownDatabase(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1049
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "3D000"
}

// ShardDatabases returns the shard numbers k of the databases named
// prefix_s<k> on the server serverDSN reaches (a DSN without a database,
// as CreateDatabase takes it): where a shard map's shards already live.
func ShardDatabases(ctx context.Context, serverDSN, prefix string, postgres bool) ([]int, error) {
	db, err := serverDB(serverDSN, postgres)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	q := "SELECT schema_name FROM information_schema.schemata"
	if postgres {
		q = "SELECT datname FROM pg_database"
	}
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list databases: %w", err)
	}
	defer rows.Close()
	var ks []int
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("sqlstore: list databases: %w", err)
		}
		if n, ok := strings.CutPrefix(name, prefix+"_s"); ok {
			if k, err := strconv.Atoi(n); err == nil && k >= 0 && strconv.Itoa(k) == n {
				ks = append(ks, k)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: list databases: %w", err)
	}
	slices.Sort(ks)
	return ks, nil
}

// serverDB opens a pool of one connection to a server, no database
// chosen (PostgreSQL's: the one serverDSN names).
func serverDB(serverDSN string, postgres bool) (*sql.DB, error) {
	if postgres {
		cfg, err := pgx.ParseConfig(serverDSN)
		if err != nil {
			return nil, errors.New("sqlstore: the server's DSN does not parse")
		}
		db := stdlib.OpenDB(*cfg)
		db.SetMaxOpenConns(1)
		return db, nil
	}
	dsn, _ := splitHosts(serverDSN)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, errors.New("sqlstore: the server's DSN does not parse")
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open the server: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	return db, nil
}

// ShardIdentity returns which shard the database says it is (ClaimShard);
// ok is false when it says nothing yet (a database created, not yet
// migrated or claimed).
func (s *Store) ShardIdentity(ctx context.Context) (k, n int, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT shard, shards FROM shard_identity WHERE one = 1").Scan(&k, &n)
	switch {
	case errors.Is(err, sql.ErrNoRows), isUnknownTable(err):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, fmt.Errorf("sqlstore: read the shard identity: %w", err)
	}
	return k, n, true, nil
}

// isUnknownTable reports whether err says a table does not exist (MySQL's
// error 1146, PostgreSQL's 42P01): a database the migrations have not
// reached.
func isUnknownTable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1146
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
