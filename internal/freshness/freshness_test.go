package freshness

import (
	"cmp"
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
)

// testRedis is a client of the test Redis and a key prefix of the test's
// own, deleted when it ends.
func testRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	ctx := context.Background()
	url := cmp.Or(os.Getenv("FEEDD_TEST_REDIS_URL"), "redis://127.0.0.1:6379/1")
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		feedtest.Missing(t, "Redis at %s (FEEDD_TEST_REDIS_URL) is unreachable: %v", opt.Addr, err)
	}
	prefix := "feeddtest:" + rand.Text()[:12] + ":"
	t.Cleanup(func() {
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		client.Close()
	})
	return client, prefix
}

// lastWrite is what a request of user reads with: the time its reads
// must see, or zero.
func lastWrite(ctx context.Context, m *Marks, user int64) time.Time {
	t, _ := feed.LastWrite(m.Reading(ctx, user))
	return t
}

// TestMarks: a user's write is seen by that user's next request through
// any process sharing the Redis, not by another user's; when Redis lost
// its data or does not answer, every request reads as if it had just
// written (the primary).
func TestMarks(t *testing.T) {
	ctx := context.Background()
	client, prefix := testRedis(t)
	one := New(client, prefix, 10*time.Second, slog.New(slog.DiscardHandler))
	two := New(client, prefix, 10*time.Second, slog.New(slog.DiscardHandler))

	// A Redis that never kept marks may have lost some: everyone reads
	// the primary until a mark's lifetime has passed.
	before := time.Now()
	if got := lastWrite(ctx, two, 7); got.Before(before) {
		t.Fatalf("a fresh Redis: last write %v; want now (the primary)", got)
	}
	// One that has kept them for long.
	if err := client.Set(ctx, prefix+"wrote:since", 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	two.checked.Store(0)
	if got := lastWrite(ctx, two, 7); !got.IsZero() {
		t.Fatalf("a user who wrote nothing: last write %v; want none", got)
	}
	w := time.Now().Truncate(time.Microsecond) // marks keep microseconds
	one.Wrote(ctx, 7)
	if got := lastWrite(ctx, two, 7); got.Before(w) || got.After(time.Now()) {
		t.Errorf("after user 7 wrote at %v, its next request elsewhere reads with %v", w, got)
	}
	if got := lastWrite(ctx, two, 8); !got.IsZero() {
		t.Errorf("user 8 reads with user 7's write (%v)", got)
	}

	// Redis lost its data: the sentinel went with the marks.
	if err := client.Del(ctx, prefix+"wrote:since", prefix+"wrote:7").Err(); err != nil {
		t.Fatal(err)
	}
	two.checked.Store(0)
	if got := lastWrite(ctx, two, 7); got.Before(w) {
		t.Errorf("after Redis lost the marks: last write %v; want now (the primary)", got)
	}

	// Redis does not answer.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	dead := New(down, prefix, 10*time.Second, slog.New(slog.DiscardHandler))
	if got := lastWrite(ctx, dead, 7); got.Before(w) {
		t.Errorf("with Redis down: last write %v; want now (the primary)", got)
	}
}

// TestMarksInMemory: without Redis (one process), the marks are kept in
// memory.
func TestMarksInMemory(t *testing.T) {
	ctx := context.Background()
	m := New(nil, "", 10*time.Second, slog.New(slog.DiscardHandler))
	w := time.Now()
	m.Wrote(ctx, 7)
	if got := lastWrite(ctx, m, 7); got.Before(w) {
		t.Errorf("after user 7 wrote: last write %v; want at or after %v", got, w)
	}
	if got := lastWrite(ctx, m, 8); !got.IsZero() {
		t.Errorf("user 8 reads with user 7's write (%v)", got)
	}
}
