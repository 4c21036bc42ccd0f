package likes

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/lru"
	"github.com/feedd/feedd/internal/rediscache"
	"github.com/feedd/feedd/internal/sqlstore"
)

// roundTrips counts what a go-redis client sends: one round trip per
// command sent alone, one per pipeline.
type roundTrips struct {
	trips atomic.Int64
	cmds  atomic.Int64
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.count(cmds)
		return next(ctx, cmds)
	}
}

func (r *roundTrips) count(cmds []redis.Cmder) {
	r.trips.Add(1)
	r.cmds.Add(int64(len(cmds)))
}

func (r *roundTrips) reset() { r.trips.Store(0); r.cmds.Store(0) }

// storePosts adapts the store to Posts for tests that run without the
// timeline service.
type storePosts struct{ s *sqlstore.Store }

func (p storePosts) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	if viewer == 0 {
		return feed.Hidden{}, nil
	}
	return p.s.Hidden(ctx, viewer)
}

func (p storePosts) LivePosts(ctx context.Context, ids []int64) ([]feed.Post, error) {
	found, err := p.s.Posts(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []feed.Post
	for _, id := range ids {
		if q, ok := found[id]; ok && !q.Deleted {
			out = append(out, q)
		}
	}
	return out, nil
}

type fixture struct {
	svc   *Service
	store *sqlstore.Store
	cache *rediscache.Cache
	trips *roundTrips
	reg   *prometheus.Registry
	posts []feed.Post
}

// newFixture runs the service on real Redis (a random key prefix, its
// keys deleted afterwards) and an SQLite file, with 20 posts by user 1.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	url := cmp.Or(os.Getenv("FEEDD_TEST_REDIS_URL"), "redis://127.0.0.1:6379/1")
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", opt.Addr, time.Second); err != nil {
		feedtest.Missing(t, "Redis at %s is unreachable: %v", opt.Addr, err)
	} else {
		c.Close()
	}
	client := redis.NewClient(opt)
	trips := &roundTrips{}
	client.AddHook(trips)
	prefix := "feeddtest:" + rand.Text()[:12] + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		client.Close()
	})
	cache := rediscache.New(client, rediscache.Options{Prefix: prefix})
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "feedd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	ids := feed.NewIDGen(nil)
	f := &fixture{store: store, cache: cache, trips: trips, reg: prometheus.NewRegistry()}
	for _, u := range []int64{1, 2, 3} {
		if _, err := store.CreateUser(t.Context(), feed.User{ID: u, Name: fmt.Sprint("u", u)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		id := ids.Next()
		p, _, err := store.CreatePost(t.Context(), feed.Post{ID: id, AuthorID: 1, Content: fmt.Sprint("post ", i), CreatedAt: feed.IDTime(id)}, feed.Idempotency{})
		if err != nil {
			t.Fatal(err)
		}
		f.posts = append(f.posts, p)
	}
	logger := slog.New(slog.DiscardHandler)
	w := NewWriter(logger, WriterConfig{Cache: cache}, store, f.reg)
	f.svc = New(logger, Config{}, store, cache, storePosts{store}, w.Submit, f.reg)
	return f
}

// TestPageCostsOneRoundTrip: the like counts and liked state of a page of
// 20 posts cost one Redis round trip (one pipeline: 20 GETEX and one
// ZMSCORE), and no SQL query.
func TestPageCostsOneRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	// Reader 2 likes every other post; user 3 likes the first five.
	for i, p := range f.posts {
		if i%2 == 0 {
			if _, err := f.svc.Like(ctx, 2, p.ID); err != nil {
				t.Fatal(err)
			}
		}
		if i < 5 {
			if _, err := f.svc.Like(ctx, 3, p.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A first read caches the counters of posts nobody liked (0).
	if _, _, err := f.svc.LikeStates(ctx, 2, f.posts); err != nil {
		t.Fatal(err)
	}
	cold := metric(t, f.reg, "feedd_likes_cold_reads_total")
	loads := metric(t, f.reg, "feedd_likes_count_loads_total")

	f.trips.reset()
	states, _, err := f.svc.LikeStates(ctx, 2, f.posts)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.trips.trips.Load(); got != 1 {
		t.Errorf("a page of 20 cost %d Redis round trips; want 1", got)
	}
	if got := metric(t, f.reg, "feedd_likes_cold_reads_total") - cold; got != 0 {
		t.Errorf("a warm page ran %v cold SQL reads; want 0", got)
	}
	if got := metric(t, f.reg, "feedd_likes_count_loads_total") - loads; got != 0 {
		t.Errorf("a warm page loaded %v counters from SQL; want 0", got)
	}
	for i, p := range f.posts {
		want := feed.LikeState{Count: int64(btoi(i%2 == 0) + btoi(i < 5)), LikedByMe: i%2 == 0}
		if states[p.ID] != want {
			t.Errorf("post %d: %+v; want %+v", i, states[p.ID], want)
		}
	}

	// The reader's set is lost: one SQL query answers the page and
	// rebuilds it; the next page is back to one round trip.
	if err := f.cache.DropLikes(ctx, 2, 0); err != nil {
		t.Fatal(err)
	}
	f.trips.reset()
	states, _, err = f.svc.LikeStates(ctx, 2, f.posts)
	if err != nil {
		t.Fatal(err)
	}
	if got := metric(t, f.reg, "feedd_likes_cold_reads_total") - cold; got != 1 {
		t.Errorf("a page with a lost set ran %v SQL reads for its state; want 1", got)
	}
	if !states[f.posts[0].ID].LikedByMe || states[f.posts[1].ID].LikedByMe {
		t.Errorf("states from SQL wrong: %+v", states)
	}
	f.trips.reset()
	if _, _, err := f.svc.LikeStates(ctx, 2, f.posts); err != nil {
		t.Fatal(err)
	}
	if got := f.trips.trips.Load(); got != 1 {
		t.Errorf("after the rebuild, a page cost %d round trips; want 1", got)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBatchWriterGroups: concurrent likes share batches, and the count is
// exact however they interleave.
func TestBatchWriterGroups(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	p := f.posts[0]
	const users = 300
	for u := int64(10); u < 10+users; u++ {
		if _, err := f.store.CreateUser(ctx, feed.User{ID: u, Name: "fan"}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, users)
	for u := int64(10); u < 10+users; u++ {
		go func() {
			_, err := f.svc.Like(ctx, u, p.ID)
			errs <- err
		}()
	}
	for range users {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	counts, err := f.store.LikeCounts(ctx, []int64{p.ID})
	if err != nil || counts[p.ID] != users {
		t.Fatalf("SQL count = %d, %v; want %d (a synchronous writer answers after the commit)", counts[p.ID], err, users)
	}
	st, _, err := f.svc.LikeStates(ctx, 0, []feed.Post{p})
	if err != nil || st[p.ID].Count != users {
		t.Errorf("cached count = %+v, %v; want %d", st[p.ID], err, users)
	}
	nb := metric(t, f.reg, "feedd_likes_batches_total")
	if nb >= users {
		t.Errorf("%v batches for %d concurrent likes; want them grouped", nb, users)
	}
	t.Logf("%d concurrent likes in %v batches", users, nb)
}

// metric reads a counter of reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestUserLikesMergesInFlight: a user's likes list shows what the API
// answered before SQL has it, in both directions, and pages exactly.
func TestUserLikesMergesInFlight(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	var inFlight []feed.LikeEvent
	svc := New(slog.New(slog.DiscardHandler), Config{}, f.store, f.cache, storePosts{f.store},
		func(_ context.Context, ev feed.LikeEvent) error { inFlight = append(inFlight, ev); return nil }, nil)
	var evs []feed.LikeEvent
	for i := range 10 {
		evs = append(evs, feed.LikeEvent{User: 2, Post: f.posts[i].ID, Liked: true, Version: int64(i + 1)})
	}
	if _, err := f.store.ApplyLikes(ctx, evs); err != nil {
		t.Fatal(err)
	}
	page := func(before int64, n int) ([]int, bool, int64) {
		t.Helper()
		got, more, err := svc.userLikes(ctx, 2, before, n)
		if err != nil {
			t.Fatal(err)
		}
		var idx []int
		for _, lp := range got {
			for i, p := range f.posts {
				if p.ID == lp.Post.ID {
					idx = append(idx, i)
				}
			}
		}
		return idx, more, got[len(got)-1].Version
	}
	if got, more, _ := page(0, 5); fmt.Sprint(got) != "[9 8 7 6 5]" || !more {
		t.Errorf("from SQL alone: %v more %v; want [9 8 7 6 5] more", got, more)
	}
	if _, err := svc.Unlike(ctx, 2, f.posts[9].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Like(ctx, 2, f.posts[15].ID); err != nil {
		t.Fatal(err)
	}
	if len(inFlight) != 2 {
		t.Fatalf("events in flight: %v; want the unlike and the like", inFlight)
	}
	got, more, last := page(0, 5)
	if fmt.Sprint(got) != "[15 8 7 6 5]" || !more {
		t.Errorf("with an unlike and a like in flight: %v more %v; want [15 8 7 6 5] more", got, more)
	}
	got, more, _ = page(last, 5)
	if fmt.Sprint(got) != "[4 3 2 1 0]" || more {
		t.Errorf("page 2: %v more %v; want [4 3 2 1 0], the end", got, more)
	}
}

// downStore is a store whose SQL is unavailable for the read path.
type downStore struct{ *sqlstore.Store }

func (downStore) LikeCounts(context.Context, []int64) (map[int64]int64, error) {
	return nil, fmt.Errorf("sql is down")
}

func (downStore) LikeTallies(context.Context, []int64) (map[int64]feed.LikeTally, error) {
	return nil, fmt.Errorf("sql is down")
}

func (downStore) UserLikeEntries(context.Context, int64, int, []int64) ([]feed.LikeEntry, bool, map[int64]feed.LikeEntry, error) {
	return nil, false, nil, fmt.Errorf("sql is down")
}

// TestLikeStatesDegrade: with SQL down, a page still gets what the cache
// knows, marked degraded, instead of failing.
func TestLikeStatesDegrade(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.svc.Like(ctx, 2, f.posts[0].ID); err != nil {
		t.Fatal(err)
	}
	down := New(slog.New(slog.DiscardHandler), Config{}, downStore{f.store}, f.cache, storePosts{f.store}, nil, nil)
	states, degraded, err := down.LikeStates(ctx, 2, f.posts[:3])
	if err != nil {
		t.Fatalf("LikeStates with SQL down: %v; want a partial answer", err)
	}
	if !degraded {
		t.Error("the answer is not marked degraded")
	}
	if st := states[f.posts[0].ID]; st.Count != 1 || !st.LikedByMe {
		t.Errorf("cached post = %+v; want its cached count and like", st)
	}
	if _, degraded, err := down.LikeStates(ctx, 2, f.posts[:1]); err != nil || degraded {
		t.Errorf("a page the cache knows entirely: %v, degraded %v; want a full answer", err, degraded)
	}
}

// TestLikeStatesUnderL1: while degradation switch L1 drops non-essential
// enrichment, a page's like states are nil and cost no round trip; once
// it is off they are back.
func TestLikeStatesUnderL1(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.svc.Like(ctx, 2, f.posts[0].ID); err != nil {
		t.Fatal(err)
	}
	sw := degrade.New(slog.New(slog.DiscardHandler), nil, nil)
	svc := New(slog.New(slog.DiscardHandler), Config{Switches: sw}, f.store, f.cache, storePosts{f.store}, nil, nil)
	if _, err := sw.Set(ctx, map[degrade.Switch]bool{degrade.L1: true}); err != nil {
		t.Fatal(err)
	}
	f.trips.reset()
	if states, _, err := svc.LikeStates(ctx, 2, f.posts[:3]); err != nil || states != nil {
		t.Errorf("LikeStates under L1 = %v, %v; want nil, nil", states, err)
	}
	if got := f.trips.trips.Load(); got != 0 {
		t.Errorf("a page under L1 cost %d Redis round trips; want 0", got)
	}
	if _, err := sw.Set(ctx, map[degrade.Switch]bool{degrade.L1: false}); err != nil {
		t.Fatal(err)
	}
	states, _, err := svc.LikeStates(ctx, 2, f.posts[:3])
	if err != nil {
		t.Fatal(err)
	}
	if st := states[f.posts[0].ID]; st.Count != 1 || !st.LikedByMe {
		t.Errorf("after L1 went off, post 0 = %+v; want count 1, liked", st)
	}
}

// TestLocalCounts: with LocalCountTTL, a process keeps the like counts it
// learned. Its own likes show at once; another process's within the ttl
// (and not necessarily before); the reader's liked state is read every
// time; a warm page asks Redis only for that state.
func TestLocalCounts(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	const ttl = time.Second
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	logger := slog.New(slog.DiscardHandler)
	w := NewWriter(logger, WriterConfig{Cache: f.cache}, f.store, nil)
	hereReg := prometheus.NewRegistry()
	newService := func(localTTL time.Duration, reg *prometheus.Registry) *Service {
		s := New(logger, Config{LocalCountTTL: localTTL}, f.store, f.cache, storePosts{f.store}, w.Submit, reg)
		if localTTL > 0 {
			s.counts = lru.New[int64, localCount](100, localTTL, clock)
		}
		return s
	}
	// Two processes sharing one deployment, and one without a local copy.
	here, there, uncached := newService(ttl, hereReg), newService(ttl, prometheus.NewRegistry()), newService(0, prometheus.NewRegistry())
	if uncached.counts != nil {
		t.Fatal("LocalCountTTL 0 keeps counts in process; want none")
	}
	p := f.posts[0]
	state := func(s *Service, reader int64, posts ...feed.Post) feed.LikeState {
		t.Helper()
		st, _, err := s.LikeStates(ctx, reader, posts)
		if err != nil {
			t.Fatal(err)
		}
		return st[posts[0].ID]
	}
	if st := state(here, 2, f.posts...); st.Count != 0 {
		t.Fatalf("before any like: %+v; want 0", st)
	}

	// A warm page of 20: Redis is asked for the reader's state alone
	// (one ZMSCORE), and a page without a reader costs nothing.
	f.trips.reset()
	state(here, 2, f.posts...)
	if trips, cmds := f.trips.trips.Load(), f.trips.cmds.Load(); trips != 1 || cmds != 1 {
		t.Errorf("a warm page of 20 cost %d round trips, %d commands; want 1 and 1 (the reader's state)", trips, cmds)
	}
	f.trips.reset()
	state(here, 0, f.posts...)
	if trips := f.trips.trips.Load(); trips != 0 {
		t.Errorf("a warm page of 20 without a reader cost %d round trips; want 0", trips)
	}
	f.trips.reset()
	state(uncached, 2, f.posts...)
	if cmds := f.trips.cmds.Load(); cmds != 21 {
		t.Errorf("a page of 20 without local counts cost %d commands; want 21", cmds)
	}

	// A like handled here shows here at once, to anyone.
	if st, err := here.Like(ctx, 2, p.ID); err != nil || st.Count != 1 {
		t.Fatalf("like here: %+v, %v; want count 1", st, err)
	}
	if st := state(here, 3, p); st.Count != 1 || st.LikedByMe {
		t.Errorf("here, after a like here: %+v; want count 1, not liked by 3", st)
	}

	// A like handled there: its user sees it at once here too (the
	// liked state is never held), the count within the ttl.
	if st, err := there.Like(ctx, 3, p.ID); err != nil || st.Count != 2 {
		t.Fatalf("like there: %+v, %v; want count 2", st, err)
	}
	if st := state(uncached, 3, p); st.Count != 2 || !st.LikedByMe {
		t.Errorf("without local counts: %+v; want count 2 at once, liked", st)
	}
	if st := state(here, 3, p); st.Count != 1 || !st.LikedByMe {
		t.Errorf("here, just after a like there: %+v; want the held count 1 (within the ttl), liked by 3 at once", st)
	}
	now = now.Add(ttl)
	if st := state(here, 3, p); st.Count != 2 || !st.LikedByMe {
		t.Errorf("here, a ttl after a like there: %+v; want count 2", st)
	}

	// Counts loaded from SQL (the cache lost the counter) are held too.
	q := f.posts[1]
	if err := f.cache.DropLikes(ctx, 0, q.ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(ttl)
	loads := metric(t, hereReg, "feedd_likes_count_loads_total")
	state(here, 0, q)
	if got := metric(t, hereReg, "feedd_likes_count_loads_total") - loads; got != 1 {
		t.Errorf("a lost counter was loaded %v times; want 1", got)
	}
	f.trips.reset()
	if st := state(here, 0, q); st.Count != 0 || f.trips.trips.Load() != 0 {
		t.Errorf("a counter loaded from SQL, read again: %+v in %d round trips; want 0 in 0", st, f.trips.trips.Load())
	}
}

// TestLocalCountsReadRacesLike: a page's read of a counter that began
// before a like of this process must not replace the like's newer count.
func TestLocalCountsReadRacesLike(t *testing.T) {
	s := &Service{counts: lru.New[int64, localCount](10, time.Minute, nil)}
	from := s.writes.Load()
	s.counts.Put(7, localCount{n: 5, seq: s.writes.Add(1)}) // the like
	s.learn(from, map[int64]int64{7: 4})                    // the page's older read
	if c, _ := s.counts.Get(7); c.n != 5 {
		t.Errorf("held count %d; want the like's 5", c.n)
	}
	s.learn(s.writes.Load(), map[int64]int64{7: 6}) // a read begun after it
	if c, _ := s.counts.Get(7); c.n != 6 {
		t.Errorf("held count %d; want the later read's 6", c.n)
	}

	// Two likes of one post in flight together: either answer may be the
	// older, so the next page asks the cache.
	s.moving = map[int64]*moving{}
	s.startMove(8)
	s.startMove(8)
	s.endMove(8, 2, true)
	s.endMove(8, 1, true)
	if c, ok := s.counts.Get(8); !ok || !c.unknown {
		t.Errorf("after overlapping likes: %+v; want marked unknown", c)
	}
	s.learn(s.writes.Load(), map[int64]int64{8: 2})
	s.startMove(8)
	s.endMove(8, 3, true)
	if c, _ := s.counts.Get(8); c.unknown || c.n != 3 || len(s.moving) != 0 {
		t.Errorf("after a lone like: %+v (moving %v); want 3 held", c, s.moving)
	}
}

// TestLocalCountsStorm: concurrent likes of one post in one process; the
// page right after shows the exact count.
func TestLocalCountsStorm(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	w := NewWriter(logger, WriterConfig{Cache: f.cache}, f.store, nil)
	svc := New(logger, Config{LocalCountTTL: time.Minute}, f.store, f.cache, storePosts{f.store}, w.Submit, prometheus.NewRegistry())
	p := f.posts[0]
	const users = 100
	if _, _, err := svc.LikeStates(ctx, 0, []feed.Post{p}); err != nil { // held: 0
		t.Fatal(err)
	}
	errs := make(chan error, users)
	for u := int64(10); u < 10+users; u++ {
		go func() {
			_, err := svc.Like(ctx, u, p.ID)
			errs <- err
		}()
	}
	for range users {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	st, _, err := svc.LikeStates(ctx, 0, []feed.Post{p})
	if err != nil || st[p.ID].Count != users {
		t.Errorf("count right after %d concurrent likes = %+v, %v; want %d", users, st[p.ID], err, users)
	}
}

// TestLikedByIsExact: the live stream's bulk call answers each reader's
// liked_by_me as its page would, for readers who liked the post before
// it reached them: a post nobody liked costs one round trip (its count)
// whatever the readers; a liked one a second, for all the readers' sets;
// a reader whose set is lost is answered from SQL.
func TestLikedByIsExact(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	liked, unliked := f.posts[0], f.posts[1]
	for _, u := range []int64{2, 3} {
		if _, err := f.svc.Like(ctx, u, liked.ID); err != nil {
			t.Fatal(err)
		}
	}
	readers := []int64{1, 2, 3}
	check := func(p feed.Post, wantCount int64, wantLiked map[int64]bool, wantTrips int64) {
		t.Helper()
		f.trips.reset()
		count, got, enriched, err := f.svc.LikedBy(ctx, p, readers)
		if err != nil || !enriched {
			t.Fatalf("LikedBy: %v, enriched %v", err, enriched)
		}
		if wantTrips > 0 {
			if n := f.trips.trips.Load(); n != wantTrips {
				t.Errorf("post %d: %d Redis round trips; want %d", p.ID, n, wantTrips)
			}
		}
		if count != wantCount {
			t.Errorf("post %d: count %d; want %d", p.ID, count, wantCount)
		}
		for _, r := range readers {
			if got[r] != wantLiked[r] {
				t.Errorf("post %d, reader %d: liked %v; want %v", p.ID, r, got[r], wantLiked[r])
			}
			page, _, err := f.svc.LikeStates(ctx, r, []feed.Post{p})
			if err != nil {
				t.Fatal(err)
			}
			if page[p.ID] != (feed.LikeState{Count: count, LikedByMe: got[r]}) {
				t.Errorf("post %d, reader %d: bulk %d/%v; the page says %+v", p.ID, r, count, got[r], page[p.ID])
			}
		}
	}
	check(unliked, 0, nil, 0) // loads the counter from SQL
	check(unliked, 0, nil, 1)
	check(liked, 2, map[int64]bool{2: true, 3: true}, 2)
	// Reader 2's recent set is lost: SQL answers for it.
	if err := f.cache.DropLikes(ctx, 2, 0); err != nil {
		t.Fatal(err)
	}
	cold := metric(t, f.reg, "feedd_likes_cold_reads_total")
	check(liked, 2, map[int64]bool{2: true, 3: true}, 0)
	if got := metric(t, f.reg, "feedd_likes_cold_reads_total") - cold; got < 1 {
		t.Errorf("a lost set read SQL %v times; want at least once", got)
	}
	// An unlike shows at once.
	if _, err := f.svc.Unlike(ctx, 3, liked.ID); err != nil {
		t.Fatal(err)
	}
	check(liked, 1, map[int64]bool{2: true}, 0)
}
