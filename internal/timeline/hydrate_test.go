package timeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
)

// countingStore counts the SQL loads of post bodies and of users, and
// holds each for a moment so that concurrent readers really overlap.
type countingStore struct {
	fullStore
	posts, users atomic.Int64
	hold         time.Duration
}

func (c *countingStore) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	c.posts.Add(1)
	time.Sleep(c.hold)
	return c.fullStore.Posts(ctx, ids)
}

func (c *countingStore) User(ctx context.Context, id int64) (feed.User, error) {
	c.users.Add(1)
	time.Sleep(c.hold)
	return c.fullStore.User(ctx, id)
}

func newTestService(t *testing.T, cfg Config, opts ...Option) (*testService, *countingStore, *inmemcache.Cache) {
	t.Helper()
	st := testStore(t)
	cs := &countingStore{fullStore: st, hold: 50 * time.Millisecond}
	cache := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { cache.Close() })
	cfg.Policy = feed.DeliveryPolicy{Mode: feed.ModePush}
	return newWithWrites(slog.New(slog.DiscardHandler), cfg, cs, cache, nil, feed.NewIDGen(nil), nil, opts...), cs, cache
}

func TestConcurrentMissesCollapse(t *testing.T) {
	ctx := context.Background()
	// Post bodies expire from the cache at once: every read misses it.
	svc, cs, _ := newTestService(t, Config{PostTTL: time.Nanosecond})
	author, err := svc.CreateUser(ctx, 0, "celebrity", "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Publish(ctx, author.ID, feed.Draft{Content: "the hot post"}, feed.Idempotency{})
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
	author, _ := svc.CreateUser(ctx, 0, "a", "")
	p, err := svc.Publish(ctx, author.ID, feed.Draft{Content: "hot"}, feed.Idempotency{})
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
