package feedtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

	t.Run("page order and bounds", func(t *testing.T) {
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
	})

	t.Run("missing, empty, complete and incomplete", func(t *testing.T) {
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
	})

	t.Run("fill replaces", func(t *testing.T) {
		c := newCache(t, 100)
		fill(t, c, 1, []int64{101, 102, 103}, false)
		fill(t, c, 1, []int64{201, 202}, true)
		checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{202, 201}, Exists: true, Complete: true})

		fill(t, c, 1, nil, true)
		checkInbox(t, c, 1, feed.InboxPage{Exists: true, Complete: true})
	})

	t.Run("fill trims to max keeping the newest", func(t *testing.T) {
		c := newCache(t, 5)
		// A trimmed inbox no longer holds the whole feed: incomplete.
		fill(t, c, 1, []int64{104, 101, 108, 102, 106, 103, 107, 105}, true)
		checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{108, 107, 106, 105, 104}, Exists: true})

		fill(t, c, 2, []int64{101, 102, 103, 104, 105}, true)
		checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{105, 104, 103, 102, 101}, Exists: true, Complete: true})

		// Duplicates count once.
		fill(t, c, 3, []int64{101, 102, 103, 104, 105, 105, 103}, true)
		checkInbox(t, c, 3, feed.InboxPage{IDs: []int64{105, 104, 103, 102, 101}, Exists: true, Complete: true})
	})

	t.Run("push skips absent inboxes", func(t *testing.T) {
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
	})

	t.Run("push is idempotent and orders by id", func(t *testing.T) {
		c := newCache(t, 100)
		fill(t, c, 1, nil, true)
		for _, id := range []int64{300, 100, 200, 300, 100, 200} {
			push(t, c, []int64{1}, id)
		}
		checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{300, 200, 100}, Exists: true, Complete: true})

		push(t, c, []int64{1, 1, 1}, 400) // a reader twice in one batch
		checkInbox(t, c, 1, feed.InboxPage{IDs: []int64{400, 300, 200, 100}, Exists: true, Complete: true})
	})

	t.Run("push trims to max and marks incomplete", func(t *testing.T) {
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
	})

	t.Run("add and remove", func(t *testing.T) {
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
	})

	t.Run("bounds", func(t *testing.T) {
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
	})

	t.Run("drop", func(t *testing.T) {
		c := newCache(t, 100)
		fill(t, c, 1, []int64{101}, true)
		fill(t, c, 2, []int64{101}, true)
		drop(t, c, 1)
		checkInbox(t, c, 1, feed.InboxPage{})
		checkInbox(t, c, 2, feed.InboxPage{IDs: []int64{101}, Exists: true, Complete: true})
		drop(t, c, 1) // dropping an absent inbox is fine
		push(t, c, []int64{1}, 102)
		checkInbox(t, c, 1, feed.InboxPage{})
	})

	t.Run("ttl expiry", func(t *testing.T) {
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
	})

	t.Run("post cache", func(t *testing.T) {
		ctx := t.Context()
		c := newCache(t, 100)
		posts := []feed.Post{
			{ID: 101, AuthorID: 7, Content: "hello, 世界 \x00 \"quoted\"", CreatedAt: time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)},
			{ID: 102, AuthorID: 8, CreatedAt: time.Date(2026, 3, 4, 5, 6, 8, 0, time.FixedZone("CET", 3600)), Deleted: true},
			{ID: feed.MaxID, AuthorID: feed.MaxID, Content: strings.Repeat("ü", feed.MaxContentRunes)},
		}

		got, err := c.CachedPosts(ctx, nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("CachedPosts(nil) = %v, %v; want empty, nil", got, err)
		}
		must(t, c.CachePosts(ctx, nil, longTTL))
		must(t, c.CachePosts(ctx, posts, longTTL))

		got, err = c.CachedPosts(ctx, []int64{101, 999, 102, feed.MaxID, 101})
		if err != nil {
			t.Fatalf("CachedPosts: %v", err)
		}
		if len(got) != len(posts) {
			t.Errorf("CachedPosts returned %d posts; want %d (999 is a miss)", len(got), len(posts))
		}
		for _, want := range posts {
			checkPost(t, got, want)
		}

		// A post deleted after it was cached becomes a tombstone.
		tomb := feed.Post{ID: 101, AuthorID: 7, CreatedAt: posts[0].CreatedAt, Deleted: true}
		must(t, c.CachePosts(ctx, []feed.Post{tomb}, longTTL))
		got, err = c.CachedPosts(ctx, []int64{101})
		if err != nil {
			t.Fatalf("CachedPosts: %v", err)
		}
		checkPost(t, got, tomb)
	})

	t.Run("post data and edits", func(t *testing.T) {
		ctx := t.Context()
		c := newCache(t, 100)
		created := time.Date(2026, 3, 4, 5, 6, 7, 123_000_000, time.UTC)
		edited := created.Add(time.Hour)
		big := `{"s":"` + strings.Repeat("é", (feed.MaxDataBytes-8)/2) + `"}`
		posts := []feed.Post{
			{ID: 101, AuthorID: 7, Content: "data", CreatedAt: created, Data: `{"title":"Hi 🌍","n":[1,{"x":null}],"e":"\u0000<&>"}`},
			{ID: 102, AuthorID: 7, Content: "edited", CreatedAt: created, EditedAt: edited},
			{ID: 103, AuthorID: 7, Content: "both", CreatedAt: created, EditedAt: edited, Data: big},
			{ID: 104, AuthorID: 7, CreatedAt: created, Data: `{}`},
		}
		must(t, c.CachePosts(ctx, posts, longTTL))
		got, err := c.CachedPosts(ctx, []int64{101, 102, 103, 104})
		if err != nil {
			t.Fatalf("CachedPosts: %v", err)
		}
		for _, want := range posts {
			checkPost(t, got, want)
		}
	})

	t.Run("post versions", func(t *testing.T) {
		// What an edit racing a reader's fill leaves: the cache keeps the
		// highest version (feed.Post.Version) it was given, whatever the
		// order the writes arrive in.
		ctx := t.Context()
		c := newCache(t, 100)
		created := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		// With an external id, which a cache keeps with every version.
		const ext = "app-101"
		v0 := feed.Post{ID: 101, AuthorID: 7, Content: "original", CreatedAt: created, Data: `{"v":0}`, ExternalID: ext}
		v1 := feed.Post{ID: 101, AuthorID: 7, Content: "first edit", CreatedAt: created, EditedAt: created.Add(time.Second), ExternalID: ext}
		v2 := feed.Post{ID: 101, AuthorID: 7, Content: "second edit", CreatedAt: created, EditedAt: created.Add(time.Second + time.Millisecond), Data: `{"v":2}`, ExternalID: ext}
		tomb := feed.Post{ID: 101, AuthorID: 7, CreatedAt: created, Deleted: true, ExternalID: ext}
		cached := func(want feed.Post) {
			t.Helper()
			got, err := c.CachedPosts(ctx, []int64{101})
			if err != nil {
				t.Fatalf("CachedPosts: %v", err)
			}
			checkPost(t, got, want)
		}
		for _, step := range []struct {
			write, want feed.Post
		}{
			{v0, v0},     // a fill
			{v1, v1},     // an edit replaces it
			{v0, v1},     // a late fill with the original does not
			{v2, v2},     // a later edit does
			{v1, v2},     // an earlier edit arriving late does not
			{v2, v2},     // the same version does (a refill)
			{tomb, tomb}, // a delete replaces any version
			{v2, tomb},   // and nothing live replaces a tombstone
			{v0, tomb},
		} {
			must(t, c.CachePosts(ctx, []feed.Post{step.write}, longTTL))
			cached(step.want)
		}
		// One call may mix stored and refused posts.
		v0b := feed.Post{ID: 102, AuthorID: 7, Content: "other", CreatedAt: created}
		must(t, c.CachePosts(ctx, []feed.Post{v0, v0b}, longTTL))
		cached(tomb)
		checkPosts(t, c, []int64{101, 102}, []int64{101, 102})
	})

	t.Run("kv", func(t *testing.T) {
		ctx := t.Context()
		c := newCache(t, 100)

		for i, want := range []bool{true, false} {
			if ok, err := c.SetNX(ctx, "lock", fmt.Sprint("owner", i), longTTL); err != nil || ok != want {
				t.Fatalf("SetNX #%d = %v, %v; want %v, nil", i, ok, err, want)
			}
		}
		checkValue(t, c, "lock", "owner0")
		checkGet(t, c, "missing", false)

		must(t, c.Set(ctx, "lock", "owner2", longTTL))
		checkValue(t, c, "lock", "owner2")

		checkCAD(t, c, "lock", "owner0", false)
		checkValue(t, c, "lock", "owner2")
		checkCAD(t, c, "lock", "owner2", true)
		checkGet(t, c, "lock", false)
		checkCAD(t, c, "lock", "owner2", false)
		checkCAE(t, c, "lock", "owner2", longTTL, false)
		checkGet(t, c, "lock", false) // CompareAndExpire never creates

		must(t, c.Set(ctx, "lease", "me", longTTL))
		checkCAE(t, c, "lease", "you", longTTL, false)
		checkCAE(t, c, "lease", "me", longTTL, true)
		checkValue(t, c, "lease", "me")

		// Keys are opaque: braces, colons and bytes do not confuse them
		// with each other or with the cache's own keys.
		for _, k := range []string{"rate:{7}:1", "rate:{7}:2", "feed:{1}", "post:{1}", "ключ\x00"} {
			must(t, c.Set(ctx, k, "v-"+k, longTTL))
		}
		for _, k := range []string{"rate:{7}:1", "rate:{7}:2", "feed:{1}", "post:{1}", "ключ\x00"} {
			checkValue(t, c, k, "v-"+k)
		}
		checkInbox(t, c, 1, feed.InboxPage{})
		checkPosts(t, c, []int64{1}, nil)
	})

	t.Run("concurrent pushes", func(t *testing.T) {
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
	})

	t.Run("every cursor and every repeat", func(t *testing.T) {
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
	})

	t.Run("random operations match a model", func(t *testing.T) {
		// Pushes in any order, adds, removes, fills and drops on a few
		// inboxes, checked after every step against the contract written
		// as the plainest code (model): whatever layout an implementation
		// keeps — a ring that wraps and grows, buckets — must not show.
		// Several maxima so that a full inbox, one that is still growing
		// and one of a single id are all covered.
		for _, inboxMax := range []int{1, 5, 40, 150} {
			t.Run(fmt.Sprintf("max=%d", inboxMax), func(t *testing.T) {
				randomOps(t, newCache(t, inboxMax), inboxMax, 400, 100)
			})
		}
		// Around 0: the negative ids of posts from before 2025 and the
		// first ids after, in one inbox.
		t.Run("max=40 history", func(t *testing.T) {
			randomOps(t, newCache(t, 40), 40, 400, -65)
		})
	})

	t.Run("ids near 2^53-1 stay exact", func(t *testing.T) {
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
	})

	t.Run("ids before 2025", func(t *testing.T) {
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
	})

	t.Run("ids out of range are invalid", func(t *testing.T) {
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
	})

	t.Run("close", func(t *testing.T) {
		ctx := t.Context()
		c := newCache(t, 10)
		must(t, c.Ping(ctx))
		must(t, c.Close())
		if err := c.Ping(ctx); err == nil {
			t.Errorf("Ping after Close = nil; want an error")
		}
	})
}

