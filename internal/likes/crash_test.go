package likes

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

// errKilled is what a killed process's calls return: nothing after the
// kill reaches the cache or the queue.
var errKilled = errors.New("process killed")

// dyingCache is the likes cache as a process sees it that is killed -9
// right after its call named at returns: that call takes effect, every
// later one (the revert included) does not.
type dyingCache struct {
	c    feed.LikeCache
	at   string
	dead *atomic.Bool
}

func (d *dyingCache) step(name string, err error) error {
	if err == nil && name == d.at {
		d.dead.Store(true)
	}
	return err
}

func (d *dyingCache) SetLiked(ctx context.Context, user, post int64, postTime time.Time, liked bool, cold *feed.LikeEntry, window int, ttl time.Duration) (feed.LikeChange, error) {
	if d.dead.Load() {
		return feed.LikeChange{}, errKilled
	}
	ch, err := d.c.SetLiked(ctx, user, post, postTime, liked, cold, window, ttl)
	if ch.Outcome != feed.LikeChanged {
		return ch, err
	}
	return ch, d.step("SetLiked", err)
}

func (d *dyingCache) RevertLike(ctx context.Context, user, post int64, ch feed.LikeChange) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.c.RevertLike(ctx, user, post, ch)
}

func (d *dyingCache) FillUserLikes(ctx context.Context, user int64, recent []feed.LikeEntry, complete bool, ttl time.Duration) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.c.FillUserLikes(ctx, user, recent, complete, ttl)
}

func (d *dyingCache) SettleLikes(ctx context.Context, tallies map[int64]feed.LikeTally, evs []feed.LikeEvent, ttl time.Duration) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.c.SettleLikes(ctx, tallies, evs, ttl)
}

func (d *dyingCache) LikeCount(ctx context.Context, post int64, ttl time.Duration) (int64, int64, bool, error) {
	if d.dead.Load() {
		return 0, 0, false, errKilled
	}
	return d.c.LikeCount(ctx, post, ttl)
}

func (d *dyingCache) MoveLikeCount(ctx context.Context, post, user, version, delta, since int64, ttl time.Duration) (int64, bool, error) {
	if d.dead.Load() {
		return 0, false, errKilled
	}
	n, ok, err := d.c.MoveLikeCount(ctx, post, user, version, delta, since, ttl)
	return n, ok, d.step("MoveLikeCount", err)
}

func (d *dyingCache) FinishLike(ctx context.Context, user, post, version int64) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.c.FinishLike(ctx, user, post, version)
}

func (d *dyingCache) FillLikeCounts(ctx context.Context, tallies map[int64]feed.LikeTally, ttl time.Duration) error {
	if d.dead.Load() {
		return errKilled
	}
	return d.c.FillLikeCounts(ctx, tallies, ttl)
}

func (d *dyingCache) LikeStates(ctx context.Context, reader int64, posts []int64, postTimes []time.Time, counted []int64, ttl time.Duration) (feed.LikeStates, error) {
	if d.dead.Load() {
		return feed.LikeStates{}, errKilled
	}
	return d.c.LikeStates(ctx, reader, posts, postTimes, counted, ttl)
}

func (d *dyingCache) RecentLikes(ctx context.Context, user int64) ([]feed.LikeEntry, bool, error) {
	if d.dead.Load() {
		return nil, false, errKilled
	}
	return d.c.RecentLikes(ctx, user)
}

// TestRetryFinishesAfterKill: a serve process killed between any two steps
// of a like leaves it unfinished; the client's retry on another process
// finishes it, so that the like is in SQL once and counted once, in SQL
// and in the cached counter. A later unlike, instead of a retry, finishes
// it too before undoing it.
func TestRetryFinishesAfterKill(t *testing.T) {
	for _, at := range []string{"SetLiked", "record", "MoveLikeCount", "never"} {
		for _, then := range []string{"retry", "unlike"} {
			t.Run(at+"/"+then, func(t *testing.T) {
				f := newFixture(t)
				ctx := t.Context()
				logger := slog.New(slog.DiscardHandler)
				w := NewWriter(logger, WriterConfig{Cache: f.cache}, f.store, prometheus.NewRegistry())
				post := f.posts[0].ID
				// User 3 liked the post before: the counter is cached at 1.
				if _, err := f.svc.Like(ctx, 3, post); err != nil {
					t.Fatal(err)
				}

				var dead atomic.Bool
				record := func(ctx context.Context, ev feed.LikeEvent) error {
					if dead.Load() {
						return errKilled
					}
					err := w.Submit(ctx, ev)
					if err == nil && at == "record" {
						dead.Store(true)
					}
					return err
				}
				victim := New(logger, Config{}, f.store, &dyingCache{c: f.cache, at: at, dead: &dead}, storePosts{f.store}, record, nil)
				// A process killed after the move would not answer; this one
				// answers, since a failed FinishLike only leaves the change
				// for the next call to finish.
				_, err := victim.Like(ctx, 2, post)
				if answered := at == "MoveLikeCount" || at == "never"; (err == nil) != answered {
					t.Fatalf("like on the process killed after %s: %v; want answered %v", at, err, answered)
				}

				// The client goes on through another process.
				next := New(logger, Config{}, f.store, f.cache, storePosts{f.store}, w.Submit, prometheus.NewRegistry())
				want := feed.LikeState{Count: 2, LikedByMe: true}
				if then == "unlike" {
					want = feed.LikeState{Count: 1}
				}
				for i := range 2 { // the second call must change nothing more
					var st feed.LikeState
					if then == "retry" {
						st, err = next.Like(ctx, 2, post)
					} else {
						st, err = next.Unlike(ctx, 2, post)
					}
					if err != nil || st != want {
						t.Fatalf("%s %d after a kill after %s = %+v, %v; want %+v", then, i, at, st, err, want)
					}
				}
				counts, err := f.store.LikeCounts(ctx, []int64{post})
				if err != nil || counts[post] != want.Count {
					t.Errorf("SQL count = %d, %v; want %d", counts[post], err, want.Count)
				}
				_, _, on, err := f.store.UserLikeEntries(ctx, 2, 0, []int64{post})
				if err != nil || on[post].Liked != want.LikedByMe {
					t.Errorf("SQL like of user 2 = %+v, %v; want liked %v", on[post], err, want.LikedByMe)
				}
				// A fresh process reads the cached counter, not its own copy.
				fresh := New(logger, Config{}, f.store, f.cache, storePosts{f.store}, w.Submit, nil)
				st, _, err := fresh.LikeStates(ctx, 2, f.posts[:1])
				if err != nil || st[post] != want {
					t.Errorf("cached state = %+v, %v; want %+v", st[post], err, want)
				}
			})
		}
	}
}

