package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
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

// shardedEnv is servicesEnv with the SQL truth on 4 logical shards over
// the two MariaDB servers (.ci/sql-shards.sh), migrated: the sharded
// stack of the behavioural suite.
func shardedEnv(tb testing.TB, postgres bool) map[string]string {
	tb.Helper()
	server := mariaDB
	if postgres {
		server = postgreSQL
	}
	env := servicesEnv(tb, server, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
	delete(env, server.variable)
	env["FEEDD_SHARDS"] = "4"
	env["FEEDD_SHARD_DSNS"] = shardSpec(tb, 4, postgres)
	migrateShards(tb, env)
	return env
}

// shardSpec is testenv.ShardSpec once both servers answer (a failure
// under CI=true, a skip on a laptop).
func shardSpec(tb testing.TB, n int, postgres bool) string {
	tb.Helper()
	first, second := testenv.MySQLDSN(), testenv.ShardMySQLDSN()
	addr := mariaDB.addr
	if postgres {
		first, second, addr = testenv.PostgresDSN(), testenv.ShardPostgresDSN(), postgreSQL.addr
	}
	feedtest.RequireServices(tb, addr(tb, first), addr(tb, second))
	return testenv.ShardSpec(tb, n, postgres)
}

// migrateShards runs feedd migrate on env's shard map.
func migrateShards(tb testing.TB, env map[string]string) {
	tb.Helper()
	var out testenv.SyncBuffer
	if err := run(context.Background(), []string{"migrate"}, func(k string) string { return env[k] }, nil, &out, &out); err != nil {
		tb.Fatalf("feedd migrate: %v; output:\n%s", err, out.String())
	}
}

// shardedSuite is the part of the behavioural suite that runs on the
// sharded stack too (forEachStack): the tests of what users write and
// read, whose rows now live on several shards (a follow, a block and a
// like cross two of them).
var shardedSuite = map[string]bool{
	"TestHandles":                       true,
	"TestHomeReplies":                   true,
	"TestReplies":                       true,
	"TestReposts":                       true,
	"TestHomeReposts":                   true,
	"TestLists":                         true,
	"TestListStream":                    true,
	"TestRankedFeed":                    true,
	"TestPublishFanoutRead":             true,
	"TestDeleteIsLazyAndFinal":          true,
	"TestFollowBackfillAndUnfollow":     true,
	"TestFollowerLists":                 true,
	"TestOwnPosts":                      true,
	"TestMutedFeedStaysFull":            true,
	"TestBlock":                         true,
	"TestMarkers":                       true,
	"TestNotifications":                 true,
	"TestPostDataAndEdits":              true,
	"TestLikes":                         true,
	"TestAccountDeletion":               true,
	"TestExport":                        true,
	"TestExternalIDs":                   true,
	"TestFollowBatch":                   true,
	"TestHybridMergesPulledAuthors":     true,
	"TestIdempotentPublish":             true,
	"TestIdempotentPublishRace":         true,
	"TestImportGraph":                   true,
	"TestLikeStorm":                     true,
	"TestOpsConsole":                    true,
	"TestPullModeWritesNoInboxes":       true,
	"TestReturningReaderHasNoGap":       true,
	"TestStreamDelivers":                true,
	"TestThresholdCrossingLosesNothing": true,
	"TestTokenStanding":                 true,
	"TestIdempotencyKeyExpiry":          true,
}

// shardedOnPostgres is the part of shardedSuite that runs on 4 logical
// shards over two PostgreSQL servers too: the writes that cross shards
// (follows, blocks, likes, deletion, imports) and the read that merges
// them. The rest is the same code on either engine, which the unsharded
// postgres stack runs; the whole CI run must stay under 45 minutes.
var shardedOnPostgres = map[string]bool{
	"TestHandles":                   true,
	"TestReplies":                   true,
	"TestReposts":                   true,
	"TestPublishFanoutRead":         true,
	"TestFollowBackfillAndUnfollow": true,
	"TestBlock":                     true,
	"TestLikes":                     true,
	"TestNotifications":             true,
	"TestAccountDeletion":           true,
	"TestImportGraph":               true,
	"TestHybridMergesPulledAuthors": true,
}

// TestShardConfigRefused: a shard configuration that cannot be right is
// refused before anything opens, with exit status 2 and a message naming
// what to fix, by every role and command that reads it; the passwords in
// the map never reach the output.
func TestShardConfigRefused(t *testing.T) {
	const pw = "sekrit-shard-pw"
	a := "root:" + pw + "@tcp(127.0.0.1:1)/feedd"
	b := "postgres://feedd:" + pw + "@127.0.0.1:1/feedd"
	long := strings.Repeat("x", minSecretLen)
	for _, c := range []struct {
		name  string
		env   map[string]string
		names string
	}{
		{"a count not a power of two", map[string]string{"FEEDD_SHARDS": "3", "FEEDD_SHARD_DSNS": "0-2=" + a}, "FEEDD_SHARDS is 3: want a power of two from 1 to 256"},
		{"too many shards", map[string]string{"FEEDD_SHARDS": "512", "FEEDD_SHARD_DSNS": "0-511=" + a}, "FEEDD_SHARDS is 512"},
		{"no shards", map[string]string{"FEEDD_SHARDS": "0"}, "FEEDD_SHARDS is 0"},
		{"a count not a power of two, no map", map[string]string{"FEEDD_SHARDS": "6"}, "FEEDD_SHARDS is 6: want a power of two"},
		{"shards without a map", map[string]string{"FEEDD_SHARDS": "4"}, "FEEDD_SHARDS is 4 but FEEDD_SHARD_DSNS is not set"},
		{"a map and FEEDD_MYSQL_DSN", map[string]string{"FEEDD_SHARDS": "2", "FEEDD_SHARD_DSNS": "0-1=" + a, "FEEDD_MYSQL_DSN": a}, "FEEDD_SHARD_DSNS and FEEDD_MYSQL_DSN are both set"},
		{"a map and FEEDD_POSTGRES_DSN", map[string]string{"FEEDD_SHARDS": "2", "FEEDD_SHARD_DSNS": "0-1=" + b, "FEEDD_POSTGRES_DSN": b}, "FEEDD_SHARD_DSNS and FEEDD_POSTGRES_DSN are both set"},
		{"a shard placed nowhere", map[string]string{"FEEDD_SHARDS": "4", "FEEDD_SHARD_DSNS": "0-1=" + a + ";3=" + b}, "FEEDD_SHARD_DSNS places no server for shard 2"},
		{"a shard placed twice", map[string]string{"FEEDD_SHARDS": "4", "FEEDD_SHARD_DSNS": "0-2=" + a + ";2-3=" + b}, "shard 2 is placed twice"},
		{"a range past the count", map[string]string{"FEEDD_SHARDS": "2", "FEEDD_SHARD_DSNS": "0-3=" + a}, "the range 0-3 is not within the 2 shards"},
		{"a part without a range", map[string]string{"FEEDD_SHARDS": "2", "FEEDD_SHARD_DSNS": a}, "is not FROM-TO=DSN"},
	} {
		for _, args := range [][]string{nil, {"serve"}, {"work"}, {"migrate"}, {"import", "-users", os.DevNull}, {"export", "-user", "1"}, {"bench", "graph", "-out", os.DevNull}, {"shards", "status"}} {
			t.Run(c.name+"/"+strings.Join(append([]string{"feedd"}, args...), " "), func(t *testing.T) {
				env := map[string]string{"FEEDD_DATA_DIR": t.TempDir(), "FEEDD_ADMIN_TOKEN": long, "FEEDD_JWT_SECRET": long}
				maps.Copy(env, c.env)
				out, err := runOnce(t, env, args...)
				if got := exitCode(err); got != 2 {
					t.Fatalf("exit status %d (err %v); want 2; output:\n%s", got, err, out)
				}
				if !strings.Contains(err.Error(), c.names) {
					t.Errorf("error %q; want it to say %q", err, c.names)
				}
				if strings.Contains(out, pw) {
					t.Errorf("the output shows a shard's password:\n%s", out)
				}
			})
		}
	}
	t.Run("a server that does not answer", func(t *testing.T) {
		env := map[string]string{"FEEDD_ADMIN_TOKEN": long, "FEEDD_JWT_SECRET": long, "FEEDD_SHARDS": "2", "FEEDD_SHARD_DSNS": "0=" + a + ";1=" + b}
		out, err := runOnce(t, env, "shards", "status")
		if got := exitCode(err); got != 1 {
			t.Fatalf("exit status %d (err %v); want 1; output:\n%s", got, err, out)
		}
		if strings.Contains(out, pw) {
			t.Errorf("the output shows a shard's password:\n%s", out)
		}
	})
}

// TestRedactShardList: FEEDD_SHARD_DSNS is shown with each DSN's
// password hidden, as its kind of server reads it.
func TestRedactShardList(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0-1=feedd:pw1@tcp(db1:3306)/feedd;2-3=feedd:pw2@tcp(db2:3306)/feedd", "0-1=feedd:***@tcp(db1:3306)/feedd;2-3=feedd:***@tcp(db2:3306)/feedd"},
		{"0=postgres://feedd:pw1@db1/feedd;1=host=db2 dbname=feedd password=pw2", "0=postgres://feedd:***@db1/feedd;1=host=db2 dbname=feedd password=***"},
		{"0-1=root@tcp(db1:3306)/feedd", "0-1=root@tcp(db1:3306)/feedd"},
		{"feedd:pw1@tcp(db1:3306)/feedd", "feedd:***@tcp(db1:3306)/feedd"},
	} {
		if got := showSecret(shardList, c.in); got != c.want {
			t.Errorf("showSecret(%q) = %q; want %q", c.in, got, c.want)
		}
	}
	for _, c := range []struct{ dsn, server, db string }{
		{"feedd:pw@tcp(db1:3306)/feedd_s3?parseTime=true", "feedd@db1:3306", "feedd_s3"},
		{"postgres://feedd:pw@db2:5433/feedd_s1?sslmode=disable", "feedd@db2:5433", "feedd_s1"},
		{"host=db3 user=feedd password=pw dbname=feedd_s2", "feedd@db3:5432", "feedd_s2"},
	} {
		if server, db := describeDSN(c.dsn); server != c.server || db != c.db {
			t.Errorf("describeDSN(%q) = %q, %q; want %q, %q", c.dsn, server, db, c.server, c.db)
		}
	}
}

