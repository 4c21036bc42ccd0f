package main

import (
	"strconv"

	"github.com/feedd/feedd/internal/sqlstore"
)

// sql is the instance's one database, for a check that reads SQL
// directly; on a sharded stack the test fails: it reads one database.
func (in *instance) sql() *sqlstore.Store {
	in.t.Helper()
	dbs := databases(in.d.store)
	if len(dbs) != 1 {
		in.t.Fatalf("this check reads one database; the stack has %d shards", len(dbs))
	}
	return dbs[0]
}

// sqlOf is the database that holds the rows of a user or a post (id, as
// the API gives it): the instance's one database, or the shard of id.
func (in *instance) sqlOf(id string) *sqlstore.Store {
	in.t.Helper()
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		in.t.Fatalf("id %q: %v", id, err)
	}
	dbs := databases(in.d.store)
	return dbs[n&int64(len(dbs)-1)]
}
