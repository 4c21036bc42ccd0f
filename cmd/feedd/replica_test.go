package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/freshness"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// The replica tests run feedd on real replicas that .ci/sql-replicas.sh
// starts: a MariaDB primary and its GTID replica, a PostgreSQL primary and
// its streaming standby. The tests stop and delay the replica's apply and
// kill the replica server; docs/testing.md has the variables.

// replicaPair is a primary and its replica, and how a test lags or kills
// the replica.
type replicaPair struct {
	name string
	// server is the SQL server kind whose settings feedd gets.
	server *sqlServer
	// primaryVar and replicaVar name the variables of the two servers'
	// DSNs, as a user that may create databases (and control replication).
	primaryVar, replicaVar string
	// engine is the script's name of the pair.
	engine string
	// create creates a database on the primary, dropped when tb ends.
	create func(tb testing.TB, primary string) string
	// onReplica returns the DSN of database db on the replica server.
	onReplica func(tb testing.TB, replica, db string) string
	driver    string
	// pause and resume stop and restart the replica's apply (the
	// replica still answers, and falls behind).
	pause, resume string
	// delay returns the statements that make the replica apply each
	// transaction d after its commit on the primary (0: at once).
	delay func(d time.Duration) []string
}

var mariaDBPair = &replicaPair{
	name: "replica", server: mariaDB, engine: "mariadb",
	primaryVar: "FEEDD_TEST_MYSQL_REPLICATED_DSN", replicaVar: "FEEDD_TEST_MYSQL_REPLICA_DSN",
	create: func(tb testing.TB, primary string) string {
		return testenv.CreateDatabaseOn(tb, primary, "feedd_replica_")
	},
	onReplica: func(tb testing.TB, replica, db string) string {
		cfg, err := mysql.ParseDSN(replica)
		if err != nil {
			tb.Fatalf("FEEDD_TEST_MYSQL_REPLICA_DSN: %v", err)
		}
		cfg.DBName = db
		return cfg.FormatDSN()
	},
	driver: "mysql",
	pause:  "STOP SLAVE SQL_THREAD", resume: "START SLAVE SQL_THREAD",
	delay: func(d time.Duration) []string {
		return []string{"STOP SLAVE", fmt.Sprintf("CHANGE MASTER TO MASTER_DELAY=%d", int(d.Seconds())), "START SLAVE"}
	},
}

var postgresPair = &replicaPair{
	name: "pg-replica", server: postgreSQL, engine: "postgres",
	primaryVar: "FEEDD_TEST_POSTGRES_REPLICATED_DSN", replicaVar: "FEEDD_TEST_POSTGRES_REPLICA_DSN",
	create: func(tb testing.TB, primary string) string {
		return testenv.CreatePostgresDatabaseOn(tb, primary, "feedd_replica_")
	},
	onReplica: func(tb testing.TB, replica, db string) string {
		u, err := url.Parse(replica)
		if err != nil {
			tb.Fatalf("FEEDD_TEST_POSTGRES_REPLICA_DSN: %v", err)
		}
		u.Path = "/" + db
		return u.String()
	},
	driver: "pgx",
	pause:  "SELECT pg_wal_replay_pause()", resume: "SELECT pg_wal_replay_resume()",
	delay: func(d time.Duration) []string {
		return []string{fmt.Sprintf("ALTER SYSTEM SET recovery_min_apply_delay = '%dms'", d.Milliseconds()), "SELECT pg_reload_conf()"}
	},
}

var replicaPairs = []*replicaPair{mariaDBPair, postgresPair}

// replicaSuite is the part of the behavioural suite that runs on the
// replica pairs too (forEachStack), feedd reading from the replica: the
// tests of what users write and read, not those of the other backends'
// failures, which a replica does not change (and which would double the
// suite's time).
var replicaSuite = map[string]bool{
	"TestPublishFanoutRead":         true,
	"TestDeleteIsLazyAndFinal":      true,
	"TestFollowBackfillAndUnfollow": true,
	"TestFollowerLists":             true,
	"TestOwnPosts":                  true,
	"TestMutedFeedStaysFull":        true,
	"TestBlock":                     true,
	"TestMarkers":                   true,
	"TestPostDataAndEdits":          true,
	"TestLikes":                     true,
}

// forEachReplicaPair runs f as a subtest per pair.
func forEachReplicaPair(t *testing.T, f func(t *testing.T, p *replicaPair)) {
	for _, p := range replicaPairs {
		t.Run(p.name, func(t *testing.T) { f(t, p) })
	}
}