// model is an inbox as the contract describes it: ids ascending.
type model struct {
	ids      []int64
	complete bool
}

func (m *model) insert(ids []int64, inboxMax int) {
	for _, id := range ids {
		if i, found := slices.BinarySearch(m.ids, id); !found {
			m.ids = slices.Insert(m.ids, i, id)
		}
	}
	if over := len(m.ids) - inboxMax; over > 0 {
		m.ids = slices.Delete(m.ids, 0, over)
		m.complete = false
	}
}

// page is the model's InboxPage.
func (m *model) page(before int64, n int) feed.InboxPage {
	if m == nil {
		return feed.InboxPage{}
	}
	p := feed.InboxPage{Exists: true, Complete: m.complete}
	for _, id := range slices.Backward(m.ids) {
		if len(p.IDs) == n {
			break
		}
		if before == 0 || id < before {
			p.IDs = append(p.IDs, id)
		}
	}
	return p
}

// randomOps runs steps random operations on c and on a model of each
// inbox, checking the whole of every inbox after each step, a random page
// and the bounds.
func randomOps(t *testing.T, c feed.Cache, inboxMax, steps int, lo int64) {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(uint64(inboxMax), uint64(7+lo)))
	// id is the id at offset x from lo; 0 is no id, so it takes 1's place
	// (1 is then twice as likely: a repeat, which is fine).
	id := func(x int64) int64 {
		if lo+x == 0 {
			return 1
		}
		return lo + x
	}
	readers := []int64{1, 2, 3}
	models := map[int64]*model{}
	// Ids from a range three times the inbox, so that duplicates, late
	// ids and ids older than a full inbox are all common.
	span := int64(3*inboxMax + 10)
	randomIDs := func(max int) []int64 {
		ids := make([]int64, rng.IntN(max+1))
		for i := range ids {
			ids[i] = id(rng.Int64N(span))
		}
		return ids
	}
	var log []string // the steps so far, for a failure
	for step := range steps {
		r := readers[rng.IntN(len(readers))]
		m := models[r]
		var op string
		switch x := rng.IntN(100); {
		case x < 55:
			// Mostly the next new id, as a fan-out delivers them; else a
			// late or repeated one.
			next := id(rng.Int64N(span))
			if m != nil && len(m.ids) > 0 && x < 35 {
				next = min(m.ids[len(m.ids)-1]+1+rng.Int64N(3), lo+span+int64(step))
				if next == 0 {
					next = 1
				}
			}
			op = fmt.Sprintf("push(%v, %d)", readers, next)
			must(t, c.PushToInboxes(ctx, readers, next))
			for _, mm := range models {
				mm.insert([]int64{next}, inboxMax)
			}
		case x < 65:
			ids, mark := randomIDs(2*inboxMax), rng.IntN(4) == 0
			op = fmt.Sprintf("add(%d, %v, %v)", r, ids, mark)
			must(t, c.AddToInbox(ctx, r, ids, mark))
			if m != nil {
				m.insert(ids, inboxMax)
				m.complete = m.complete && !mark
			}
		case x < 80:
			// A few ids, as a lazy delete removes, or many, as an
			// unfollow does; some of them in the inbox.
			ids := randomIDs(4)
			if rng.IntN(4) == 0 {
				ids = randomIDs(2 * inboxMax)
			}
			for range 1 + len(ids)/2 {
				if m != nil && len(m.ids) > 0 {
					ids = append(ids, m.ids[rng.IntN(len(m.ids))])
				}
			}
			op = fmt.Sprintf("remove(%d, %v)", r, ids)
			must(t, c.RemoveFromInbox(ctx, r, ids))
			if m != nil {
				m.ids = slices.DeleteFunc(m.ids, func(id int64) bool { return slices.Contains(ids, id) })
			}
		case x < 96:
			ids, complete := randomIDs(inboxMax+inboxMax/2+2), rng.IntN(2) == 0
			op = fmt.Sprintf("fill(%d, %v, %v)", r, ids, complete)
			must(t, c.FillInbox(ctx, r, ids, complete, longTTL))
			m = &model{complete: complete}
			m.insert(ids, inboxMax)
			models[r] = m
		default:
			op = fmt.Sprintf("drop(%d)", r)
			must(t, c.DropInbox(ctx, r))
			delete(models, r)
		}
		log = append(log, op)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("after step %d, %s: %s\nsteps:\n  %s", step, op, fmt.Sprintf(format, args...),
				strings.Join(log[max(0, len(log)-20):], "\n  "))
		}
		for _, r := range readers {
			m := models[r]
			if got, err := c.InboxPage(ctx, r, 0, 10_000); err != nil {
				fail("InboxPage(%d): %v", r, err)
			} else if want := m.page(0, 10_000); !samePage(got, want) {
				fail("inbox %d = %s; want %s", r, fmtPage(got), fmtPage(want))
			}
			before, n := lo+rng.Int64N(span+int64(step)+1), rng.IntN(6) // 0 among them: from the newest
			if m != nil && len(m.ids) > 0 && rng.IntN(2) == 0 {
				before = m.ids[rng.IntN(len(m.ids))] // a cursor the reader saw
			}
			if got, err := c.InboxPage(ctx, r, before, n); err != nil {
				fail("InboxPage(%d, %d, %d): %v", r, before, n, err)
			} else if want := m.page(before, n); !samePage(got, want) {
				fail("InboxPage(%d, %d, %d) = %s; want %s", r, before, n, fmtPage(got), fmtPage(want))
			}
			newest, oldest, exists, err := c.InboxBounds(ctx, r)
			var wantNewest, wantOldest int64
			if m != nil && len(m.ids) > 0 {
				wantNewest, wantOldest = m.ids[len(m.ids)-1], m.ids[0]
			}
			if err != nil || newest != wantNewest || oldest != wantOldest || exists != (m != nil) {
				fail("InboxBounds(%d) = %d, %d, %v, %v; want %d, %d, %v",
					r, newest, oldest, exists, err, wantNewest, wantOldest, m != nil)
			}
		}
	}
}