// TestShardMapDisagreesWithData: once feedd migrate has made 4 shards on
// two servers, a map that places them otherwise (a wrong count, the two
// servers swapped) is refused with exit status 2 by the roles and the
// commands, migrate included, and creates nothing.
func TestShardMapDisagreesWithData(t *testing.T) {
	spec := shardSpec(t, 4, false)
	m, err := shards.Parse(4, spec)
	if err != nil {
		t.Fatal(err)
	}
	first, second := m.Places[0].DSN, m.Places[1].DSN
	long := strings.Repeat("x", minSecretLen)
	base := map[string]string{"FEEDD_ADMIN_TOKEN": long, "FEEDD_JWT_SECRET": long}
	env := maps.Clone(base)
	env["FEEDD_SHARDS"], env["FEEDD_SHARD_DSNS"] = "4", spec
	out, err := runOnce(t, env, "migrate")
	if err != nil || !strings.Contains(out, "migrations applied to 4 shards") {
		t.Fatalf("feedd migrate: %v; output:\n%s", err, out)
	}
	shard1, _, _, err := shards.ShardDSN(first, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, shards, spec, says string
		mysql                    string // an unsharded DSN instead of the map
	}{
		{name: "a wrong count", shards: "2", spec: "0-1=" + first, says: "the database placed as shard 0 of 2 says it is shard 0 of 4"},
		{name: "the servers swapped", shards: "4", spec: "0-1=" + second + ";2-3=" + first},
		{name: "a new count", shards: "8", spec: "0-3=" + first + ";4-7=" + second},
		{name: "one shard as the whole", mysql: shard1, says: "says it is shard 1 of 4"},
	} {
		for _, args := range [][]string{nil, {"work"}, {"migrate"}, {"shards", "status"}, {"export", "-user", "1"}} {
			if c.mysql != "" && len(args) == 2 && args[0] == "shards" {
				continue // shards status needs a map
			}
			t.Run(c.name+"/"+strings.Join(append([]string{"feedd"}, args...), " "), func(t *testing.T) {
				env := maps.Clone(base)
				if c.mysql != "" {
					env["FEEDD_MYSQL_DSN"] = c.mysql
				} else {
					env["FEEDD_SHARDS"], env["FEEDD_SHARD_DSNS"] = c.shards, c.spec
				}
				env["FEEDD_REDIS_URL"], env["FEEDD_AMQP_URL"] = testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis), testenv.AMQPURL()
				out, err := runOnce(t, env, args...)
				if got := exitCode(err); got != 2 {
					t.Fatalf("exit status %d (err %v); want 2; output:\n%s", got, err, out)
				}
				if !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "FEEDD_SHARD") && !strings.Contains(err.Error(), "feedd migrate") {
					t.Errorf("error %q; want it to say %q and what to fix", err, c.says)
				}
			})
		}
	}
	// Nothing was created or claimed: each server holds its two shards
	// only, and the map as migrated still opens.
	for i, want := range [][]int{{0, 1}, {2, 3}} {
		_, server, prefix, err := shards.ShardDSN(m.Places[i].DSN, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sqlstore.ShardDatabases(t.Context(), server, prefix, false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("after the refusals, server %d holds shards %v; want %v", i, got, want)
		}
	}
	out, err = runOnce(t, env, "shards", "status")
	if err != nil {
		t.Fatalf("feedd shards status after the refusals: %v; output:\n%s", err, out)
	}
}

