package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/testenv"
)

// sqlServer is the SQL server under a stack of real services, MariaDB or
// PostgreSQL: what the tests do differently on the two is here, and a
// test finds the server of its stack from the stack's environment
// (serverOf).
type sqlServer struct {
	// variable and readVariable are the settings that name a feedd's
	// database and its read replica on this server.
	variable, readVariable string
	// testDSN is the DSN of the server the tests use, as a user that
	// may create databases.
	testDSN func() string
	// create creates a database for one test, dropped when it ends, and
	// returns its DSN.
	create func(tb testing.TB) string
	// addr returns the host:port of a DSN of this server.
	addr func(tb testing.TB, dsn string) string
}

var mariaDB = &sqlServer{
	variable:     "FEEDD_MYSQL_DSN",
	readVariable: "FEEDD_MYSQL_READ_DSN",
	testDSN:      testenv.MySQLDSN,
	create:       func(tb testing.TB) string { return testenv.CreateDatabase(tb, "feedd_e2e_") },
	addr: func(tb testing.TB, dsn string) string {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			tb.Fatalf("a MySQL DSN does not parse: %v", err)
		}
		return cfg.Addr
	},
}

var postgreSQL = &sqlServer{
	variable:     "FEEDD_POSTGRES_DSN",
	readVariable: "FEEDD_POSTGRES_READ_DSN",
	testDSN:      testenv.PostgresDSN,
	create:       func(tb testing.TB) string { return testenv.CreatePostgresDatabase(tb, "feedd_e2e_") },
	addr: func(tb testing.TB, dsn string) string {
		u, err := url.Parse(dsn)
		if err != nil {
			tb.Fatalf("a PostgreSQL URL does not parse: %v", err)
		}
		if u.Port() == "" {
			return u.Hostname() + ":5432"
		}
		return u.Host
	},
}

// servicesEnv creates a database on server and a queue prefix for one
// test (or benchmark) and returns the environment of a feedd on them and
// on redisURL. Without the SQL server, RabbitMQ or the single Redis the
// test skips on a laptop and fails under CI=true (a Cluster's caller
// checks it).
func servicesEnv(tb testing.TB, server *sqlServer, redisURL string) map[string]string {
	tb.Helper()
	amqpURL, amqpPrefix := testenv.AMQPURL(), "e2e"+testenv.RandHex(4)+"."
	u, err := url.Parse(amqpURL)
	if err != nil {
		tb.Fatalf("FEEDD_TEST_AMQP_URL: %v", err)
	}
	need := []string{u.Host}
	if r, err := url.Parse(redisURL); err == nil && r.Scheme == "redis" {
		need = append(need, r.Host)
	}
	feedtest.RequireServices(tb, need...)
	env := map[string]string{
		server.variable:      createDatabase(tb, server),
		"FEEDD_REDIS_URL":    redisURL,
		"FEEDD_REDIS_PREFIX": "e2e" + testenv.RandHex(4) + ":",
		"FEEDD_AMQP_URL":     amqpURL,
		"FEEDD_AMQP_PREFIX":  amqpPrefix,
		"FEEDD_ADMIN_TOKEN":  "admin-" + testenv.RandHex(16),
		"FEEDD_JWT_SECRET":   testenv.RandHex(16),
	}
	tb.Cleanup(func() { testenv.DeleteQueues(tb, amqpURL, amqpPrefix) })
	return env
}

// createDatabase creates a database on server for one test, dropped when
// it ends, and returns its DSN. Without the server the test skips on a
// laptop and fails under CI=true.
func createDatabase(tb testing.TB, server *sqlServer) string {
	tb.Helper()
	feedtest.RequireServices(tb, server.addr(tb, server.testDSN()))
	return server.create(tb)
}

// serverOf returns the SQL server of a stack's environment: nil on the
// embedded stack, whose SQLite lives in the process.
func serverOf(env map[string]string) *sqlServer {
	for _, s := range []*sqlServer{mariaDB, postgreSQL} {
		if env[s.variable] != "" {
			return s
		}
	}
	return nil
}

// stallSQL puts a stallProxy between env's feedd and its SQL server, by
// rewriting the server's address in env's DSN.
func stallSQL(t *testing.T, env map[string]string) *stallProxy {
	t.Helper()
	s := serverOf(env)
	if s == nil {
		t.Fatal("stallSQL: the stack has no SQL server")
	}
	addr := s.addr(t, env[s.variable])
	proxy := newStallProxy(t, addr)
	env[s.variable] = strings.Replace(env[s.variable], addr, proxy.addr(), 1)
	return proxy
}
