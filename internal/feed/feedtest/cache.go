package feedtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Ttls of the suite. shortTTL is real time, not a fake clock, so that the
// suite runs unchanged against Redis; a second and a half is far above
// Redis's millisecond expiry resolution and keeps the suite quick.
const (
	longTTL  = time.Hour
	shortTTL = 1500 * time.Millisecond
)

// ReadTTL is the ttl the caches under test give back to an inbox that a
// read finds holding ids (their Options.InboxTTL).
const ReadTTL = longTTL

// TestCache runs the behavioural suite of feed.Cache against the
// implementation newCache builds.
//
// newCache is called once per subtest and returns a fresh, empty cache that
// trims inboxes to inboxMax ids. It registers its own cleanup with
// t.Cleanup (closing the cache, removing what it stored); a subtest may
// close the cache itself first, so that cleanup must tolerate a cache that
// is already closed.
func TestCache(t *testing.T, newCache func(t *testing.T, inboxMax int) feed.Cache) {
	t.Helper()
	for _, b := range cacheBehaviours {
		t.Run(b.name, func(t *testing.T) { b.run(t, newCache) })
	}
}

// newCacheFunc is TestCache's newCache.
type newCacheFunc = func(t *testing.T, inboxMax int) feed.Cache

// cacheBehaviours are the suite's subtests, one function each: the inbox
// (here), the post cache and the key-value store (cacheposts.go), and a
// random walk checked against a model (cachemodel.go).
var cacheBehaviours = []struct {
	name string
	run  func(t *testing.T, newCache newCacheFunc)
}{
	{"page order and bounds", cachePageOrder},
	{"missing, empty, complete and incomplete", cacheInboxStates},
	{"fill replaces", cacheFillReplaces},
	{"fill trims to max keeping the newest", cacheFillTrims},
	{"push skips absent inboxes", cachePushSkipsAbsent},
	{"push is idempotent and orders by id", cachePushIdempotent},
	{"push trims to max and marks incomplete", cachePushTrims},
	{"add and remove", cacheAddRemove},
	{"bounds", cacheBounds},
	{"drop", cacheDrop},
	{"ttl expiry", cacheTTLExpiry},
	{"post cache", cachePosts},
	{"post data and edits", cachePostEdits},
	{"post versions", cachePostVersions},
	{"kv", cacheKV},
	{"many first pages at once", cacheInboxPages},
	{"concurrent pushes", cacheConcurrentPushes},
	{"every cursor and every repeat", cacheEveryCursor},
	{"random operations match a model", cacheRandomOps},
	{"ids near 2^53-1 stay exact", cacheIDsNear2p53},
	{"ids before 2025", cacheIDsBefore2025},
	{"ids out of range are invalid", cacheIDsOutOfRange},
	{"close", cacheClose},
}

func cachePageOrder(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 100)
	fill(t, c, 1, []int64{105, 101, 109, 103, 107, 103}, true)

	for _, tc := range []struct {
		before int64
		n      int
		want   []int64
	}{
		{0, 2, []int64{109, 107}},
		{0, 10, []int64{109, 107, 105, 103, 101}},
		{107, 2, []int64{105, 103}}, // before is exclusive
		{106, 2, []int64{105, 103}}, // before need not be in the inbox
		{103, 10, []int64{101}},
		{101, 10, nil}, // past the end: empty, the caller checks Complete
		{200, 1, []int64{109}},
		{0, 0, nil},
	} {
		t.Run(fmt.Sprintf("before=%d,n=%d", tc.before, tc.n), func(t *testing.T) {
			checkPage(t, c, 1, tc.before, tc.n, feed.InboxPage{IDs: tc.want, Exists: true, Complete: true})
		})
	}
}

func cacheInboxStates(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 100)
	checkInbox(t, c, 1, feed.InboxPage{})
	checkBounds(t, c, 1, 0, 0, false)

	fill(t, c, 1, nil, true)
	checkInbox(t, c, 1, feed.InboxPage{Exists: true, Complete: true})
	checkBounds(t, c, 1, 0, 0, true)

	fill(t, c, 2, nil, false)
	checkInbox(t, c, 2, feed.InboxPage{Exists: true})

	fill(t, c, 3, []int64{101, 102}, false)
	checkInbox(t, c, 3, feed.InboxPage{IDs: []int64{102, 101}, Exists: true})

	checkInbox(t, c, 4, feed.InboxPage{})
}

