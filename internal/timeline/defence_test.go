package timeline

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
)

// countingStore counts the SQL loads of post bodies and of users, and
// holds each for a moment so that concurrent readers really overlap.
type countingStore struct {
	Store
	posts, users atomic.Int64
	hold         time.Duration
}

func (c *countingStore) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	c.posts.Add(1)
	time.Sleep(c.hold)
	return c.Store.Posts(ctx, ids)
}

func (c *countingStore) User(ctx context.Context, id int64) (feed.User, error) {
	c.users.Add(1)
	time.Sleep(c.hold)
	return c.Store.User(ctx, id)
}

func newTestService(t *testing.T, cfg Config, opts ...Option) (*Service, *countingStore, *inmemcache.Cache) {
	t.Helper()
	st := testStore(t)
	cs := &countingStore{Store: st, hold: 50 * time.Millisecond}
	cache := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { cache.Close() })
	cfg.Policy = feed.DeliveryPolicy{Mode: feed.ModePush}
	return New(slog.New(slog.DiscardHandler), cfg, cs, cache, nil, feed.NewIDGen(nil), nil, opts...), cs, cache
}

func TestConcurrentMissesCollapse(t *testing.T) {
	ctx := context.Background()
	// Post bodies expire from the cache at once: every read misses it.
	svc, cs, _ := newTestService(t, Config{PostTTL: time.Nanosecond})
	author, err := svc.CreateUser(ctx, 0, "celebrity")
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Publish(ctx, author.ID, "the hot post", "")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	cs.posts.Store(0)
	cs.users.Store(0)

	const readers = 40
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 2*readers)
	for range readers {
		wg.Go(func() {
			<-start
			got, err := svc.Post(ctx, p.ID)
			if err == nil && got.Content != "the hot post" {
				err = feed.Errorf(feed.EINTERNAL, "got %q", got.Content)
			}
			errs <- err
		})
		wg.Go(func() {
			<-start
			_, err := svc.User(ctx, author.ID)
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Readers that arrive while a load is in flight join it; the 50 ms
	// hold makes all 40 arrive during the first.
	if n := cs.posts.Load(); n > 2 {
		t.Errorf("%d readers of one missing post sent %d SQL loads; want them collapsed (<= 2)", readers, n)
	}
	if n := cs.users.Load(); n > 2 {
		t.Errorf("%d readers of one user sent %d SQL loads; want them collapsed (<= 2)", readers, n)
	}
	t.Logf("%d concurrent readers: %d post loads, %d user loads", readers, cs.posts.Load(), cs.users.Load())
}

func TestHotPostSurvivesCacheExpiry(t *testing.T) {
	ctx := context.Background()
	svc, cs, _ := newTestService(t, Config{PostTTL: time.Nanosecond}, WithHotPosts(100, time.Minute))
	author, _ := svc.CreateUser(ctx, 0, "a")
	p, err := svc.Publish(ctx, author.ID, "hot", "")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond) // the cache key has expired
	cs.posts.Store(0)
	for range 20 {
		if got, err := svc.Post(ctx, p.ID); err != nil || got.Content != "hot" {
			t.Fatalf("post = %+v, %v", got, err)
		}
	}
	if n := cs.posts.Load(); n != 0 {
		t.Errorf("%d SQL loads of a hot post whose cache key expired; want 0 (served from memory)", n)
	}
	// A delete in this process is seen at once.
	if err := svc.DeletePost(ctx, author.ID, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Post(ctx, p.ID); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("deleted hot post: err %v; want not found", err)
	}
}

// downStore fails every call while down is set, as a database that went
// away.
type downStore struct {
	Store
	down atomic.Bool
}

var errConnRefused = errors.New("dial tcp 127.0.0.1:3306: connect: connection refused")

func (d *downStore) FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error) {
	if d.down.Load() {
		return nil, errConnRefused
	}
	return d.Store.FeedPostIDs(ctx, reader, after, before, n)
}

func (d *downStore) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	if d.down.Load() {
		return nil, errConnRefused
	}
	return d.Store.Posts(ctx, ids)
}

func (d *downStore) CreatePost(ctx context.Context, p feed.Post, key string) (feed.Post, bool, error) {
	if d.down.Load() {
		return feed.Post{}, false, errConnRefused
	}
	return d.Store.CreatePost(ctx, p, key)
}

// TestDegradedReads: with SQL down, a first page comes from the inbox, or
// from the reader's last good page once the inbox is gone; it is marked
// degraded; a write fails fast with "unavailable".
func TestDegradedReads(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	ds := &downStore{Store: st}
	cache := inmemcache.New(inmemcache.Options{})
	defer cache.Close()
	svc := New(slog.New(slog.DiscardHandler), Config{Policy: feed.DeliveryPolicy{Mode: feed.ModePush}, RefreshInterval: time.Nanosecond},
		ds, cache, nil, feed.NewIDGen(nil), nil,
		WithBreaker(breaker.Config{Failures: 2, Cooldown: time.Hour}), WithSwitches(degrade.New(slog.New(slog.DiscardHandler), nil, nil)))
	author, _ := svc.CreateUser(ctx, 0, "author")
	reader, _ := svc.CreateUser(ctx, 0, "reader")
	if err := svc.Follow(ctx, reader.ID, author.ID); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := range 3 {
		p, err := svc.Publish(ctx, author.ID, "p"+strconv.Itoa(i), "")
		if err != nil {
			t.Fatal(err)
		}
		want = append([]int64{p.ID}, want...)
	}
	read := func() ([]int64, bool) {
		t.Helper()
		rctx, notes := feed.WithNotes(ctx)
		posts, _, err := svc.Feed(rctx, reader.ID, 0, 10)
		if err != nil {
			t.Fatalf("feed: %v", err)
		}
		var ids []int64
		for _, p := range posts {
			ids = append(ids, p.ID)
		}
		return ids, notes.Degraded()
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
	_, err := svc.Publish(ctx, author.ID, "refused", "")
	if feed.ErrorCode(err) != feed.EUNAVAILABLE {
		t.Fatalf("publish with the breaker open: %v; want unavailable", err)
	}
}
