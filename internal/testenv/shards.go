package testenv

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// The second servers sharded tests place shards on (.ci/sql-shards.sh),
// which FEEDD_TEST_SHARD_MYSQL and FEEDD_TEST_SHARD_POSTGRES override.
const (
	defaultShardMySQL    = "root@tcp(127.0.0.1:3331)/"
	defaultShardPostgres = "postgres://postgres@127.0.0.1:5451/postgres?sslmode=disable"
)

// ShardMySQLDSN is the second MariaDB server's DSN, no database chosen.
func ShardMySQLDSN() string { return Getenv("FEEDD_TEST_SHARD_MYSQL", defaultShardMySQL) }

// ShardPostgresDSN is the second PostgreSQL server's URL.
func ShardPostgresDSN() string { return Getenv("FEEDD_TEST_SHARD_POSTGRES", defaultShardPostgres) }

// ShardSpec returns a FEEDD_SHARD_DSNS value placing n logical shards on
// two servers, the first half on the machine's and the second half on the
// second server of .ci/sql-shards.sh, under a database prefix of the
// test's own; the shards' databases (prefix_s0 …) are dropped when tb
// ends. postgres picks PostgreSQL servers, else MariaDB. The databases
// are created by the migration (shards.Migrate), not here.
func ShardSpec(tb testing.TB, n int, postgres bool) string {
	tb.Helper()
	prefix := "feedd_shards_" + RandHex(4)
	servers := []string{MySQLDSN(), ShardMySQLDSN()}
	if postgres {
		servers = []string{PostgresDSN(), ShardPostgresDSN()}
	}
	var parts []string
	half := max(n/2, 1)
	for i, server := range servers {
		from, to := i*half, min((i+1)*half, n)-1
		if i == len(servers)-1 {
			to = n - 1
		}
		if from > to {
			continue
		}
		dsn := withDatabase(tb, server, prefix, postgres)
		parts = append(parts, fmt.Sprintf("%d-%d=%s", from, to, dsn))
		tb.Cleanup(func() { dropShards(tb, server, prefix, from, to, postgres) })
	}
	return strings.Join(parts, ";")
}

func withDatabase(tb testing.TB, server, db string, postgres bool) string {
	if postgres {
		u, err := url.Parse(server)
		if err != nil {
			tb.Fatalf("%q is not a postgres:// URL", server)
		}
		u.Path = "/" + db
		return u.String()
	}
	cfg, err := mysql.ParseDSN(server)
	if err != nil {
		tb.Fatalf("a MySQL DSN does not parse: %v", err)
	}
	cfg.DBName = db
	return cfg.FormatDSN()
}

func dropShards(tb testing.TB, server, prefix string, from, to int, postgres bool) {
	driver, dsn := "mysql", server
	if postgres {
		driver = "pgx"
	}
	root, err := sql.Open(driver, dsn)
	if err != nil {
		tb.Errorf("drop shards: %v", err)
		return
	}
	defer root.Close()
	for k := from; k <= to; k++ {
		stmt := fmt.Sprintf("DROP DATABASE IF EXISTS %s_s%d", prefix, k)
		if postgres {
			stmt += " WITH (FORCE)"
		}
		// A server a test killed may still be down: its databases go with
		// the CI machine.
		_, _ = root.Exec(stmt)
	}
}
