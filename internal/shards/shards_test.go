package shards_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// openSharded migrates and opens n logical shards on the two MariaDB
// servers (or PostgreSQL's).
func openSharded(t *testing.T, n int, postgres bool) *shards.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := shards.Parse(n, testenv.ShardSpec(t, n, postgres))
	if err != nil {
		t.Fatal(err)
	}
	if err := shards.Migrate(ctx, m); err != nil {
		t.Fatal(err)
	}
	s, err := shards.Open(ctx, m, sqlstore.Pools{Write: 8}, sqlstore.DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMigrateRecordsEachShard(t *testing.T) {
	feedtest.RequireServices(t)
	ctx := context.Background()
	spec := testenv.ShardSpec(t, 4, false)
	m, err := shards.Parse(4, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := shards.Migrate(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := shards.Migrate(ctx, m); err != nil { // idempotent
		t.Fatalf("second migrate: %v", err)
	}
	s, err := shards.Open(ctx, m, sqlstore.Pools{Write: 4}, sqlstore.DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The first server's databases, read as the two shards of a 2-shard
	// map, disagree with the data: they are shards 0 and 1 of 4.
	two := shards.Map{N: 2, Places: []shards.Place{{From: 0, To: 1, DSN: m.Places[0].DSN}}}
	if _, err := shards.Open(ctx, two, sqlstore.Pools{Write: 4}, sqlstore.DefaultTimeouts); !errors.Is(err, sqlstore.ErrShardMismatch) {
		t.Fatalf("open as 2 shards: %v, want ErrShardMismatch", err)
	}
}
