package stream

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
)

// countingNotifier is the in-process notifier that remembers which
// channels its subscriptions listen to.
type countingNotifier struct {
	*inmemcache.Cache
	mu        sync.Mutex
	listening map[int64]int // author -> subscriptions listening
	failAdd   bool          // the next Add fails, as a Redis that is down
}

func (n *countingNotifier) Subscribe() feed.Subscription {
	return &countingSub{Subscription: n.Cache.Subscribe(), n: n}
}

type countingSub struct {
	feed.Subscription
	n *countingNotifier
}

func (s *countingSub) Add(ctx context.Context, authors ...int64) error {
	s.n.mu.Lock()
	if s.n.failAdd {
		s.n.failAdd = false
		s.n.mu.Unlock()
		return errors.New("subscribe: connection refused")
	}
	for _, a := range authors {
		s.n.listening[a]++
	}
	s.n.mu.Unlock()
	return s.Subscription.Add(ctx, authors...)
}

func (s *countingSub) Remove(ctx context.Context, authors ...int64) error {
	s.n.mu.Lock()
	for _, a := range authors {
		if s.n.listening[a]--; s.n.listening[a] == 0 {
			delete(s.n.listening, a)
		}
	}
	s.n.mu.Unlock()
	return s.Subscription.Remove(ctx, authors...)
}

func (n *countingNotifier) channels() []int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Sorted(maps.Keys(n.listening))
}

type testHub struct {
	*Hub
	n       *countingNotifier
	ann     *Announcer
	mu      sync.Mutex
	follows map[int64][]int64
}

func newTestHub(t *testing.T, cfg Config) *testHub {
	c := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { c.Close() })
	h := &testHub{n: &countingNotifier{Cache: c, listening: map[int64]int{}}, follows: map[int64][]int64{}}
	h.ann = NewAnnouncer(h.n)
	h.Hub = New(nil, cfg, h.n, func(ctx context.Context, reader int64) ([]int64, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return slices.Clone(h.follows[reader]), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.Run(ctx)
	return h
}

func (h *testHub) follow(reader int64, authors ...int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.follows[reader] = authors
}

func (h *testHub) open(t *testing.T, reader int64) *Stream {
	t.Helper()
	s, err := h.Open(t.Context(), reader)
	if err != nil {
		t.Fatalf("Open(%d): %v", reader, err)
	}
	t.Cleanup(s.Close)
	return s
}

// next returns s's next event within a second (a Ping when none came).
func next(t *testing.T, s *Stream) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	ev := s.Next(ctx)
	// A post or an update carries its shared rendering, which holds the
	// stream; the tests compare the rest.
	if (ev.Kind == Post || ev.Kind == Update) && (ev.Shared == nil || !slices.Contains(ev.Shared.Streams(), s)) {
		t.Fatalf("event %+v: its shared rendering does not name the stream", ev)
	}
	ev.Shared = nil
	return ev
}

func TestChannelsAreReferenceCounted(t *testing.T) {
	h := newTestHub(t, Config{})
	h.follow(1, 10, 11)
	h.follow(2, 11)
	a := h.open(t, 1)
	b := h.open(t, 2)
	if got, want := h.n.channels(), []int64{1, 2, 10, 11}; !slices.Equal(got, want) {
		t.Fatalf("channels with two streams: %v; want %v, once each", got, want)
	}
	a.Close()
	if got, want := h.n.channels(), []int64{2, 11}; !slices.Equal(got, want) {
		t.Fatalf("channels after the first stream closed: %v; want %v", got, want)
	}
	b.Close()
	if got := h.n.channels(); len(got) != 0 {
		t.Fatalf("channels after the last stream closed: %v; want none", got)
	}
}

func TestFollowsChangedOnOpenStream(t *testing.T) {
	h := newTestHub(t, Config{})
	h.follow(1, 10)
	s := h.open(t, 1)
	h.follow(1, 20)
	if err := h.ann.FollowsChanged(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	// The refresh happens in Next; a post of the new author follows it.
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(h.n.channels(), 20) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		s.Next(ctx)
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("channels %v after the follow; want 20 among them", h.n.channels())
		}
	}
	if got := h.n.channels(); slices.Contains(got, 10) {
		t.Fatalf("channels %v after the unfollow; want 10 gone", got)
	}
	if err := h.ann.PostCreated(t.Context(), 20, 500); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, s); ev != (Event{Kind: Post, ID: 500}) {
		t.Fatalf("event %+v; want post 500", ev)
	}
}