func cacheFillReplaces(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 100)
	fill(t, c, 1, []int64{101, 102, 103}, false)
	fill(t, c, 1, []int64{201, 202}, true)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{202, 201}, Exists: true, Complete: true})

	fill(t, c, 1, nil, true)
	checkInbox(t, c, 1, feed.InboxPage{Exists: true, Complete: true})
}

func cacheFillTrims(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 5)
	// A trimmed inbox no longer holds the whole feed: incomplete.
	fill(t, c, 1, []int64{104, 101, 108, 102, 106, 103, 107, 105}, true)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{108, 107, 106, 105, 104}, Exists: true})

	fill(t, c, 2, []int64{101, 102, 103, 104, 105}, true)
	checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{105, 104, 103, 102, 101}, Exists: true, Complete: true})

	// Duplicates count once.
	fill(t, c, 3, []int64{101, 102, 103, 104, 105, 105, 103}, true)
	checkInbox(t, c, 3, feed.InboxPage{IDs: []int64{105, 104, 103, 102, 101}, Exists: true, Complete: true})
}

func cachePushSkipsAbsent(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 100)
	fill(t, c, 2, nil, true)
	fill(t, c, 4, []int64{100}, true)

	push(t, c, []int64{1, 2, 3, 4}, 500)
	checkInbox(t, c, 1, feed.InboxPage{})
	checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{500}, Exists: true, Complete: true})
	checkInbox(t, c, 3, feed.InboxPage{})
	checkInbox(t, c, 4, feed.InboxPage{IDs: []int64{500, 100}, Exists: true, Complete: true})

	push(t, c, nil, 600)
	checkInbox(t, c, 4, feed.InboxPage{IDs: []int64{500, 100}, Exists: true, Complete: true})
}

func cachePushIdempotent(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 100)
	fill(t, c, 1, nil, true)
	for _, id := range []int64{300, 100, 200, 300, 100, 200} {
		push(t, c, []int64{1}, id)
	}
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{300, 200, 100}, Exists: true, Complete: true})

	push(t, c, []int64{1, 1, 1}, 400) // a reader twice in one batch
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{400, 300, 200, 100}, Exists: true, Complete: true})
}

func cachePushTrims(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 3)
	fill(t, c, 1, []int64{101, 102}, true)
	push(t, c, []int64{1}, 103)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{103, 102, 101}, Exists: true, Complete: true})
	push(t, c, []int64{1}, 104)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{104, 103, 102}, Exists: true})

	// An id older than a full inbox is trimmed at once, but the inbox
	// now misses it: incomplete.
	fill(t, c, 2, []int64{101, 102, 103}, true)
	push(t, c, []int64{2}, 50)
	checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{103, 102, 101}, Exists: true})

	// Re-pushing an id a full inbox holds changes nothing.
	fill(t, c, 3, []int64{101, 102, 103}, true)
	push(t, c, []int64{3}, 102)
	checkInbox(t, c, 3, feed.InboxPage{IDs: []int64{103, 102, 101}, Exists: true, Complete: true})
}

func cacheAddRemove(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 5)
	add(t, c, 1, []int64{101}, false)
	checkInbox(t, c, 1, feed.InboxPage{}) // absent inboxes are not created

	fill(t, c, 1, []int64{101, 103}, true)
	add(t, c, 1, []int64{102, 104, 104}, false)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{104, 103, 102, 101}, Exists: true, Complete: true})
	add(t, c, 1, nil, true)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{104, 103, 102, 101}, Exists: true})

	fill(t, c, 2, []int64{101}, true)
	add(t, c, 2, []int64{102, 103, 104, 105, 106, 107}, false)
	checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{107, 106, 105, 104, 103}, Exists: true})

	remove(t, c, 1, []int64{103, 999})
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{104, 102, 101}, Exists: true})
	remove(t, c, 1, nil)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{104, 102, 101}, Exists: true})

	fill(t, c, 3, []int64{101, 102}, true)
	remove(t, c, 3, []int64{101, 102})
	checkInbox(t, c, 3, feed.InboxPage{Exists: true, Complete: true}) // emptied, not dropped

	remove(t, c, 4, []int64{101})
	checkInbox(t, c, 4, feed.InboxPage{})
}

