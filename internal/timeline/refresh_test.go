package timeline

import (
	"cmp"
	"context"
	"crypto/rand"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/rediscache"
)

// gateCalls counts a service's cache calls on refresh gates.
type gateCalls struct {
	feed.Cache
	setnx, get, set atomic.Int64
}

func (g *gateCalls) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if strings.HasPrefix(key, "refresh:") {
		g.setnx.Add(1)
	}
	return g.Cache.SetNX(ctx, key, value, ttl)
}

func (g *gateCalls) Get(ctx context.Context, key string) (string, bool, error) {
	if strings.HasPrefix(key, "refresh:") {
		g.get.Add(1)
	}
	return g.Cache.Get(ctx, key)
}

func (g *gateCalls) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	if strings.HasPrefix(key, "refresh:") {
		g.set.Add(1)
	}
	return g.Cache.Set(ctx, key, value, ttl)
}

// take returns the calls counted since the last take, as "setnx get set".
func (g *gateCalls) take() [3]int64 {
	return [3]int64{g.setnx.Swap(0), g.get.Swap(0), g.set.Swap(0)}
}

// TestRefreshGate: two processes (services) share one cache and one SQL
// store, and no fan-out runs, so a new post reaches the reader's feed only
// through a smart refresh. At most one refresh per reader per interval
// happens across both; a rebuild counts as one; the gate each process
// remembers saves the cache a call on every later first page of the
// interval; and a process that found the gate taken by the other waits
// only until that gate opens, not a whole interval from when it looked.
func TestRefreshGate(t *testing.T) {
	ctx := context.Background()
	const interval = 5 * time.Second
	clock := feedtest.NewClock(time.Now())
	st := testStore(t)
	cache := inmemcache.New(inmemcache.Options{Now: clock.Now})
	t.Cleanup(func() { cache.Close() })
	process := func() (*testService, *gateCalls) {
		g := &gateCalls{Cache: cache}
		svc := newWithWrites(slog.New(slog.DiscardHandler), Config{Policy: feed.DeliveryPolicy{Mode: feed.ModePush}, RefreshInterval: interval},
			st, g, nil, feed.NewIDGen(nil), nil)
		svc.now = clock.Now
		return svc, g
	}
	a, ga := process()
	b, gb := process()
	author, _ := a.CreateUser(ctx, 0, "author", "")
	reader, _ := a.CreateUser(ctx, 0, "reader", "")
	if err := a.Follow(ctx, reader.ID, author.ID); err != nil {
		t.Fatal(err)
	}
	check := func(what string, g *gateCalls, want [3]int64) {
		t.Helper()
		if got := g.take(); got != want {
			t.Errorf("%s: refresh gate calls (setnx, get, set) = %v; want %v", what, got, want)
		}
	}

	p0 := publish(t, a, author.ID)
	if !sees(t, a, reader.ID, p0) {
		t.Fatal("the first read (a rebuild) misses the post")
	}
	check("a's rebuild", ga, [3]int64{0, 0, 1})
	p1 := publish(t, a, author.ID)
	if sees(t, a, reader.ID, p1) || sees(t, a, reader.ID, p1) {
		t.Error("a refreshed within the interval of its rebuild")
	}
	check("a's reads after its rebuild", ga, [3]int64{0, 0, 0})
	if sees(t, b, reader.ID, p1) || sees(t, b, reader.ID, p1) {
		t.Error("b refreshed within the interval of a's rebuild")
	}
	check("b's reads within the interval of a's rebuild", gb, [3]int64{1, 1, 0})

	clock.Add(interval + time.Millisecond)
	if !sees(t, b, reader.ID, p1) {
		t.Error("b's first read after the interval was not refreshed")
	}
	check("b's refresh", gb, [3]int64{1, 0, 0})
	if !sees(t, b, reader.ID, p1) {
		t.Error("the refreshed post is gone")
	}
	check("b's read after its refresh", gb, [3]int64{0, 0, 0})
	if !sees(t, a, reader.ID, p1) {
		t.Error("a does not see what b's refresh added to the inbox")
	}
	check("a's read after b's refresh", ga, [3]int64{1, 1, 0})

	// a looked at b's gate half an interval after b took it: a waits the
	// other half, not a whole interval from when it looked.
	p2 := publish(t, a, author.ID)
	clock.Add(interval / 2)
	if sees(t, a, reader.ID, p2) {
		t.Error("a refreshed within the interval of b's refresh")
	}
	check("a's read within b's interval", ga, [3]int64{0, 0, 0})
	clock.Add(interval/2 + time.Millisecond)
	if !sees(t, a, reader.ID, p2) {
		t.Error("a's first read after b's gate opened was not refreshed")
	}
	check("a's refresh", ga, [3]int64{1, 0, 0})
}