// TestCacheLostWithLikesInFlight: the cache loses its keys (a Redis
// restart or failover) while likes are on their way to SQL, and a read
// loads the counter from SQL before they land. Once they land, the
// counter is exact: SettleLikes puts SQL's newer tally under it, while
// the moves of likes made since the loss stay counted once.
func TestCacheLostWithLikesInFlight(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	w := NewWriter(logger, WriterConfig{Cache: f.cache}, f.store, nil)
	post := f.posts[0].ID
	// Events wait in flight until released, as in a broker's queue.
	var mu sync.Mutex
	var held []feed.LikeEvent
	hold := func(ctx context.Context, ev feed.LikeEvent) error {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, ev)
		return nil
	}
	release := func() {
		mu.Lock()
		evs := held
		held = nil
		mu.Unlock()
		for _, ev := range evs {
			if err := w.Submit(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	svc := New(logger, Config{}, f.store, f.cache, storePosts{f.store}, hold, nil)
	count := func() int64 {
		t.Helper()
		// A process of its own each time: no copy of the count in process.
		fresh := New(logger, Config{}, f.store, f.cache, storePosts{f.store}, hold, nil)
		st, _, err := fresh.LikeStates(ctx, 0, f.posts[:1])
		if err != nil {
			t.Fatal(err)
		}
		return st[post].Count
	}
	for _, u := range []int64{1, 2} {
		if _, err := svc.Like(ctx, u, post); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != 2 {
		t.Fatalf("two likes in flight: count %d; want 2", n)
	}
	// The cache loses the post's keys; a read loads the counter from SQL,
	// which has neither like yet.
	if err := f.cache.DropLikes(ctx, 0, post); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("counter loaded while the likes are in flight: %d; want SQL's 0", n)
	}
	// A like made since moves the loaded counter; then all three land.
	if _, err := svc.Like(ctx, 3, post); err != nil {
		t.Fatal(err)
	}
	release()
	tallies, err := f.store.LikeTallies(ctx, []int64{post})
	if err != nil || tallies[post].Count != 3 {
		t.Fatalf("SQL = %+v, %v; want 3 likes", tallies, err)
	}
	if n := count(); n != 3 {
		t.Errorf("counter after the likes landed: %d; want 3, SQL's", n)
	}
	// An unlike in flight, then its event delivered twice: still exact.
	if _, err := svc.Unlike(ctx, 1, post); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	held = append(held, held...)
	mu.Unlock()
	release()
	if n := count(); n != 2 {
		t.Errorf("counter after an unlike delivered twice: %d; want 2", n)
	}
}

// lossyCache loses the first settle it is given, as a Redis master that
// acknowledged it and failed over before replicating it does.
type lossyCache struct {
	feed.LikeCache
	lost atomic.Bool
}

func (c *lossyCache) SettleLikes(ctx context.Context, tallies map[int64]feed.LikeTally, evs []feed.LikeEvent, ttl time.Duration) error {
	if c.lost.CompareAndSwap(false, true) {
		return nil
	}
	return c.LikeCache.SettleLikes(ctx, tallies, evs, ttl)
}

// TestSettleLostInFailover: the first settle of a like is lost while its
// move stays pending in the cache; the next like's settle brings the
// first one's tally in, so the counter would count it twice, until the
// writer settles the first batch again.
func TestSettleLostInFailover(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	cache := &lossyCache{LikeCache: f.cache}
	w := NewWriter(logger, WriterConfig{Cache: cache, Resettle: []time.Duration{200 * time.Millisecond}}, f.store, nil)
	svc := New(logger, Config{LocalCountTTL: 0}, f.store, f.cache, storePosts{f.store}, w.Submit, nil)
	post := f.posts[0].ID
	for _, u := range []int64{1, 2} {
		if _, err := svc.Like(ctx, u, post); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int64 {
		st, _, err := New(logger, Config{}, f.store, f.cache, storePosts{f.store}, w.Submit, nil).LikeStates(ctx, 0, f.posts[:1])
		if err != nil {
			t.Fatal(err)
		}
		return st[post].Count
	}
	testenv.Eventually(t, 5*time.Second, "the counter exact once the lost settle is made again", func() bool { return count() == 2 })
}