func cacheBounds(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 100)
	fill(t, c, 1, []int64{105, 101, 103}, true)
	checkBounds(t, c, 1, 105, 101, true)
	push(t, c, []int64{1}, 110)
	checkBounds(t, c, 1, 110, 101, true)
	remove(t, c, 1, []int64{110, 105, 103, 101})
	checkBounds(t, c, 1, 0, 0, true)

	fill(t, c, 2, []int64{101}, true)
	checkBounds(t, c, 2, 101, 101, true)
	checkBounds(t, c, 3, 0, 0, false)
}

func cacheDrop(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 100)
	fill(t, c, 1, []int64{101}, true)
	fill(t, c, 2, []int64{101}, true)
	drop(t, c, 1)
	checkInbox(t, c, 1, feed.InboxPage{})
	checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{101}, Exists: true, Complete: true})
	drop(t, c, 1) // dropping an absent inbox is fine
	push(t, c, []int64{1}, 102)
	checkInbox(t, c, 1, feed.InboxPage{})
}

func cacheTTLExpiry(t *testing.T, newCache newCacheFunc) {
	ctx := t.Context()
	c := newCache(t, 100)

	// An empty inbox remembered briefly is how a reader with an empty
	// feed avoids a rebuild on every read. A push must not keep an
	// inbox alive: the ttl bounds how long an inbox nobody reads costs
	// fan-out work. A read of an inbox holding ids renews it to
	// ReadTTL (inbox 3: an empty feed that pushes filled, then read);
	// a read that finds it empty does not (inbox 4).
	must(t, c.FillInbox(ctx, 1, nil, true, shortTTL))
	must(t, c.FillInbox(ctx, 2, []int64{101}, true, longTTL))
	must(t, c.FillInbox(ctx, 3, nil, true, shortTTL))
	must(t, c.FillInbox(ctx, 4, nil, true, shortTTL))
	checkInbox(t, c, 4, feed.InboxPage{Exists: true, Complete: true})
	push(t, c, []int64{1, 2, 3}, 102)
	checkInbox(t, c, 3, feed.InboxPage{IDs: []int64{102}, Exists: true, Complete: true})
	must(t, c.CachePosts(ctx, []feed.Post{{ID: 101, AuthorID: 1, Content: "short"}}, shortTTL))
	must(t, c.CachePosts(ctx, []feed.Post{{ID: 102, AuthorID: 1, Content: "long"}}, longTTL))

	if ok, err := c.SetNX(ctx, "setnx", "a", shortTTL); err != nil || !ok {
		t.Fatalf("SetNX = %v, %v; want true, nil", ok, err)
	}
	must(t, c.Set(ctx, "set", "a", shortTTL))
	must(t, c.Set(ctx, "long", "a", longTTL))
	must(t, c.Set(ctx, "extended", "owner", shortTTL))
	must(t, c.Set(ctx, "shortened", "owner", longTTL))
	checkCAE(t, c, "extended", "owner", longTTL, true)
	checkCAE(t, c, "shortened", "owner", shortTTL, true)
	checkCAE(t, c, "long", "intruder", shortTTL, false)

	checkBounds(t, c, 1, 102, 102, true) // not a read: no renewal
	checkPosts(t, c, []int64{101, 102}, []int64{101, 102})
	for _, k := range []string{"setnx", "set", "long", "extended", "shortened"} {
		checkGet(t, c, k, true)
	}

	time.Sleep(shortTTL + 600*time.Millisecond)

	checkInbox(t, c, 1, feed.InboxPage{})
	checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{102, 101}, Exists: true, Complete: true})
	checkInbox(t, c, 3, feed.InboxPage{IDs: []int64{102}, Exists: true, Complete: true})
	checkInbox(t, c, 4, feed.InboxPage{})
	// The renewal covers the pending list too: a push after it lands.
	push(t, c, []int64{3}, 103)
	checkInbox(t, c, 3, feed.InboxPage{IDs: []int64{103, 102}, Exists: true, Complete: true})
	push(t, c, []int64{1}, 103) // an expired inbox is absent for pushes too
	checkInbox(t, c, 1, feed.InboxPage{})
	checkPosts(t, c, []int64{101, 102}, []int64{102})
	for k, want := range map[string]bool{"setnx": false, "set": false, "long": true, "extended": true, "shortened": false} {
		checkGet(t, c, k, want)
	}
	if ok, err := c.SetNX(ctx, "setnx", "b", longTTL); err != nil || !ok {
		t.Errorf("SetNX after expiry = %v, %v; want true, nil", ok, err)
	}
}