// TestRefreshGateSavesARoundTrip: on Redis, a reader's second first page
// within the refresh interval costs one Redis command fewer than the first
// (no SET NX of the gate); another process's first page costs one more
// (SET NX and a GET of when the gate opens), its later ones the same as the
// first process's.
func TestRefreshGateSavesARoundTrip(t *testing.T) {
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
	counter := rediscache.CountCommands(client)
	prefix := "feeddtest:" + rand.Text()[:12] + ":"
	t.Cleanup(func() {
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		client.Close()
	})
	cache := rediscache.New(client, rediscache.Options{Prefix: prefix})
	st := testStore(t)
	process := func() *testService {
		// The reader's mute and block set stays in the process for the
		// test (warmed below), so the pages count only the gate's work.
		return newWithWrites(slog.New(slog.DiscardHandler), Config{Policy: feed.DeliveryPolicy{Mode: feed.ModePush}, RefreshInterval: time.Minute, HiddenTTL: time.Hour},
			st, cache, nil, feed.NewIDGen(nil), nil)
	}
	a, b := process(), process()
	author, _ := a.CreateUser(ctx, 0, "author", "")
	reader, _ := a.CreateUser(ctx, 0, "reader", "")
	if err := a.Follow(ctx, reader.ID, author.ID); err != nil {
		t.Fatal(err)
	}
	p, err := a.Publish(ctx, author.ID, feed.Draft{Content: "a post"}, feed.Idempotency{})
	if err != nil {
		t.Fatal(err)
	}
	// A warm inbox holding the post, and the post's body cached: a page
	// is the page script and one GET of the body, plus the gate.
	if err := cache.FillInbox(ctx, reader.ID, []int64{p.ID}, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := cache.CachePosts(ctx, []feed.Post{p}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []*testService{a, b} {
		if _, err := svc.Hidden(ctx, reader.ID); err != nil {
			t.Fatal(err)
		}
	}
	read := func(svc *testService) map[string]int64 {
		t.Helper()
		before := counter.Counts()
		pg, err := svc.Feed(ctx, reader.ID, 0, 20)
		posts := pg.Posts
		if err != nil || len(posts) != 1 {
			t.Fatalf("feed = %d posts, %v; want the one post", len(posts), err)
		}
		sent := counter.Counts()
		for k, v := range before {
			if sent[k] -= v; sent[k] == 0 {
				delete(sent, k)
			}
		}
		return sent
	}
	total := func(m map[string]int64) int64 {
		var n int64
		for _, v := range m {
			n += v
		}
		return n
	}
	first := read(a)
	second := read(a)
	t.Logf("first page, refreshed: %v; again within the interval: %v", first, second)
	if first["set"] != 1 {
		t.Errorf("the refreshed first page sent %d SETs; want 1 (the gate's SET NX)", first["set"])
	}
	want := maps.Clone(first)
	delete(want, "set")
	if !maps.Equal(second, want) || total(second) != total(first)-1 {
		t.Errorf("the second first page within the interval sent %v; want one command fewer than the first: %v", second, want)
	}
	otherFirst, otherSecond := read(b), read(b)
	t.Logf("another process: first page %v, then %v", otherFirst, otherSecond)
	if total(otherFirst) != total(first)+1 || otherFirst["set"] != 1 {
		t.Errorf("another process's first page sent %v; want %v and a GET of the gate", otherFirst, first)
	}
	if !maps.Equal(otherSecond, second) {
		t.Errorf("another process's second page sent %v; want %v", otherSecond, second)
	}
}

// windowStore records the lower bound of every feed query.
type windowStore struct {
	fullStore
	mu     sync.Mutex
	afters []int64
}

func (w *windowStore) FeedPostIDs(ctx context.Context, reader, after, before int64, n int) ([]int64, error) {
	w.mu.Lock()
	w.afters = append(w.afters, after)
	w.mu.Unlock()
	return w.fullStore.FeedPostIDs(ctx, reader, after, before, n)
}

func (w *windowStore) take() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := w.afters
	w.afters = nil
	return a
}

// refreshRig is a push service on a test clock whose store records the
// window of every feed query, with a reader following an author. No
// fan-out runs, so a new post reaches the reader's inbox only by refresh.
type refreshRig struct {
	svc            *testService
	ws             *windowStore
	clock          *feedtest.Clock
	author, reader int64
	first          int64 // the author's first post, in the rebuilt inbox
}

func newRefreshRig(t *testing.T, cfg Config) refreshRig {
	t.Helper()
	ctx := context.Background()
	clock := feedtest.NewClock(time.Now())
	cache := inmemcache.New(inmemcache.Options{Now: clock.Now})
	t.Cleanup(func() { cache.Close() })
	ws := &windowStore{fullStore: testStore(t)}
	cfg.Policy = feed.DeliveryPolicy{Mode: feed.ModePush}
	// Post ids carry the (test) clock's time, so "published a day ago"
	// is a post published before the clock moved a day.
	svc := newWithWrites(slog.New(slog.DiscardHandler), cfg, ws, cache, nil, feed.NewIDGen(clock.Now), nil)
	svc.now = clock.Now
	author, _ := svc.CreateUser(ctx, 0, "author", "")
	reader, _ := svc.CreateUser(ctx, 0, "reader", "")
	if err := svc.Follow(ctx, reader.ID, author.ID); err != nil {
		t.Fatal(err)
	}
	first := publish(t, svc, author.ID)
	if !sees(t, svc, reader.ID, first) { // the rebuild
		t.Fatal("the rebuilt feed misses the post")
	}
	ws.take()
	return refreshRig{svc: svc, ws: ws, clock: clock, author: author.ID, reader: reader.ID, first: first}
}

// TestRefreshHorizon: a refresh's query window starts at the inbox's
// newest entry minus the lookback, but never earlier than the horizon, so
// that a reader whose followees have been quiet for days does not make
// every refresh read all their posts. Within the horizon an undelivered
// post is found; beyond it the refresh leaves it to its fan-out.
func TestRefreshHorizon(t *testing.T) {
	const interval, horizon = 5 * time.Second, time.Hour
	r := newRefreshRig(t, Config{RefreshInterval: interval, RefreshHorizon: horizon})
	svc, ws, clock, author, reader, old := r.svc, r.ws, r.clock, r.author, r.reader, r.first

	clock.Add(24 * time.Hour)
	recent := publish(t, svc, author)
	clock.Add(interval + time.Millisecond)
	if !sees(t, svc, reader, recent) {
		t.Error("a refresh missed a post published within the horizon")
	}
	wantAfter := feed.MinIDAt(clock.Now().Add(-horizon))
	if got := ws.take(); len(got) != 1 || got[0] != wantAfter {
		t.Errorf("the refresh queried posts after %v; want one query after %d (now minus the horizon), not the day-old inbox head %d", got, wantAfter, old)
	}

	// The inbox's head is now recent: the lookback below it is the bound.
	clock.Add(interval + time.Millisecond)
	sees(t, svc, reader, recent)
	wantAfter = feed.MinIDAt(feed.IDTime(recent).Add(-time.Minute))
	if got := ws.take(); len(got) != 1 || got[0] != wantAfter {
		t.Errorf("the refresh queried posts after %v; want %d (the inbox head minus the lookback)", got, wantAfter)
	}

	// A post published more than a horizon before the read, never
	// delivered, is left to its fan-out.
	late := publish(t, svc, author)
	clock.Add(horizon + interval)
	if sees(t, svc, reader, late) {
		t.Error("a refresh looked further back than its horizon")
	}
}

// TestRefreshMaxPosts: when more than RefreshMaxPosts posts by anyone
// were published within the horizon, a refresh's window starts at the
// RefreshMaxPosts-th newest of them instead, so its cost does not grow
// with the deployment's post rate; a post below that is left to its
// fan-out, one above it is found.
func TestRefreshMaxPosts(t *testing.T) {
	const interval, maxPosts = 5 * time.Second, 3
	r := newRefreshRig(t, Config{RefreshInterval: interval, RefreshMaxPosts: maxPosts})
	svc, ws, clock, author, reader := r.svc, r.ws, r.clock, r.author, r.reader
	other, _ := svc.CreateUser(context.Background(), 0, "other", "")

	clock.Add(time.Millisecond)
	buried := publish(t, svc, author)
	var others []int64
	for range maxPosts {
		clock.Add(time.Millisecond)
		others = append(others, publish(t, svc, other.ID))
	}
	clock.Add(interval + time.Millisecond)
	if sees(t, svc, reader, buried) {
		t.Error("a refresh found a post below the newest RefreshMaxPosts")
	}
	if got := ws.take(); len(got) != 1 || got[0] != others[0] {
		t.Errorf("the refresh queried posts after %v; want one query after %d, the oldest of the %d newest posts", got, others[0], maxPosts)
	}

	clock.Add(time.Millisecond)
	fresh := publish(t, svc, author)
	clock.Add(interval + time.Millisecond)
	if !sees(t, svc, reader, fresh) {
		t.Error("a refresh missed a post among the newest RefreshMaxPosts")
	}
}
