package sqlstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

// TestPostgresReadOnlyServer: a pooled connection whose server refuses a
// write as read-only (25006), as a standby does once the primary it was
// has failed over behind the same address, is dropped, and the write runs
// again on a new connection, once: the follow counts one follower. A
// session set read-only stands in for the standby; the pool holds one
// connection, so the write can only succeed on a new one.
func TestPostgresReadOnlyServer(t *testing.T) {
	setupPostgres(t)
	ctx := t.Context()
	s, err := OpenPostgresReplicated(ctx, testenv.CreatePostgresDatabase(t, "feedd_test_"), "", Pools{Write: 1}, DefaultTimeouts)
	if err != nil {
		t.Fatalf("OpenPostgresReplicated: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for _, id := range []int64{1, 2} {
		if _, err := s.CreateUser(ctx, feed.User{ID: id, Name: "u"}); err != nil {
			t.Fatalf("CreateUser %d: %v", id, err)
		}
	}
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	conn.Close() // back to the pool, read-only

	added, err := s.Follow(ctx, 1, 2)
	if err != nil || !added {
		t.Fatalf("Follow on a pool whose connection is read-only: got %v, %v; want true, nil (the write run again on a new connection)", added, err)
	}
	var ro string
	if err := s.DB().QueryRowContext(ctx, "SHOW default_transaction_read_only").Scan(&ro); err != nil || ro != "off" {
		t.Errorf("the pool's connection after the write: default_transaction_read_only = %q (%v); want off: a new connection", ro, err)
	}
	u, err := s.User(ctx, 2)
	if err != nil || u.FollowerCount != 1 {
		t.Errorf("followers of 2 = %d (%v); want 1", u.FollowerCount, err)
	}
}

// TestPostgresOpenNamesEveryHost: a multi-host DSN that reaches no host
// fails with a message naming them all, not the first alone.
func TestPostgresOpenNamesEveryHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := OpenPostgres(ctx, "postgres://feedd@127.0.0.1:1,127.0.0.1:2/feedd?sslmode=disable&target_session_attrs=read-write")
	if err == nil {
		t.Fatal("OpenPostgres on two closed ports: got nil; want an error")
	}
	if want := "127.0.0.1:1,127.0.0.1:2/feedd"; !strings.Contains(err.Error(), want) {
		t.Errorf("OpenPostgres on two closed ports: %v; want it to name %s", err, want)
	}
}
