package timeline

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
)

// downStore fails every call while down is set, as a database that went
// away.
type downStore struct {
	fullStore
	down atomic.Bool
}

var errConnRefused = errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")

func (d *downStore) FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error) {
	if d.down.Load() {
		return nil, errConnRefused
	}
	return d.fullStore.FeedPostIDs(ctx, reader, after, before, n)
}

func (d *downStore) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	if d.down.Load() {
		return nil, errConnRefused
	}
	return d.fullStore.Posts(ctx, ids)
}

func (d *downStore) CreatePost(ctx context.Context, p feed.Post, key feed.Idempotency) (feed.Post, bool, error) {
	if d.down.Load() {
		return feed.Post{}, false, errConnRefused
	}
	return d.fullStore.CreatePost(ctx, p, key)
}

// TestDegradedReads: with SQL down, a first page comes from the inbox, or
// from the reader's last good page once the inbox is gone; it is marked
// degraded; a write fails fast with "unavailable".
func TestDegradedReads(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	ds := &downStore{fullStore: st}
	cache := inmemcache.New(inmemcache.Options{})
	defer cache.Close()
	svc := newWithWrites(slog.New(slog.DiscardHandler), Config{Policy: feed.DeliveryPolicy{Mode: feed.ModePush}, RefreshInterval: time.Nanosecond},
		ds, cache, nil, feed.NewIDGen(nil), nil,
		WithBreaker(breaker.Config{Failures: 2, Cooldown: time.Hour}), WithSwitches(degrade.New(slog.New(slog.DiscardHandler), nil, nil)))
	author, _ := svc.CreateUser(ctx, 0, "author", "")
	reader, _ := svc.CreateUser(ctx, 0, "reader", "")
	if err := svc.Follow(ctx, reader.ID, author.ID); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := range 3 {
		p, err := svc.Publish(ctx, author.ID, feed.Draft{Content: "p" + strconv.Itoa(i)}, feed.Idempotency{})
		if err != nil {
			t.Fatal(err)
		}
		want = append([]int64{p.ID}, want...)
	}
	read := func() ([]int64, bool) {
		t.Helper()
		pg, err := svc.Feed(ctx, reader.ID, 0, 10)
		if err != nil {
			t.Fatalf("feed: %v", err)
		}
		var ids []int64
		for _, p := range pg.Posts {
			ids = append(ids, p.ID)
		}
		return ids, pg.Degraded
	}
	if got, deg := read(); !slices.Equal(got, want) || deg {
		t.Fatalf("healthy read = %v degraded=%v; want %v, not degraded", got, deg, want)
	}

	ds.down.Store(true)
	for i := range 4 {
		got, deg := read()
		if !slices.Equal(got, want) || !deg {
			t.Fatalf("read %d with SQL down = %v degraded=%v; want %v from the inbox, degraded", i, got, deg, want)
		}
	}
	if !svc.breaker.Open() {
		t.Fatal("the breaker did not open")
	}
	// The inbox is lost too: the last good first page is served.
	if err := cache.DropInbox(ctx, reader.ID); err != nil {
		t.Fatal(err)
	}
	if got, deg := read(); !slices.Equal(got, want) || !deg {
		t.Fatalf("read without inbox and SQL = %v degraded=%v; want the last good page %v", got, deg, want)
	}
	_, err := svc.Publish(ctx, author.ID, feed.Draft{Content: "refused"}, feed.Idempotency{})
	if feed.ErrorCode(err) != feed.EUNAVAILABLE {
		t.Fatalf("publish with the breaker open: %v; want unavailable", err)
	}
}