// dsns returns the primary's and the replica's DSNs, as the variables
// give them; without them the test skips on a laptop and fails under
// CI=true.
func (p *replicaPair) dsns(tb testing.TB) (primary, replica string) {
	tb.Helper()
	primary, replica = os.Getenv(p.primaryVar), os.Getenv(p.replicaVar)
	if primary == "" || replica == "" {
		feedtest.Missing(tb, "%s and %s are not set: run .ci/sql-replicas.sh and eval what it prints", p.primaryVar, p.replicaVar)
	}
	return primary, replica
}

// env is servicesEnv on the pair: feedd's database on the primary and its
// read DSN on the replica's copy of it.
func (p *replicaPair) env(tb testing.TB) map[string]string {
	tb.Helper()
	primary, replica := p.dsns(tb)
	env := servicesEnv(tb, p.server, testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis))
	dsn := p.create(tb, primary)
	env[p.server.variable] = dsn
	env[p.server.readVariable] = p.onReplica(tb, replica, dbName(tb, p, dsn))
	// The database reaches the replica as any transaction does.
	db, err := sql.Open(p.driver, env[p.server.readVariable])
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	testenv.Eventually(tb, 20*time.Second, "the test database is on the replica", func() bool { return db.Ping() == nil })
	// A Redis that has kept the write marks for long (internal/freshness):
	// without the sentinel, feedd reads only the primary for the marks'
	// lifetime, as after a loss of Redis's data (which tests that flush
	// Redis meet).
	rc := redisOf(tb, env)
	if err := rc.Set(context.Background(), env["FEEDD_REDIS_PREFIX"]+"wrote:since", 0, 0).Err(); err != nil {
		tb.Fatalf("redis: %v", err)
	}
	return env
}

// redisOf is a client of the single Redis of env, closed when tb ends.
func redisOf(tb testing.TB, env map[string]string) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(env["FEEDD_REDIS_URL"])
	if err != nil {
		tb.Fatal(err)
	}
	rc := redis.NewClient(opt)
	tb.Cleanup(func() { rc.Close() })
	return rc
}

// dbName is the database a DSN of the pair names.
func dbName(tb testing.TB, p *replicaPair, dsn string) string {
	if p.driver == "mysql" {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			tb.Fatal(err)
		}
		return cfg.DBName
	}
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// control runs statements on the replica server as its administrator.
func (p *replicaPair) control(tb testing.TB, stmts ...string) {
	tb.Helper()
	_, replica := p.dsns(tb)
	db, err := sql.Open(p.driver, replica)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			tb.Fatalf("replica %s: %s: %v", p.name, s, err)
		}
	}
}

// lagOn stops the replica's apply until the returned function (also run
// when tb ends) starts it again.
func (p *replicaPair) lagOn(tb testing.TB) (resume func()) {
	tb.Helper()
	p.control(tb, p.pause)
	var once sync.Once
	resume = func() { once.Do(func() { p.control(tb, p.resume) }) }
	tb.Cleanup(resume)
	return resume
}

// delayed makes the replica apply d behind the primary until tb ends.
func (p *replicaPair) delayed(tb testing.TB, d time.Duration) {
	tb.Helper()
	p.control(tb, p.delay(d)...)
	tb.Cleanup(func() { p.control(tb, p.delay(0)...) })
}

// script runs .ci/sql-replicas.sh with the pair's engine and cmd.
func (p *replicaPair) script(tb testing.TB, cmd string) {
	tb.Helper()
	out, err := exec.Command("bash", "../../.ci/sql-replicas.sh", p.engine, cmd).CombinedOutput()
	if err != nil {
		tb.Fatalf(".ci/sql-replicas.sh %s %s: %v\n%s", p.engine, cmd, err, out)
	}
}