func TestSlowStreamIsDropped(t *testing.T) {
	h := newTestHub(t, Config{Buffer: 2})
	h.follow(2, 1)
	slow := h.open(t, 1)
	fast := h.open(t, 2)
	for id := int64(1); id <= 3; id++ {
		if err := h.ann.PostCreated(t.Context(), 1, id); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, fast); ev != (Event{Kind: Post, ID: id}) {
			t.Fatalf("the stream that reads: %+v; want post %d", ev, id)
		}
	}
	// The hub handed the slow stream all three by now (in the order of
	// the one channel): the third found its buffer full.
	if ev := next(t, slow); ev.Kind != Dropped {
		t.Fatalf("a stream that let 3 events pile up in a buffer of 2: %+v; want Dropped", ev)
	}
}

func TestShutdownEndsStreams(t *testing.T) {
	h := newTestHub(t, Config{})
	s := h.open(t, 1)
	h.Shutdown()
	if ev := next(t, s); ev.Kind != Shutdown {
		t.Fatalf("after Shutdown: %+v; want Shutdown", ev)
	}
	if _, err := h.Open(t.Context(), 2); feed.ErrorCode(err) != feed.EUNAVAILABLE {
		t.Fatalf("Open after Shutdown: %v; want EUNAVAILABLE", err)
	}
}

func TestFailedSubscribeIsForgotten(t *testing.T) {
	h := newTestHub(t, Config{})
	h.follow(1, 10)
	s := h.open(t, 1)
	setFail := func() {
		h.n.mu.Lock()
		h.n.failAdd = true
		h.n.mu.Unlock()
	}
	// A follow whose subscription fails, then another change: the second
	// refresh subscribes to both.
	refresh := func() {
		t.Helper()
		if err := h.ann.FollowsChanged(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		s.Next(ctx) // applies the refresh, then times out
	}
	h.follow(1, 10, 20)
	setFail()
	refresh()
	h.follow(1, 10, 20, 30)
	refresh()
	if got, want := h.n.channels(), []int64{1, 10, 20, 30}; !slices.Equal(got, want) {
		t.Fatalf("channels after a failed and a good refresh: %v; want %v", got, want)
	}
	if err := h.ann.PostCreated(t.Context(), 20, 7); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, s); ev != (Event{Kind: Post, ID: 7}) {
		t.Fatalf("event %+v; want post 7", ev)
	}
}

// TestUpdateOfSentPost: an edit reaches a stream as Update, with the
// edit's version, only for a post that stream sent; and the message
// format round-trips.
func TestUpdateOfSentPost(t *testing.T) {
	h := newTestHub(t, Config{})
	h.follow(1, 10)
	s := h.open(t, 1)
	if err := h.ann.PostCreated(t.Context(), 10, 500); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, s); ev != (Event{Kind: Post, ID: 500}) {
		t.Fatalf("event %+v; want post 500", ev)
	}
	// An edit of a post this stream never sent (older, or before it
	// opened) is not its business; then one of the post it sent.
	for _, id := range []int64{499, 500} {
		if err := h.ann.PostEdited(t.Context(), 10, id, 1234); err != nil {
			t.Fatal(err)
		}
	}
	if ev := next(t, s); ev != (Event{Kind: Update, ID: 500, Version: 1234}) {
		t.Fatalf("event %+v; want update of post 500 at version 1234", ev)
	}
	// Edited twice: each edit is told (the client shows the newest).
	if err := h.ann.PostEdited(t.Context(), 10, 500, 1300); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, s); ev != (Event{Kind: Update, ID: 500, Version: 1300}) {
		t.Fatalf("event %+v; want update of post 500 at version 1300", ev)
	}

	for _, bad := range []string{"u 5", "u 5 x", "u x 5", "u 5 -1", "u  5", "x 5"} {
		if _, _, _, ok := decodeMsg([]byte(bad)); ok {
			t.Errorf("decodeMsg(%q) accepted", bad)
		}
	}
	if k, id, v, ok := decodeMsg(encodeUpdate(42, 1<<53)); !ok || k != msgUpdate || id != 42 || v != 1<<53 {
		t.Errorf("decodeMsg(encodeUpdate(42, 2^53)) = %c %d %d %v", k, id, v, ok)
	}
}

