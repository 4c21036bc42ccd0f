package testenv

import (
	"database/sql"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

// The Galera trio that .ci/galera.sh starts; FEEDD_TEST_GALERA_DSN
// overrides it.
const defaultGalera = "root@tcp(127.0.0.1:3311,127.0.0.1:3312,127.0.0.1:3313)/"

// GaleraDSN is the multi-host DSN of the Galera cluster tests use, as a
// user that may create databases, naming none.
func GaleraDSN() string { return Getenv("FEEDD_TEST_GALERA_DSN", defaultGalera) }

// GaleraHosts returns the host:port list of GaleraDSN, in its order.
func GaleraHosts(tb testing.TB) []string {
	tb.Helper()
	dsn := GaleraDSN()
	open, end := strings.Index(dsn, "@tcp("), strings.LastIndex(dsn, ")/")
	if open < 0 || end < open {
		tb.Fatalf("FEEDD_TEST_GALERA_DSN=%q is not user@tcp(host:port,host:port,…)/", dsn)
	}
	return strings.Split(dsn[open+len("@tcp("):end], ",")
}

// galeraNode returns a single-host DSN of the cluster's node at addr.
func galeraNode(tb testing.TB, addr string) *mysql.Config {
	tb.Helper()
	dsn := GaleraDSN()
	open, end := strings.Index(dsn, "@tcp("), strings.LastIndex(dsn, ")/")
	cfg, err := mysql.ParseDSN(dsn[:open] + "@tcp(" + addr + dsn[end:])
	if err != nil {
		tb.Fatalf("FEEDD_TEST_GALERA_DSN does not parse: %v", err)
	}
	return cfg
}

// GaleraNodeDB opens a pool on the one node at addr of the cluster (for
// what a test asks of a node: its status), closed when the test ends.
func GaleraNodeDB(tb testing.TB, addr string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("mysql", galeraNode(tb, addr).FormatDSN())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// CreateGaleraDatabase creates a database of the test's own on the Galera
// cluster (through the first node that takes it: the cluster replicates
// the DDL), dropped when the test ends, and returns the multi-host DSN
// that names it.
func CreateGaleraDatabase(tb testing.TB, prefix string) string {
	tb.Helper()
	db := prefix + RandHex(6)
	if err := onAnyNode(tb, "CREATE DATABASE "+db+" CHARACTER SET utf8mb4"); err != nil {
		tb.Fatalf("create database %s on the Galera cluster: %v", db, err)
	}
	tb.Cleanup(func() {
		if err := onAnyNode(tb, "DROP DATABASE IF EXISTS "+db); err != nil {
			tb.Errorf("drop database %s on the Galera cluster: %v", db, err)
		}
	})
	dsn := GaleraDSN()
	end := strings.LastIndex(dsn, ")/") + len(")/")
	return dsn[:end] + db + dsn[end:]
}

// onAnyNode runs stmt on the first node that takes it.
func onAnyNode(tb testing.TB, stmt string) error {
	tb.Helper()
	var errs []error
	for _, addr := range GaleraHosts(tb) {
		cfg := galeraNode(tb, addr)
		cfg.Timeout = 2 * time.Second
		db, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return err
		}
		_, err = db.Exec(stmt)
		db.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return errors.Join(errs...)
}

// UseGalera readies a test for the Galera cluster. Tests in several test
// binaries (packages run in parallel) share it: one that kills nodes
// (kills) waits until no other test uses the cluster and has it to itself;
// one that only uses it waits for those that kill. It skips the test
// loudly when a node does not answer, and fails it under CI=true. A test
// that kills nodes has every node started again when it ends, whatever it
// left.
func UseGalera(tb testing.TB, kills bool) {
	tb.Helper()
	lockGalera(tb, kills)
	feedtest.RequireServices(tb, GaleraHosts(tb)...)
	if kills {
		tb.Cleanup(func() { Galera(tb, "up") })
	}
}

// lockGalera takes a lock shared by every test of the cluster, exclusively
// or not, released when the test ends.
func lockGalera(tb testing.TB, exclusive bool) { lockFile(tb, "galera", exclusive) }

// Galera runs .ci/galera.sh with args (kill N, start N) and returns its
// output; a failure fails the test.
func Galera(tb testing.TB, args ...string) string {
	tb.Helper()
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", ".ci", "galera.sh")
	out, err := exec.Command("bash", append([]string{script}, args...)...).CombinedOutput()
	if err != nil {
		tb.Fatalf(".ci/galera.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
