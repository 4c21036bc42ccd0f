package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
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