// TestPostAnnouncedAgainAfterItsDelete: a post is announced more than
// once (the relay and the dispatcher both announce it), and the second
// announcement may come after its delete: the stream neither sends the
// post again nor its delete twice.
func TestPostAnnouncedAgainAfterItsDelete(t *testing.T) {
	h := newTestHub(t, Config{})
	h.follow(1, 10)
	s := h.open(t, 1)
	ctx := t.Context()
	if err := h.ann.PostCreated(ctx, 10, 500); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, s); ev != (Event{Kind: Post, ID: 500}) {
		t.Fatalf("event %+v; want post 500", ev)
	}
	if err := h.ann.PostDeleted(ctx, 10, 500); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, s); ev != (Event{Kind: Delete, ID: 500}) {
		t.Fatalf("event %+v; want the delete of post 500", ev)
	}
	for _, announce := range []func() error{
		func() error { return h.ann.PostCreated(ctx, 10, 500) },
		func() error { return h.ann.PostDeleted(ctx, 10, 500) },
		func() error { return h.ann.PostEdited(ctx, 10, 500, 1234) },
		func() error { return h.ann.PostCreated(ctx, 10, 501) },
	} {
		if err := announce(); err != nil {
			t.Fatal(err)
		}
	}
	if ev := next(t, s); ev != (Event{Kind: Post, ID: 501}) {
		t.Fatalf("event %+v; want post 501, and nothing more of the deleted post 500", ev)
	}
}

// TestSharedRendersOnce: a post's event is rendered once for all the
// streams that take it; a caller whose client left stops waiting.
func TestSharedRendersOnce(t *testing.T) {
	h := newTestHub(t, Config{})
	var streams []*Stream
	for r := int64(1); r <= 20; r++ {
		h.follow(r, 500)
		streams = append(streams, h.open(t, r))
	}
	var renders atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	sh := newShared(streams)
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := sh.Do(t.Context(), func() (any, error) {
				renders.Add(1)
				<-release
				return "rendered", nil
			})
			if err != nil || v != "rendered" {
				t.Errorf("Do: %v, %v; want the one rendering", v, err)
			}
		}()
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	for renders.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, err := sh.Do(gone, func() (any, error) { return nil, nil }); err == nil {
		t.Error("Do of a caller whose ctx is done while another renders: no error")
	}
	close(release)
	wg.Wait()
	if n := renders.Load(); n != 1 {
		t.Fatalf("rendered %d times for %d streams; want once", n, len(streams))
	}
}

// TestHiddenForgottenOnAnnouncement: a stream keeps its reader's hidden
// authors until the reader's change is announced; a read begun before
// the announcement is not kept after it (it may predate the change).
func TestHiddenForgottenOnAnnouncement(t *testing.T) {
	h := newTestHub(t, Config{})
	h.follow(1, 10)
	s := h.open(t, 1)
	other := h.open(t, 2)
	now := time.Now()
	if _, fresh, _ := s.Hidden(now); fresh {
		t.Fatal("a new stream has fresh hidden authors; want none known")
	}
	_, _, gen := s.Hidden(now)
	s.SetHidden(feed.NewHidden([]int64{10}, nil), now, gen)
	other.SetHidden(feed.NewHidden(nil, nil), now, 0)
	if h, fresh, _ := s.Hidden(now); !fresh || !h.InFeed(10) {
		t.Fatalf("hidden %v fresh %v; want 10 hidden, fresh", h, fresh)
	}
	if _, fresh, _ := s.Hidden(now.Add(HiddenTTL)); fresh {
		t.Fatal("hidden authors fresh after their ttl")
	}
	_, _, before := s.Hidden(now) // a read begins
	if err := h.ann.FollowsChanged(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, fresh, _ := s.Hidden(now); !fresh {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("hidden authors still fresh after the reader's announcement")
		}
		time.Sleep(time.Millisecond)
	}
	s.SetHidden(feed.NewHidden([]int64{10}, nil), now, before) // the read ends
	if _, fresh, _ := s.Hidden(now); fresh {
		t.Fatal("a read begun before the announcement was kept")
	}
	if _, fresh, _ := other.Hidden(now); !fresh {
		t.Fatal("another reader's stream forgot its hidden authors")
	}
}