// metric returns the value of one series on in's /metrics, NaN-free: -1
// when it is missing.
func metric(t *testing.T, in *instance, series string) float64 {
	t.Helper()
	res, err := http.Get(in.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	v, err := strconv.ParseFloat(metricValue(string(body), series), 64)
	if err != nil {
		return -1
	}
	return v
}

// replicaServes waits until in reads from its replica (its heartbeat
// through it answers, within the max lag).
func replicaServes(t *testing.T, in *instance, within time.Duration) {
	t.Helper()
	testenv.Eventually(t, within, "feedd_sql_replica_up is 1", func() bool {
		return metric(t, in, "feedd_sql_replica_up") == 1
	})
}

// ids returns the ids of a list answer's items.
func ids(r resp) []string {
	var out []string
	for _, it := range r.items() {
		out = append(out, it["id"].(string))
	}
	return out
}

// TestReplicaReadYourWrites: with the replica's apply stopped, each kind
// of write a user makes through one serve process shows on that user's
// next request to another serve process, while another user's reads,
// served by the stopped replica, do not show it until the replica
// catches up.
func TestReplicaReadYourWrites(t *testing.T) {
	forEachReplicaPair(t, func(t *testing.T, p *replicaPair) {
		env := p.env(t)
		// Pull mode reads every feed page from SQL, so a page shows which
		// database answered; a max lag above the test's pause keeps the
		// stopped replica read.
		over := []string{"FEEDD_FANOUT_MODE", "pull", "FEEDD_REPLICA_MAX_LAG", "60s"}
		one := startRole(t, "serve", env, nil, over...)
		two := startRole(t, "serve", env, nil, over...)
		startRole(t, "work", env, nil, over...)

		author, tok := one.user("author")
		_, otherTok := one.user("other")
		friend, friendTok := one.user("friend")
		noisy, noisyTok := one.user("noisy")
		one.follow(otherTok, author)
		one.follow(tok, noisy)
		fp := one.post(friendTok, "by the friend")
		np := one.post(noisyTok, "by the noisy one")
		replicaServes(t, two, 20*time.Second)
		// Everything so far is on the replica once another user sees it.
		testenv.Eventually(t, 20*time.Second, "the replica has the setup", func() bool {
			return slices.Contains(ids(two.must(200, "GET", "/v1/users/"+friend+"/posts", otherTok, nil)), fp)
		})
		// The other user's follow is a write too: its reads go to the
		// primary until a heartbeat passes it (ClockSkew after it). On a
		// loaded machine a heartbeat takes its time to come through.
		followed := time.Now()
		testenv.Eventually(t, 20*time.Second, "a heartbeat past the follow", func() bool {
			return databases(two.d.store)[0].ReplicaSeen().After(followed.Add(sqlstore.ClockSkew))
		})
		resume := p.lagOn(t)

		feedOf := func(tok string) []string { return ids(two.must(200, "GET", "/v1/me/feed?limit=50", tok, nil)) }
		check := func(what string, ok bool) {
			t.Helper()
			if !ok {
				t.Fatalf("after %s through one process, the author's next request to another does not show it", what)
			}
		}

		pid := one.post(tok, "mine")
		check("a post", slices.Contains(feedOf(tok), pid) &&
			slices.Contains(ids(two.must(200, "GET", "/v1/users/"+author+"/posts", tok, nil)), pid))
		// The proof that the replica is read: the follower's feed,
		// served by the stopped replica, does not have the post yet.
		if slices.Contains(feedOf(otherTok), pid) {
			t.Fatalf("a follower's feed shows post %s while the replica is stopped: the replica is not read", pid)
		}

		one.must(200, "PATCH", "/v1/posts/"+pid, tok, map[string]any{"content": "mine, edited"})
		check("an edit", two.must(200, "GET", "/v1/posts/"+pid, tok, nil).str("content") == "mine, edited")

		one.must(204, "PUT", "/v1/me/following/"+friend, tok, nil)
		check("a follow", slices.Contains(feedOf(tok), fp))
		one.must(204, "DELETE", "/v1/me/following/"+friend, tok, nil)
		check("an unfollow", !slices.Contains(feedOf(tok), fp))

		one.must(200, "PUT", "/v1/posts/"+np+"/like", tok, nil)
		liked, _ := two.must(200, "GET", "/v1/posts/"+np, tok, nil).body["liked_by_me"].(bool)
		check("a like", liked)

		one.must(204, "PUT", "/v1/me/mutes/"+noisy, tok, nil)
		check("a mute (feed)", !slices.Contains(feedOf(tok), np))
		check("a mute (list)", slices.Contains(ids(two.must(200, "GET", "/v1/me/mutes", tok, nil)), noisy))
		one.must(204, "DELETE", "/v1/me/mutes/"+noisy, tok, nil)
		one.must(204, "PUT", "/v1/me/blocks/"+noisy, tok, nil)
		check("a block", !slices.Contains(feedOf(tok), np) &&
			slices.Contains(ids(two.must(200, "GET", "/v1/me/blocks", tok, nil)), noisy))

		one.must(200, "PUT", "/v1/me/markers/home", tok, map[string]any{"last_read_id": pid})
		check("a marker", two.must(200, "GET", "/v1/me/markers/home", tok, nil).str("last_read_id") == pid)

		gone := one.post(tok, "deleted at once")
		one.must(204, "DELETE", "/v1/posts/"+gone, tok, nil)
		check("a delete", !slices.Contains(feedOf(tok), gone) &&
			!slices.Contains(ids(two.must(200, "GET", "/v1/users/"+author+"/posts", tok, nil)), gone))

		// The lag shows: the heartbeat finds the stopped replica further
		// behind at each beat.
		time.Sleep(1500 * time.Millisecond)
		if lag := metric(t, two, "feedd_sql_replica_lag_seconds"); lag < 1 || lag > 60 {
			t.Errorf("feedd_sql_replica_lag_seconds with the apply stopped for over 1.5 s = %v; want 1 to 60", lag)
		}
		resume()
		testenv.Eventually(t, 20*time.Second, "the replica caught up (lag below 1 s)", func() bool {
			lag := metric(t, two, "feedd_sql_replica_lag_seconds")
			return lag >= 0 && lag < 1
		})
		testenv.Eventually(t, 20*time.Second, "the follower sees the post once the replica caught up", func() bool {
			return slices.Contains(feedOf(otherTok), pid)
		})
	})
}

// TestReplicaPastMaxLag: a replica further behind than FEEDD_REPLICA_MAX_LAG
// (here a delayed replica, 4 s behind, against 1 s) is not read: a post
// shows at once in a follower's feed, served by the primary, with no
// failed request, and the lag metric says how far behind it is.
func TestReplicaPastMaxLag(t *testing.T) {
	forEachReplicaPair(t, func(t *testing.T, p *replicaPair) {
		env := p.env(t)
		in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", "pull", "FEEDD_REPLICA_MAX_LAG", "1s")
		author, tok := in.user("author")
		_, readerTok := in.user("reader")
		in.follow(readerTok, author)
		replicaServes(t, in, 20*time.Second)
		p.delayed(t, 4*time.Second)
		testenv.Eventually(t, 20*time.Second, "feedd_sql_replica_up is 0", func() bool {
			return metric(t, in, "feedd_sql_replica_up") == 0
		})
		if lag := metric(t, in, "feedd_sql_replica_lag_seconds"); lag < 1 || lag > 8 {
			t.Errorf("feedd_sql_replica_lag_seconds of a replica delayed by 4 s = %v; want 1 to 8", lag)
		}
		pid := in.post(tok, "read from the primary")
		if got := ids(in.must(200, "GET", "/v1/me/feed?limit=10", readerTok, nil)); !slices.Contains(got, pid) {
			t.Fatalf("a follower's feed with the replica past the max lag = %v; want post %s (read from the primary)", got, pid)
		}
	})
}

// TestReplicaKilledUnderLoad: SIGKILL of the replica server while users
// read and write through two serve processes costs no request an error;
// when it is back, the reads return to it.
func TestReplicaKilledUnderLoad(t *testing.T) {
	forEachReplicaPair(t, func(t *testing.T, p *replicaPair) {
		env := p.env(t)
		over := []string{"FEEDD_FANOUT_MODE", "pull", "FEEDD_RATE_USER_READ", "0", "FEEDD_RATE_USER_WRITE", "0"}
		procs := []*instance{startRole(t, "serve", env, nil, over...), startRole(t, "serve", env, nil, over...)}
		startRole(t, "work", env, nil, over...)
		var users, toks []string
		for i := range 4 {
			id, tok := procs[0].user("u" + strconv.Itoa(i))
			users, toks = append(users, id), append(toks, tok)
		}
		for i, tok := range toks {
			for j, id := range users {
				if j != i {
					procs[0].follow(tok, id)
				}
			}
		}
		for _, in := range procs {
			replicaServes(t, in, 20*time.Second)
		}

		ctx, stop := context.WithCancel(context.Background())
		var failed, done atomic.Int64
		var firstErr atomic.Value
		var load sync.WaitGroup
		for i, tok := range toks {
			load.Go(func() {
				// Two users post, two read: a user who writes reads the
				// primary until the replica has the write.
				in := procs[i%2]
				for n := 0; ctx.Err() == nil; n++ {
					method, path, body := "GET", "/v1/me/feed?limit=20", any(nil)
					if i < 2 {
						method, path, body = "POST", "/v1/posts", map[string]any{"content": "load " + strconv.Itoa(n)}
					}
					time.Sleep(10 * time.Millisecond)
					r := in.do(method, path, tok, body)
					done.Add(1)
					if r.status >= 300 {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("%s %s: %d %s", method, path, r.status, r.raw))
					}
				}
			})
		}
		// The readers' follows are a second old: their reads are the
		// replica's.
		time.Sleep(time.Second)
		before, _ := counts(t, procs[0])
		time.Sleep(time.Second)
		if after, _ := counts(t, procs[0]); after["replica/select"] <= before["replica/select"] {
			t.Fatalf("replica SELECTs under load: %v then %v; want the readers' reads on the replica", before["replica/select"], after["replica/select"])
		}
		p.script(t, "kill-replica")
		t.Cleanup(func() { p.script(t, "start-replica") })
		time.Sleep(3 * time.Second)
		for _, in := range procs {
			if up := metric(t, in, "feedd_sql_replica_up"); up != 0 {
				t.Errorf("feedd_sql_replica_up with the replica killed = %v; want 0", up)
			}
		}
		p.script(t, "start-replica")
		for _, in := range procs {
			replicaServes(t, in, 30*time.Second)
		}
		before, _ = counts(t, procs[0])
		time.Sleep(time.Second)
		after, _ := counts(t, procs[0])
		stop()
		load.Wait()
		if n := failed.Load(); n > 0 {
			t.Fatalf("%d of %d requests failed while the replica was killed and restarted; first: %v", n, done.Load(), firstErr.Load())
		}
		if after["replica/select"] <= before["replica/select"] {
			t.Errorf("replica SELECTs after the replica came back: %v then %v; want the reads back on it", before["replica/select"], after["replica/select"])
		}
		t.Logf("%d requests, none failed", done.Load())
	})
}