// TestShardsStatus: feedd migrate on 4 shards over two servers, then
// feedd shards status shows each shard's server, database and row counts,
// as a table and as JSON.
func TestShardsStatus(t *testing.T) {
	spec := shardSpec(t, 4, false)
	env := map[string]string{"FEEDD_SHARDS": "4", "FEEDD_SHARD_DSNS": spec}
	out, err := runOnce(t, env, "migrate")
	if err != nil {
		t.Fatalf("feedd migrate: %v; output:\n%s", err, out)
	}
	// Users straight into their shards' databases: shard k holds k+1.
	m, _ := shards.Parse(4, spec)
	ctx := t.Context()
	s, err := shards.Open(ctx, m, sqlstore.Pools{Write: 8}, sqlstore.DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	gen := feed.NewIDGen(nil)
	for k := range 4 {
		for i := 0; i <= k; i++ {
			id := gen.NextOn(int64(k), 4)
			if _, err := s.Shard(k).CreateUser(ctx, feed.User{ID: id, Name: fmt.Sprintf("u%d", id)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Close()

	out, err = runOnce(t, env, "shards", "status", "--json")
	if err != nil {
		t.Fatalf("feedd shards status --json: %v; output:\n%s", err, out)
	}
	var rows []shardRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("shards status --json: %v; output:\n%s", err, out)
	}
	if len(rows) != 4 {
		t.Fatalf("shards status --json: %d rows; want 4:\n%s", len(rows), out)
	}
	prefix := strings.TrimSuffix(rows[0].Database, "_s0")
	for k, r := range rows {
		server, _ := describeDSN(m.DSN(k))
		if r.Shard != k || r.Server != server || r.Database != shards.DatabaseName(prefix, k) || r.Users != int64(k+1) || r.Error != "" {
			t.Errorf("row %d = %+v; want shard %d on %s in %s with %d users", k, r, k, server, shards.DatabaseName(prefix, k), k+1)
		}
	}
	if rows[0].Server == rows[3].Server {
		t.Errorf("shards 0 and 3 both on %s; want two servers", rows[0].Server)
	}

	out, err = runOnce(t, env, "shards", "status")
	if err != nil {
		t.Fatalf("feedd shards status: %v; output:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "shard") || !strings.Contains(lines[0], "outbox backlog") {
		t.Fatalf("shards status: want a header and 4 rows; got:\n%s", out)
	}
	for k, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != 8 || f[0] != strconv.Itoa(k) || f[2] != rows[k].Database || f[3] != strconv.Itoa(k+1) {
			t.Errorf("shards status row %d = %q; want shard %d, its database and %d users", k, line, k, k+1)
		}
	}
}

// sqlCount runs a counting query on every database of the instance (one,
// or each shard's) and adds up the answers: rows of a user that may lie on
// several shards (a follow's and a like's copies).
func (in *instance) sqlCount(query string, args ...any) (int64, error) {
	var total int64
	for _, db := range databases(in.d.store) {
		var n int64
		if err := db.DB().QueryRow(query, args...).Scan(&n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// TestShardedRoles: with the truth on 4 shards, a serve process and two
// work processes move posts by authors of every shard into their
// followers' feeds: each work process runs a relay on every shard's
// outbox (their metrics by shard), and the outboxes drain.
func TestShardedRoles(t *testing.T) {
	for _, postgres := range []bool{false, true} {
		name := "mariadb"
		if postgres {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			env := shardedEnv(t, postgres)
			serve := startRole(t, "serve", env, nil)
			work := startRole(t, "work", env, nil)
			startRole(t, "work", env, nil)
			_, readerTok := serve.user("reader")
			// Authors until each shard has one: user ids are drawn, so
			// their shards are too.
			var posts []string
			onShard := map[int64]bool{}
			for i := 0; len(onShard) < 4; i++ {
				if i == 64 {
					t.Fatalf("64 users and shards %v only", onShard)
				}
				id, tok := serve.user(fmt.Sprintf("author%d", i))
				n, _ := strconv.ParseInt(id, 10, 64)
				if onShard[n&3] {
					continue
				}
				onShard[n&3] = true
				serve.follow(readerTok, id)
				posts = append(posts, serve.post(tok, "on shard "+strconv.FormatInt(n&3, 10)))
			}
			slices.Reverse(posts)
			serve.feedEventually(readerTok, 10, posts)
			for k := range 4 {
				series := fmt.Sprintf(`feedd_outbox_backlog{shard="%d"}`, k)
				testenv.Eventually(t, 10*time.Second, series+" is 0", func() bool { return metric(t, work, series) == 0 })
			}
		})
	}
}
