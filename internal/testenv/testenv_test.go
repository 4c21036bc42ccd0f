package testenv

import (
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/go-sql-driver/mysql"
)

func TestGetenv(t *testing.T) {
	t.Setenv("FEEDD_TEST_TESTENV", "")
	if got := Getenv("FEEDD_TEST_TESTENV", "def"); got != "def" {
		t.Errorf("empty variable: got %q; want the default", got)
	}
	t.Setenv("FEEDD_TEST_TESTENV", "set")
	if got := Getenv("FEEDD_TEST_TESTENV", "def"); got != "set" {
		t.Errorf("set variable: got %q; want %q", got, "set")
	}
}

func TestRandHex(t *testing.T) {
	a, b := RandHex(6), RandHex(6)
	if len(a) != 12 || a == b {
		t.Errorf("RandHex(6) = %q, then %q; want 12 hex digits, different each time", a, b)
	}
}

func TestSyncBuffer(t *testing.T) {
	var buf SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = buf.Write([]byte("x"))
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	if n := len(buf.String()); n != 800 {
		t.Errorf("after 800 concurrent writes of one byte: %d bytes", n)
	}
}

func TestEventually(t *testing.T) {
	start := time.Now()
	Eventually(t, 5*time.Second, "a condition that holds after 50ms", func() bool { return time.Since(start) > 50*time.Millisecond })
}

// TestCreateDatabase: the database exists during the test, under the
// prefix, and is gone after it.
func TestCreateDatabase(t *testing.T) {
	cfg, err := mysql.ParseDSN(MySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	feedtest.RequireServices(t, cfg.Addr)
	var dsn string
	t.Run("create", func(t *testing.T) {
		dsn = CreateDatabase(t, "feedd_testenv_")
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var name string
		if err := db.QueryRow("SELECT DATABASE()").Scan(&name); err != nil || len(name) != len("feedd_testenv_")+12 {
			t.Fatalf("connected to database %q (%v); want feedd_testenv_ and 12 hex digits", name, err)
		}
	})
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil {
		t.Errorf("the database of %s is still there after its test", dsn)
	}
}