// TestReplicaLagUnderWrites measures, on each pair, the replica's lag as
// feedd's heartbeat sees it under a steady publish load through two serve
// processes, and what a write's mark costs (docs/clusters.md has the
// figures): the replica stays readable (within the default max lag)
// throughout.
func TestReplicaLagUnderWrites(t *testing.T) {
	forEachReplicaPair(t, func(t *testing.T, p *replicaPair) {
		env := p.env(t)
		over := []string{"FEEDD_RATE_USER_WRITE", "0", "FEEDD_RATE_WRITE", "0"}
		procs := []*instance{startRole(t, "serve", env, nil, over...), startRole(t, "serve", env, nil, over...)}
		startRole(t, "work", env, nil, over...)
		var toks []string
		for i := range 8 {
			_, tok := procs[0].user("w" + strconv.Itoa(i))
			toks = append(toks, tok)
		}
		replicaServes(t, procs[1], 20*time.Second)

		// A write's mark is one SET, a read's check one GET: each a
		// Redis round trip, beside a PING's.
		rc := redisOf(t, env)
		marks := freshness.New(rc, env["FEEDD_REDIS_PREFIX"], 10*time.Second, slog.New(slog.DiscardHandler))
		const n = 100
		ctx := context.Background()
		t0 := time.Now()
		for range n {
			rc.Ping(ctx)
		}
		t1 := time.Now()
		for u := range n {
			marks.Wrote(ctx, int64(u))
		}
		t2 := time.Now()
		for u := range n {
			marks.Reading(ctx, int64(u))
		}
		t.Logf("%s: a Redis PING %v, a write's mark %v, a read's check %v (means of %d, one client)",
			p.name, t1.Sub(t0)/n, t2.Sub(t1)/n, time.Since(t2)/n, n)

		ctx, stop := context.WithCancel(ctx)
		var posts, failed atomic.Int64
		var load sync.WaitGroup
		for i, tok := range toks {
			load.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					if r := procs[i%2].do("POST", "/v1/posts", tok, map[string]any{"content": "lag " + strconv.Itoa(n)}); r.status != 201 {
						failed.Add(1)
					}
					posts.Add(1)
				}
			})
		}
		var lags []float64
		start := time.Now()
		for time.Since(start) < 3*time.Second {
			time.Sleep(100 * time.Millisecond)
			lags = append(lags, metric(t, procs[1], "feedd_sql_replica_lag_seconds"))
		}
		stop()
		load.Wait()
		elapsed := time.Since(start)
		slices.Sort(lags)
		if failed.Load() > 0 {
			t.Errorf("%d of %d publishes failed", failed.Load(), posts.Load())
		}
		if lags[len(lags)-1] > 10 {
			t.Errorf("replica lag under %0.f publishes/s reached %.2f s; want it within the default max lag (10 s)", float64(posts.Load())/elapsed.Seconds(), lags[len(lags)-1])
		}
		t.Logf("%s: %.0f publishes/s through 2 serve processes: replica lag p50 %.3f s, max %.3f s (%d samples)",
			p.name, float64(posts.Load())/elapsed.Seconds(), lags[len(lags)/2], lags[len(lags)-1], len(lags))

	})
}
