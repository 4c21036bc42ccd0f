package shards

import (
	"fmt"
	"net/url"
	"strings"
)

// Backend names the SQL server kind of a shard DSN.
type Backend string

const (
	MySQL    Backend = "mysql"
	Postgres Backend = "postgres"
)

// BackendOf tells a PostgreSQL DSN (a postgres:// URL or libpq keywords)
// from a MySQL one (go-sql-driver's user:pass@tcp(host)/db).
func BackendOf(dsn string) Backend {
	d := strings.TrimSpace(dsn)
	if strings.HasPrefix(d, "postgres://") || strings.HasPrefix(d, "postgresql://") {
		return Postgres
	}
	for _, f := range strings.Fields(d) {
		if k, _, ok := strings.Cut(f, "="); ok && (k == "host" || k == "dbname" || k == "user" || k == "port") {
			return Postgres
		}
	}
	return MySQL
}

// DatabaseName is the database that holds logical shard k of a server
// whose DSN names prefix: prefix_s<k>. Each shard is a database of its
// own, so that moving one to another server is copying one database.
func DatabaseName(prefix string, k int) string { return fmt.Sprintf("%s_s%d", prefix, k) }

// ShardDSN returns dsn with its database replaced by shard k's, and the
// server's DSN without a database (to create it), and the prefix.
func ShardDSN(dsn string, k int) (shard, server, prefix string, err error) {
	switch BackendOf(dsn) {
	case Postgres:
		return pgShardDSN(dsn, k)
	default:
		return mysqlShardDSN(dsn, k)
	}
}

// mysqlShardDSN edits go-sql-driver's form, [user[:pass]@][net[(addr)]]/db[?params]:
// the database is what lies between the '/' after the address and the '?'.
func mysqlShardDSN(dsn string, k int) (string, string, string, error) {
	start := strings.LastIndex(dsn, ")") + 1 // 0 when there is no address
	slash := strings.Index(dsn[start:], "/")
	if slash < 0 {
		return "", "", "", fmt.Errorf("a MySQL shard DSN names a database prefix after '/', as in root@tcp(127.0.0.1:3306)/feedd")
	}
	slash += start
	end := len(dsn)
	if q := strings.Index(dsn[slash:], "?"); q >= 0 {
		end = slash + q
	}
	prefix := dsn[slash+1 : end]
	if prefix == "" {
		return "", "", "", fmt.Errorf("a MySQL shard DSN names a database prefix after '/', as in root@tcp(127.0.0.1:3306)/feedd")
	}
	db := DatabaseName(prefix, k)
	return dsn[:slash+1] + db + dsn[end:], dsn[:slash+1] + dsn[end:], prefix, nil
}

// pgShardDSN edits a postgres:// URL's path, or sets libpq's dbname
// keyword (the last one given wins); the server DSN names the database
// "postgres", where CREATE DATABASE runs.
func pgShardDSN(dsn string, k int) (string, string, string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", "", "", fmt.Errorf("a PostgreSQL shard DSN does not parse as a URL")
		}
		prefix := strings.TrimPrefix(u.Path, "/")
		if prefix == "" {
			return "", "", "", fmt.Errorf("a PostgreSQL shard DSN names a database prefix, as in postgres://host/feedd")
		}
		shard, server := *u, *u
		shard.Path = "/" + DatabaseName(prefix, k)
		server.Path = "/postgres"
		return shard.String(), server.String(), prefix, nil
	}
	prefix := ""
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "dbname="); ok {
			prefix = strings.Trim(v, "'")
		}
	}
	if prefix == "" {
		return "", "", "", fmt.Errorf("a PostgreSQL shard DSN names a database prefix with dbname=")
	}
	return dsn + " dbname=" + DatabaseName(prefix, k), dsn + " dbname=postgres", prefix, nil
}