func samePage(a, b feed.InboxPage) bool {
	return slices.Equal(a.IDs, b.IDs) && a.Exists == b.Exists && a.Complete == b.Complete
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func fill(t *testing.T, c feed.Cache, reader int64, ids []int64, complete bool) {
	t.Helper()
	if err := c.FillInbox(t.Context(), reader, ids, complete, longTTL); err != nil {
		t.Fatalf("FillInbox(%d, %v, %v): %v", reader, ids, complete, err)
	}
}

func push(t *testing.T, c feed.Cache, readers []int64, id int64) {
	t.Helper()
	if err := c.PushToInboxes(t.Context(), readers, id); err != nil {
		t.Fatalf("PushToInboxes(%v, %d): %v", readers, id, err)
	}
}

func add(t *testing.T, c feed.Cache, reader int64, ids []int64, markIncomplete bool) {
	t.Helper()
	if err := c.AddToInbox(t.Context(), reader, ids, markIncomplete); err != nil {
		t.Fatalf("AddToInbox(%d, %v, %v): %v", reader, ids, markIncomplete, err)
	}
}

func remove(t *testing.T, c feed.Cache, reader int64, ids []int64) {
	t.Helper()
	if err := c.RemoveFromInbox(t.Context(), reader, ids); err != nil {
		t.Fatalf("RemoveFromInbox(%d, %v): %v", reader, ids, err)
	}
}

func drop(t *testing.T, c feed.Cache, reader int64) {
	t.Helper()
	if err := c.DropInbox(t.Context(), reader); err != nil {
		t.Fatalf("DropInbox(%d): %v", reader, err)
	}
}

// checkInbox checks the whole of reader's inbox.
func checkInbox(t *testing.T, c feed.Cache, reader int64, want feed.InboxPage) {
	t.Helper()
	checkPage(t, c, reader, 0, 10_000, want)
}

func checkPage(t *testing.T, c feed.Cache, reader, before int64, n int, want feed.InboxPage) {
	t.Helper()
	got, err := c.InboxPage(t.Context(), reader, before, n)
	if err != nil {
		t.Fatalf("InboxPage(%d, %d, %d): %v", reader, before, n, err)
	}
	if !slices.Equal(got.IDs, want.IDs) || got.Exists != want.Exists || got.Complete != want.Complete {
		t.Errorf("InboxPage(%d, %d, %d) = %s; want %s", reader, before, n, fmtPage(got), fmtPage(want))
	}
}

func fmtPage(p feed.InboxPage) string {
	ids := fmt.Sprint(p.IDs)
	if len(p.IDs) > 12 {
		ids = fmt.Sprintf("%v … %v (%d ids)", p.IDs[:3], p.IDs[len(p.IDs)-3:], len(p.IDs))
	}
	return fmt.Sprintf("{ids %s exists %v complete %v}", ids, p.Exists, p.Complete)
}

func checkBounds(t *testing.T, c feed.Cache, reader, wantNewest, wantOldest int64, wantExists bool) {
	t.Helper()
	newest, oldest, exists, err := c.InboxBounds(t.Context(), reader)
	if err != nil {
		t.Fatalf("InboxBounds(%d): %v", reader, err)
	}
	if newest != wantNewest || oldest != wantOldest || exists != wantExists {
		t.Errorf("InboxBounds(%d) = %d, %d, %v; want %d, %d, %v",
			reader, newest, oldest, exists, wantNewest, wantOldest, wantExists)
	}
}

// checkPosts checks which of ids are cached.
func checkPosts(t *testing.T, c feed.Cache, ids, wantHits []int64) {
	t.Helper()
	got, err := c.CachedPosts(t.Context(), ids)
	if err != nil {
		t.Fatalf("CachedPosts(%v): %v", ids, err)
	}
	var hits []int64
	for id, p := range got {
		if p.ID != id {
			t.Errorf("CachedPosts(%v)[%d].ID = %d", ids, id, p.ID)
		}
		hits = append(hits, id)
	}
	slices.Sort(hits)
	if !slices.Equal(hits, wantHits) {
		t.Errorf("CachedPosts(%v) hit %v; want %v", ids, hits, wantHits)
	}
}

func checkPost(t *testing.T, got map[int64]feed.Post, want feed.Post) {
	t.Helper()
	p, ok := got[want.ID]
	switch {
	case !ok:
		t.Errorf("post %d missing from CachedPosts", want.ID)
	case p.ID != want.ID || p.AuthorID != want.AuthorID || p.Content != want.Content ||
		!p.CreatedAt.Equal(want.CreatedAt) || p.Deleted != want.Deleted ||
		p.Data != want.Data || !p.EditedAt.Equal(want.EditedAt) || p.ExternalID != want.ExternalID:
		t.Errorf("CachedPosts()[%d] = %+v; want %+v", want.ID, shortPost(p), shortPost(want))
	}
}

func shortPost(p feed.Post) feed.Post {
	if len(p.Content) > 40 {
		p.Content = fmt.Sprintf("%.40s… (%d bytes)", p.Content, len(p.Content))
	}
	if len(p.Data) > 40 {
		p.Data = fmt.Sprintf("%.40s… (%d bytes)", p.Data, len(p.Data))
	}
	return p
}

func checkGet(t *testing.T, c feed.Cache, key string, wantOK bool) {
	t.Helper()
	_, ok, err := c.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if ok != wantOK {
		t.Errorf("Get(%q) found = %v; want %v", key, ok, wantOK)
	}
}

func checkValue(t *testing.T, c feed.Cache, key, want string) {
	t.Helper()
	v, ok, err := c.Get(t.Context(), key)
	if err != nil || !ok || v != want {
		t.Errorf("Get(%q) = %q, %v, %v; want %q, true, nil", key, v, ok, err, want)
	}
}

func checkCAD(t *testing.T, c feed.Cache, key, value string, want bool) {
	t.Helper()
	ok, err := c.CompareAndDelete(t.Context(), key, value)
	if err != nil || ok != want {
		t.Errorf("CompareAndDelete(%q, %q) = %v, %v; want %v, nil", key, value, ok, err, want)
	}
}

func checkCAE(t *testing.T, c feed.Cache, key, value string, ttl time.Duration, want bool) {
	t.Helper()
	ok, err := c.CompareAndExpire(t.Context(), key, value, ttl)
	if err != nil || ok != want {
		t.Errorf("CompareAndExpire(%q, %q, %v) = %v, %v; want %v, nil", key, value, ttl, ok, err, want)
	}
}

func checkInvalid(t *testing.T, op string, err error) {
	t.Helper()
	if code := feed.ErrorCode(err); code != feed.EINVALID {
		t.Errorf("%s with an out-of-range id: error %v (code %q); want code %q", op, err, code, feed.EINVALID)
	}
}