func cacheConcurrentPushes(t *testing.T, newCache newCacheFunc) {
	const (
		goroutines = 8
		readers    = 200
	)
	readerIDs := make([]int64, readers)
	for i := range readerIDs {
		readerIDs[i] = int64(i + 1)
	}
	// run pushes ids from goroutines at once, each in its own order,
	// into every reader's inbox, and checks that every inbox ends up
	// the same.
	run := func(t *testing.T, c feed.Cache, ids func(g int) []int64, want feed.InboxPage) {
		t.Helper()
		for _, r := range readerIDs {
			fill(t, c, r, nil, true)
		}
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				mine := ids(g)
				rng.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
				for _, id := range mine {
					if err := c.PushToInboxes(t.Context(), readerIDs, id); err != nil {
						t.Errorf("PushToInboxes(%d readers, %d): %v", len(readerIDs), id, err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, r := range readerIDs {
			checkInbox(t, c, r, want)
		}
	}

	t.Run("over max", func(t *testing.T) {
		// 8 goroutines push 40 ids each, disjoint: 320 ids, the newest
		// 50 stay.
		var want []int64
		for id := int64(1319); id >= 1270; id-- {
			want = append(want, id)
		}
		run(t, newCache(t, 50), func(g int) []int64 {
			var ids []int64
			for i := range 40 {
				ids = append(ids, int64(1000+i*goroutines+g))
			}
			return ids
		}, feed.InboxPage{IDs: want, Exists: true})
	})
	t.Run("overlapping", func(t *testing.T) {
		// Every goroutine pushes the same 60 ids: each lands once.
		var want []int64
		for id := int64(5059); id >= 5000; id-- {
			want = append(want, id)
		}
		run(t, newCache(t, 100), func(int) []int64 { return slices.Clone(want) },
			feed.InboxPage{IDs: want, Exists: true, Complete: true})
	})
}

func cacheEveryCursor(t *testing.T, newCache newCacheFunc) {
	// A page below each id of a full inbox, and below each gap, then
	// every id pushed again: an implementation that searches (a ring,
	// buckets) meets the cursor at each place its search can stop.
	const size = 300
	c := newCache(t, size)
	var ids []int64 // newest first: 1598, 1596, ..., 1000
	for id := int64(1000 + 2*(size-1)); id >= 1000; id -= 2 {
		ids = append(ids, id)
	}
	fill(t, c, 1, ids, true)
	for i, id := range ids {
		want := ids[i+1 : min(len(ids), i+6)]
		if len(want) == 0 {
			want = nil
		}
		checkPage(t, c, 1, id, 5, feed.InboxPage{IDs: want, Exists: true, Complete: true})
		checkPage(t, c, 1, id+1, 5, feed.InboxPage{IDs: ids[i:min(len(ids), i+5)], Exists: true, Complete: true})
	}
	for _, id := range ids {
		push(t, c, []int64{1}, id)
	}
	checkInbox(t, c, 1, feed.InboxPage{IDs: ids, Exists: true, Complete: true})
	checkBounds(t, c, 1, ids[0], ids[len(ids)-1], true)
}

func cacheIDsNear2p53(t *testing.T, newCache newCacheFunc) {
	const m = feed.MaxID
	c := newCache(t, 10)
	fill(t, c, 1, []int64{m - 3, m - 1}, true)
	push(t, c, []int64{1}, m)
	push(t, c, []int64{1}, m-2)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{m, m - 1, m - 2, m - 3}, Exists: true, Complete: true})
	checkPage(t, c, 1, m, 2, feed.InboxPage{IDs: []int64{m - 1, m - 2}, Exists: true, Complete: true})
	checkPage(t, c, 1, m-1, 10, feed.InboxPage{IDs: []int64{m - 2, m - 3}, Exists: true, Complete: true})
	checkBounds(t, c, 1, m, m-3, true)
	remove(t, c, 1, []int64{m - 2})
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{m, m - 1, m - 3}, Exists: true, Complete: true})
	add(t, c, 1, []int64{m - 2}, false)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{m, m - 1, m - 2, m - 3}, Exists: true, Complete: true})
}