// failingKV is a cache that cannot be reached.
type failingKV struct{ feed.KV }

func (failingKV) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return false, errors.New("dial tcp: connection refused")
}

// TestPerUserBoundAcrossProcesses: two hubs sharing a cache, as two serve
// processes sharing Redis, bound a user's streams together; a stream that
// closes frees its slot for the other process, and one that stays open
// keeps it; the slots of a process that died are free once its key
// expires; a cache that fails leaves each hub its own bound.
func TestPerUserBoundAcrossProcesses(t *testing.T) {
	kv := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { kv.Close() })
	cfg := Config{MaxPerUser: 2, Slots: kv, Heartbeat: 100 * time.Millisecond}
	a, b := newTestHub(t, cfg), newTestHub(t, cfg)
	s1 := a.open(t, 1)
	b.open(t, 1)
	if _, err := a.Open(t.Context(), 1); feed.ErrorCode(err) != feed.ERATELIMIT {
		t.Fatalf("a third stream of user 1, on the first process: %v; want ERATELIMIT", err)
	}
	if _, err := b.Open(t.Context(), 1); feed.ErrorCode(err) != feed.ERATELIMIT {
		t.Fatalf("a third stream of user 1, on the second process: %v; want ERATELIMIT", err)
	}
	b.open(t, 2) // another user's are their own
	s1.Close()
	b.open(t, 1) // the slot s1 freed, on the other process

	// Open streams keep their slots past their process key's ttl (three
	// heartbeats): the processes renew their keys.
	time.Sleep(8 * cfg.Heartbeat)
	if _, err := a.Open(t.Context(), 1); feed.ErrorCode(err) != feed.ERATELIMIT {
		t.Fatalf("after 8 heartbeats: %v; want ERATELIMIT still", err)
	}

	// A process dies with two streams of user 3 open: its key is no
	// longer renewed, and once it expires the slots are taken.
	c := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { c.Close() })
	dead := New(nil, cfg, c, func(context.Context, int64) ([]int64, error) { return nil, nil })
	ctx, die := context.WithCancel(t.Context())
	go dead.Run(ctx)
	for range 2 {
		if _, err := dead.Open(t.Context(), 3); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Open(t.Context(), 3); feed.ErrorCode(err) != feed.ERATELIMIT {
		t.Fatalf("user 3 with two streams on a live process: %v; want ERATELIMIT", err)
	}
	die()
	time.Sleep(4 * cfg.Heartbeat)
	a.open(t, 3)
	a.open(t, 3)

	// A process whose cache fails keeps its own bound.
	f := newTestHub(t, Config{MaxPerUser: 2, Slots: failingKV{kv}})
	f.open(t, 1)
	f.open(t, 1)
	if _, err := f.Open(t.Context(), 1); feed.ErrorCode(err) != feed.ERATELIMIT {
		t.Fatalf("without the cache, a third stream on one process: %v; want ERATELIMIT", err)
	}
}

// TestRepeatAnnouncementWakesOnlyNewStreams: a post's second
// announcement (the relay's, then the dispatcher's) is handed only to the
// streams that joined its author's channel since the first; the others
// are not woken for it.
func TestRepeatAnnouncementWakesOnlyNewStreams(t *testing.T) {
	h := newTestHub(t, Config{})
	h.follow(1, 10)
	h.follow(2, 10)
	s1 := h.open(t, 1)
	ctx := t.Context()
	if err := h.ann.PostCreated(ctx, 10, 700); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, s1); ev != (Event{Kind: Post, ID: 700}) {
		t.Fatalf("event %+v; want post 700", ev)
	}
	s2 := h.open(t, 2)
	if err := h.ann.PostCreated(ctx, 10, 700); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, s2); ev != (Event{Kind: Post, ID: 700}) {
		t.Fatalf("a stream opened between the announcements: %+v; want post 700", ev)
	}
	if n := len(s1.events); n != 0 {
		t.Fatalf("the first stream was handed %d events for the repeat; want none", n)
	}
	if err := h.ann.PostCreated(ctx, 10, 701); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Stream{s1, s2} {
		if ev := next(t, s); ev != (Event{Kind: Post, ID: 701}) {
			t.Fatalf("event %+v; want post 701", ev)
		}
	}
}

