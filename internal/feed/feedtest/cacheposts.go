package feedtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

func cachePosts(t *testing.T, newCache newCacheFunc) {
	ctx := t.Context()
	c := newCache(t, 100)
	posts := []feed.Post{
		{ID: 101, AuthorID: 7, Content: "hello, 世界 \x00 \"quoted\"", CreatedAt: time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)},
		{ID: 102, AuthorID: 8, CreatedAt: time.Date(2026, 3, 4, 5, 6, 8, 0, time.FixedZone("CET", 3600)), Deleted: true},
		{ID: feed.MaxID, AuthorID: feed.MaxID, Content: strings.Repeat("ü", feed.MaxContentRunes)},
		// A reply keeps its parent and the parent's author, which the
		// home feed's reply rule reads from the posts a page holds.
		{ID: 103, AuthorID: 9, Content: "a reply", CreatedAt: time.Date(2026, 3, 4, 5, 6, 9, 0, time.UTC), InReplyToID: 101, InReplyToAuthorID: 7},
		{ID: 104, AuthorID: 9, CreatedAt: time.Date(2026, 3, 4, 5, 6, 9, 0, time.UTC), InReplyToID: -(1 << 40), InReplyToAuthorID: 7, ExternalID: "x", Data: `{}`},
		// A repost keeps its original and the original's author, which
		// the home feed's repost rules read from the posts a page holds.
		{ID: 105, AuthorID: 9, CreatedAt: time.Date(2026, 3, 4, 5, 6, 10, 0, time.UTC), RepostOfID: 101, RepostOfAuthorID: 7},
		{ID: 106, AuthorID: 9, CreatedAt: time.Date(2026, 3, 4, 5, 6, 10, 0, time.UTC), InReplyToID: 101, InReplyToAuthorID: 7, RepostOfID: 103, RepostOfAuthorID: 9, Data: `{}`},
	}

	got, err := c.CachedPosts(ctx, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("CachedPosts(nil) = %v, %v; want empty, nil", got, err)
	}
	must(t, c.CachePosts(ctx, nil, longTTL))
	must(t, c.CachePosts(ctx, posts, longTTL))

	got, err = c.CachedPosts(ctx, []int64{101, 999, 102, feed.MaxID, 101, 103, 104, 105, 106})
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
}

func cachePostEdits(t *testing.T, newCache newCacheFunc) {
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
}

func cachePostVersions(t *testing.T, newCache newCacheFunc) {
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
}

func cacheKV(t *testing.T, newCache newCacheFunc) {
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

	// GetEx reads and keeps a value; a missing key stays missing.
	must(t, c.Set(ctx, "snapshot", "ids", 2*time.Second))
	if v, ok, err := c.GetEx(ctx, "snapshot", longTTL); err != nil || !ok || v != "ids" {
		t.Fatalf(`GetEx("snapshot") = %q, %v, %v; want "ids", true, nil`, v, ok, err)
	}
	if v, ok, err := c.GetEx(ctx, "no-snapshot", longTTL); err != nil || ok || v != "" {
		t.Fatalf(`GetEx("no-snapshot") = %q, %v, %v; want "", false, nil`, v, ok, err)
	}
	checkGet(t, c, "no-snapshot", false)
	// ...and its ttl starts again: the value outlives the first one.
	must(t, c.Set(ctx, "kept", "ids", time.Second))
	if _, ok, err := c.GetEx(ctx, "kept", longTTL); err != nil || !ok {
		t.Fatalf(`GetEx("kept") = %v, %v; want true, nil`, ok, err)
	}
	time.Sleep(1200 * time.Millisecond)
	checkValue(t, c, "kept", "ids")

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
}