func cacheIDsBefore2025(t *testing.T, newCache newCacheFunc) {
	// Negative ids, down to MinID, sort below every id of 2025 on, and
	// page exactly across 0.
	const lo = feed.MinID
	c := newCache(t, 10)
	fill(t, c, 1, []int64{-1, lo, 4096}, true)
	push(t, c, []int64{1}, 5000)
	push(t, c, []int64{1}, -4096) // late: history among history
	push(t, c, []int64{1}, lo+1)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{5000, 4096, -1, -4096, lo + 1, lo}, Exists: true, Complete: true})
	checkPage(t, c, 1, 4096, 2, feed.InboxPage{IDs: []int64{-1, -4096}, Exists: true, Complete: true})
	checkPage(t, c, 1, -1, 10, feed.InboxPage{IDs: []int64{-4096, lo + 1, lo}, Exists: true, Complete: true})
	checkPage(t, c, 1, lo, 10, feed.InboxPage{IDs: []int64{}, Exists: true, Complete: true})
	checkBounds(t, c, 1, 5000, lo, true)
	remove(t, c, 1, []int64{-1, 5000})
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{4096, -4096, lo + 1, lo}, Exists: true, Complete: true})
	add(t, c, 1, []int64{-2, -3}, false)
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{4096, -2, -3, -4096, lo + 1, lo}, Exists: true, Complete: true})

	// Only history, into an empty inbox, and trimmed to the newest.
	fill(t, c, 2, nil, true)
	push(t, c, []int64{2}, -7)
	add(t, c, 2, []int64{-9, -8, -20, -30, -40, -50, -60, -70, -80, -90, -100}, false)
	checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{-7, -8, -9, -20, -30, -40, -50, -60, -70, -80}, Exists: true, Complete: false})
	checkBounds(t, c, 2, -7, -80, true)
}

func cacheIDsOutOfRange(t *testing.T, newCache newCacheFunc) {
	// Ids are MinID to MaxID: beyond, one would lose precision as a
	// float64 score, and the cache may use 0 itself.
	ctx := t.Context()
	c := newCache(t, 10)
	fill(t, c, 1, []int64{101}, true)
	for _, bad := range []int64{0, feed.MinID - 1, feed.MaxID + 1} {
		checkInvalid(t, "PushToInboxes", c.PushToInboxes(ctx, []int64{1}, bad))
		checkInvalid(t, "FillInbox", c.FillInbox(ctx, 2, []int64{101, bad}, true, longTTL))
		checkInvalid(t, "AddToInbox", c.AddToInbox(ctx, 1, []int64{102, bad}, false))
		checkInvalid(t, "RemoveFromInbox", c.RemoveFromInbox(ctx, 1, []int64{101, bad}))
	}
	checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{101}, Exists: true, Complete: true})
	checkInbox(t, c, 2, feed.InboxPage{})
}

func cacheClose(t *testing.T, newCache newCacheFunc) {
	ctx := t.Context()
	c := newCache(t, 10)
	must(t, c.Ping(ctx))
	must(t, c.Close())
	if err := c.Ping(ctx); err == nil {
		t.Errorf("Ping after Close = nil; want an error")
	}
}

// cacheInboxPages: InboxPages answers each inbox as InboxPage does, an
// absent one as absent.
func cacheInboxPages(t *testing.T, newCache newCacheFunc) {
	c := newCache(t, 100)
	fill(t, c, 1, []int64{105, 101, 109}, true)
	fill(t, c, 2, nil, false)
	fill(t, c, 3, []int64{7, 8}, false)
	got, err := c.InboxPages(t.Context(), []int64{1, 2, 3, 4}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range map[int64]feed.InboxPage{
		1: {IDs: []int64{109, 105}, Exists: true, Complete: true},
		2: {Exists: true},
		3: {IDs: []int64{8, 7}, Exists: true},
		4: {},
	} {
		if g := got[r]; !slices.Equal(g.IDs, want.IDs) || g.Exists != want.Exists || g.Complete != want.Complete {
			t.Errorf("InboxPages: inbox %d = %+v; want %+v", r, g, want)
		}
	}
}
