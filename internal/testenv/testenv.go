// Package testenv holds helpers for tests that start feedd and its
// services: where the services are, a database and queue names of a test's
// own that are removed when it ends, random names and secrets, a buffer
// that collects a process's output, and polling for a condition.
// Whether a service is there at all is feedtest.RequireServices' question.
package testenv

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/feedd/feedd/internal/feed"
)

// The services' loopback defaults, which FEEDD_TEST_MYSQL_DSN,
// FEEDD_TEST_POSTGRES_DSN and FEEDD_TEST_AMQP_URL override. Redis is not here: each package that
// starts feedd on Redis has a database number of its own.
const (
	defaultMySQL = "root@tcp(127.0.0.1:3306)/"
	defaultAMQP  = "amqp://guest:guest@127.0.0.1:5672/"
	// The machine's PostgreSQL trusts local users; postgres may create
	// databases.
	defaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
)

// PostgresDSN is the URL of the PostgreSQL server tests use, as a user
// that may create databases.
func PostgresDSN() string { return Getenv("FEEDD_TEST_POSTGRES_DSN", defaultPostgres) }

// CreatePostgresDatabase creates a database named prefix and a random
// suffix on the server of PostgresDSN, drops it when tb ends, and returns
// its URL.
func CreatePostgresDatabase(tb testing.TB, prefix string) string {
	tb.Helper()
	return CreatePostgresDatabaseOn(tb, PostgresDSN(), prefix)
}

// CreatePostgresDatabaseOn is CreatePostgresDatabase on the server of
// server, the URL of a user that may create databases.
func CreatePostgresDatabaseOn(tb testing.TB, server, prefix string) string {
	tb.Helper()
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("%q is not a postgres:// URL", server)
	}
	root, err := sql.Open("pgx", u.String())
	if err != nil {
		tb.Fatal(err)
	}
	db := prefix + RandHex(6)
	if _, err := root.Exec("CREATE DATABASE " + db); err != nil {
		root.Close()
		tb.Fatalf("create database %s: %v", db, err)
	}
	tb.Cleanup(func() {
		// FORCE: a process the test killed may leave a session behind.
		if _, err := root.Exec("DROP DATABASE IF EXISTS " + db + " WITH (FORCE)"); err != nil {
			tb.Errorf("drop database %s: %v", db, err)
		}
		root.Close()
	})
	u.Path = "/" + db
	return u.String()
}

// MySQLDSN is the DSN of the MariaDB server tests use, as a user that may
// create databases, with no database chosen.
func MySQLDSN() string { return Getenv("FEEDD_TEST_MYSQL_DSN", defaultMySQL) }

// AMQPURL is the URL of the RabbitMQ tests use.
func AMQPURL() string { return Getenv("FEEDD_TEST_AMQP_URL", defaultAMQP) }

// Getenv returns the environment variable key, or def when it is unset or
// empty.
func Getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// RandHex returns n random bytes in hex: a name or a secret that no other
// test, and no earlier run, uses.
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateDatabase creates a database named prefix and a random suffix on
// the server of MySQLDSN, drops it when tb ends, and returns its DSN.
func CreateDatabase(tb testing.TB, prefix string) string {
	tb.Helper()
	return CreateDatabaseOn(tb, MySQLDSN(), prefix)
}

// CreateDatabaseOn is CreateDatabase on the server of server, the DSN of
// a user that may create databases.
func CreateDatabaseOn(tb testing.TB, server, prefix string) string {
	tb.Helper()
	cfg, err := mysql.ParseDSN(server)
	if err != nil {
		tb.Fatalf("a MySQL DSN does not parse: %v", err)
	}
	root, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		tb.Fatal(err)
	}
	db := prefix + RandHex(6)
	if _, err := root.Exec("CREATE DATABASE " + db + " CHARACTER SET utf8mb4"); err != nil {
		root.Close()
		tb.Fatalf("create database %s: %v", db, err)
	}
	tb.Cleanup(func() {
		if _, err := root.Exec("DROP DATABASE IF EXISTS " + db); err != nil {
			tb.Errorf("drop database %s: %v", db, err)
		}
		root.Close()
	})
	cfg.DBName = db
	return cfg.FormatDSN()
}

// DialAMQP connects to the first node of url that answers: url may list
// the nodes of a cluster, comma-separated, as FEEDD_AMQP_URL does, and a
// test that kills one still inspects the cluster through another.
func DialAMQP(url string) (*amqp.Connection, error) {
	var errs []error
	for _, u := range strings.Split(url, ",") {
		conn, err := amqp.Dial(strings.TrimSpace(u))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// DeleteQueues deletes the queues and the dead-letter exchange that a
// feedd with the AMQP prefix declared on the broker at url; those it never
// declared are no error.
//
// RabbitMQ 3.10 can crash the dead-letter worker of a quorum queue that is
// deleted while the worker is still starting, and enough such crashes
// take down its supervisor, after which every quorum queue of the broker
// fails for minutes. Tests therefore let the work processes they start
// consume (or run for a while) before they end.
func DeleteQueues(tb testing.TB, url, prefix string) {
	conn, err := DialAMQP(url)
	if err != nil {
		tb.Logf("cleanup: dial rabbitmq: %v", err)
		return
	}
	defer conn.Close()
	// A channel per call: a refusal closes the channel it came on.
	each := func(f func(ch *amqp.Channel) error) {
		ch, err := conn.Channel()
		if err != nil {
			tb.Logf("cleanup: rabbitmq channel: %v", err)
			return
		}
		defer ch.Close()
		if err := f(ch); err != nil && !IsNotFound(err) {
			tb.Logf("cleanup: %v", err)
		}
	}
	for _, q := range []string{feed.QueuePosts, feed.QueueTasks, feed.QueueLikes} {
		for _, name := range []string{prefix + q, prefix + q + ".dead"} {
			each(func(ch *amqp.Channel) error {
				_, err := ch.QueueDelete(name, false, false, false)
				return err
			})
		}
	}
	each(func(ch *amqp.Channel) error { return ch.ExchangeDelete(prefix+"dlx", false, false) })
}

// IsNotFound reports whether RabbitMQ refused a call because the queue or
// exchange does not exist.
func IsNotFound(err error) bool {
	var e *amqp.Error
	return errors.As(err, &e) && e.Code == amqp.NotFound
}

// SyncBuffer collects a process's output (or a logger's) while the test
// reads it: writes and reads may come from different goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Eventually polls cond until it holds, and fails tb if it does not
// within; what says what was awaited.
func Eventually(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