// TestDeliveryYieldsToRequests: between its waves, a post's delivery waits
// while the process has requests in flight, and no longer than its
// budget when they never end.
func TestDeliveryYieldsToRequests(t *testing.T) {
	var busy atomic.Bool
	h := newTestHub(t, Config{Busy: busy.Load})
	var streams []*Stream
	for r := int64(1); r <= deliverWave+1; r++ {
		h.follow(r, 10)
		streams = append(streams, h.open(t, r))
	}
	first, last := streams[0], streams[deliverWave]
	ctx := t.Context()

	busy.Store(true)
	if err := h.ann.PostCreated(ctx, 10, 700); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, first); ev != (Event{Kind: Post, ID: 700}) {
		t.Fatalf("first wave: %+v; want post 700", ev)
	}
	time.Sleep(yieldBudget / 4)
	if n := len(last.events); n != 0 {
		t.Fatalf("the second wave was handed %d events while requests were in flight; want none yet", n)
	}
	busy.Store(false)
	if ev := next(t, last); ev != (Event{Kind: Post, ID: 700}) {
		t.Fatalf("second wave, the requests done: %+v; want post 700", ev)
	}

	// Requests that never end hold a delivery for its budget, then it
	// goes on.
	busy.Store(true)
	start := time.Now()
	if err := h.ann.PostCreated(ctx, 10, 701); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Stream{first, last} {
		if ev := next(t, s); ev != (Event{Kind: Post, ID: 701}) {
			t.Fatalf("with requests always in flight: %+v; want post 701", ev)
		}
	}
	if took := time.Since(start); took < yieldBudget {
		t.Fatalf("the second wave came %v after the announcement, with requests always in flight; want it held for the budget, %v", took, yieldBudget)
	}
}

// TestWavePace: a post's waves follow each other at the rate asked; a
// post for one wave is not paced.
func TestWavePace(t *testing.T) {
	for _, tc := range []struct {
		n, rate int
		want    time.Duration
	}{
		{1, DefaultWriteRate, 0},
		{deliverWave, DefaultWriteRate, 0},
		{deliverWave + 1, DefaultWriteRate, 625 * time.Microsecond},
		{10_000, DefaultWriteRate, 625 * time.Microsecond}, // 625 waves: 390 ms
		{10_000, 1_600, 10 * time.Millisecond},
	} {
		if got := wavePace(tc.n, tc.rate); got != tc.want {
			t.Errorf("wavePace(%d, %d) = %v; want %v", tc.n, tc.rate, got, tc.want)
		}
	}
}

// TestDeliveryPaced: a post to many streams reaches them at the write
// rate, not at once.
func TestDeliveryPaced(t *testing.T) {
	const rate = 16 * deliverWave // streams a second: a wave every 62.5 ms
	h := newTestHub(t, Config{WriteRate: rate})
	var streams []*Stream
	for r := int64(1); r <= 8*deliverWave; r++ {
		h.follow(r, 10)
		streams = append(streams, h.open(t, r))
	}
	start := time.Now()
	if err := h.ann.PostCreated(t.Context(), 10, 700); err != nil {
		t.Fatal(err)
	}
	for _, s := range streams {
		if ev := next(t, s); ev != (Event{Kind: Post, ID: 700}) {
			t.Fatalf("event %+v; want post 700", ev)
		}
	}
	// Eight waves: the last starts seven paces after the first.
	if took, want := time.Since(start), 7*wavePace(len(streams), rate); took < want {
		t.Fatalf("the post reached %d streams in %v; want at least %v at %d streams a second", len(streams), took, want, rate)
	}
}
