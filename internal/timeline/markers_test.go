package timeline

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
)

// unreadEnv is a reader following an author whose posts are pushed and a
// celebrity whose posts are pulled in hybrid mode (two followers reach the
// threshold), on one mode.
type unreadEnv struct {
	svc                       *testService
	cache                     *inmemcache.Cache
	reader, author, celebrity int64
	stranger                  int64
}

func newUnreadEnv(t *testing.T, mode feed.FanoutMode) *unreadEnv {
	t.Helper()
	ctx := t.Context()
	cache := inmemcache.New(inmemcache.Options{})
	lists := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { cache.Close(); lists.Close() })
	var al AuthorLists
	if mode == feed.ModeHybrid {
		al = lists
	}
	svc := newWithWrites(slog.New(slog.DiscardHandler), Config{
		Policy:          feed.DeliveryPolicy{Mode: mode, PullThreshold: 2},
		RefreshInterval: time.Nanosecond, // every first page refreshes: no fan-out runs here
	}, testStore(t), cache, al, feed.NewIDGen(nil), nil, WithHotPosts(1000, time.Minute))
	e := &unreadEnv{svc: svc, cache: cache}
	for _, p := range []*int64{&e.reader, &e.author, &e.celebrity, &e.stranger} {
		u, err := svc.CreateUser(ctx, 0, "u", "")
		if err != nil {
			t.Fatal(err)
		}
		*p = u.ID
	}
	fan, _ := svc.CreateUser(ctx, 0, "fan", "")
	for _, f := range [][2]int64{{e.reader, e.author}, {e.reader, e.celebrity}, {fan.ID, e.celebrity}} {
		if err := svc.Follow(ctx, f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// feedIDs pages through reader's whole feed.
func (e *unreadEnv) feedIDs(t *testing.T) []int64 {
	t.Helper()
	return feedPages(t, e.svc, e.reader, 7)
}

func (e *unreadEnv) unread(t *testing.T, after int64, limit int) (int, bool) {
	t.Helper()
	n, capped, err := e.svc.Unread(t.Context(), e.reader, after, limit)
	if err != nil {
		t.Fatalf("Unread(after %d, limit %d): %v", after, limit, err)
	}
	return n, capped
}

// TestUnreadCounts: on every model the count is exactly the feed's live
// posts above the marker, pushed and pulled authors and the reader's own
// alike, deleted posts and strangers' left out, up to the cap.
func TestUnreadCounts(t *testing.T) {
	for _, mode := range []feed.FanoutMode{feed.ModePush, feed.ModePull, feed.ModeHybrid} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := t.Context()
			e := newUnreadEnv(t, mode)
			// More than a round's batch, so that counts take several rounds.
			var posts, authors []int64
			for i := range 2*unreadBatch + 10 {
				who := e.author
				if i%3 == 0 {
					who = e.celebrity
				}
				if i%17 == 0 {
					who = e.reader // the reader's own posts are on its feed
					publish(t, e.svc, e.stranger)
				}
				posts = append(posts, publish(t, e.svc, who))
				authors = append(authors, who)
			}
			if n, capped := e.unread(t, 0, 1000); n != len(posts) || capped {
				t.Fatalf("unread with no marker: got %d (capped %v); want %d", n, capped, len(posts))
			}
			// Deleted posts, pushed and pulled, some already cached.
			for _, i := range []int{0, 3, 4, 50, 51, 99, len(posts) - 1} {
				if err := e.svc.DeletePost(ctx, authors[i], posts[i]); err != nil {
					t.Fatal(err)
				}
			}
			ids := e.feedIDs(t)
			if len(ids) != len(posts)-7 {
				t.Fatalf("the feed has %d posts; want %d", len(ids), len(posts)-7)
			}
			// Every position: the ids in the feed, and deleted ones.
			for i, id := range ids {
				if n, capped := e.unread(t, id, 1000); n != i || capped {
					t.Fatalf("unread above the feed's post #%d: got %d (capped %v); want %d", i, n, capped, i)
				}
				if n, capped := e.unread(t, id-1, 1000); n != i+1 || capped {
					t.Fatalf("unread above the feed's post #%d, minus one: got %d (capped %v); want %d", i, n, capped, i+1)
				}
			}
			if n, _ := e.unread(t, posts[50], 1000); n != slices.IndexFunc(ids, func(id int64) bool { return id < posts[50] }) {
				t.Fatalf("unread above a deleted post: got %d", n)
			}
			// The cap.
			total := len(ids)
			for _, c := range []struct {
				limit  int
				want   int
				capped bool
			}{{total, total, false}, {total - 1, total - 1, true}, {1, 1, true}, {unreadBatch, unreadBatch, true}} {
				if n, capped := e.unread(t, 0, c.limit); n != c.want || capped != c.capped {
					t.Fatalf("unread with cap %d: got %d (capped %v); want %d (capped %v)", c.limit, n, capped, c.want, c.capped)
				}
			}
		})
	}
}

// TestMarkers: the marker moves only forward, takes any post (a deleted
// one too) and nothing else, and outlives the cache.
func TestMarkers(t *testing.T) {
	ctx := t.Context()
	e := newUnreadEnv(t, feed.ModeHybrid)
	var posts []int64
	for i := range 6 {
		who := e.author
		if i%2 == 0 {
			who = e.celebrity
		}
		posts = append(posts, publish(t, e.svc, who))
	}
	m, err := e.svc.Marker(ctx, e.reader)
	if err != nil || m.LastReadID != 0 || !m.UpdatedAt.IsZero() || m.Unread != 6 {
		t.Fatalf("Marker, none set: got %+v, %v; want none and 6 unread", m, err)
	}
	check := func(what string, m feed.Marker, err error, wantID int64, wantUnread int) {
		t.Helper()
		if err != nil || m.LastReadID != wantID || m.Unread != wantUnread || m.UpdatedAt.IsZero() {
			t.Fatalf("%s: got %+v, %v; want last read %d, %d unread", what, m, err, wantID, wantUnread)
		}
	}
	m, err = e.svc.SetMarker(ctx, e.reader, posts[3])
	check("SetMarker(post 3)", m, err, posts[3], 2)
	m, err = e.svc.SetMarker(ctx, e.reader, posts[1])
	check("SetMarker(post 1), back", m, err, posts[3], 2)
	m, err = e.svc.Marker(ctx, e.reader)
	check("Marker after going back", m, err, posts[3], 2)

	if err := e.svc.DeletePost(ctx, e.author, posts[5]); err != nil {
		t.Fatal(err)
	}
	m, err = e.svc.SetMarker(ctx, e.reader, posts[5])
	check("SetMarker(deleted post 5)", m, err, posts[5], 0)

	for _, bad := range []int64{0, -1, posts[5] + 1, feed.MaxID + 1} {
		if _, err := e.svc.SetMarker(ctx, e.reader, bad); feed.ErrorCode(err) != feed.EINVALID {
			t.Fatalf("SetMarker(%d), not a post: got %v; want EINVALID", bad, err)
		}
	}
	// The cache forgets the marker: SQL still has it.
	if err := e.cache.Set(ctx, markerKey(e.reader), "garbage", time.Hour); err != nil {
		t.Fatal(err)
	}
	m, err = e.svc.Marker(ctx, e.reader)
	check("Marker with its cache copy unreadable", m, err, posts[5], 0)
}

// TestMarkerBlockedAuthor: a post of a user blocked either way is, to
// SetMarker, an unknown id (EINVALID with the same sentence), so the
// answer does not tell that it exists; once the block is lifted it is a
// post again.
func TestMarkerBlockedAuthor(t *testing.T) {
	ctx := t.Context()
	e := newUnreadEnv(t, feed.ModeHybrid)
	post := publish(t, e.svc, e.stranger)
	_, unknown := e.svc.SetMarker(ctx, e.reader, post+1)
	if feed.ErrorCode(unknown) != feed.EINVALID {
		t.Fatalf("SetMarker(unknown id): %v; want EINVALID", unknown)
	}
	want := strings.Replace(unknown.Error(), feed.FormatID(post+1), feed.FormatID(post), 1)
	for _, b := range [][2]int64{{e.reader, e.stranger}, {e.stranger, e.reader}} {
		if err := e.svc.Block(ctx, b[0], b[1]); err != nil {
			t.Fatal(err)
		}
		_, err := e.svc.SetMarker(ctx, e.reader, post)
		if feed.ErrorCode(err) != feed.EINVALID || err.Error() != want {
			t.Fatalf("SetMarker(post of a user blocked, %d blocks %d): %v; want %q, as for an unknown id", b[0], b[1], err, want)
		}
		if err := e.svc.Unblock(ctx, b[0], b[1]); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := e.svc.SetMarker(ctx, e.reader, post); err != nil || m.LastReadID != post {
		t.Fatalf("SetMarker(post) once unblocked: %+v, %v; want it set", m, err)
	}
}

// TestMarkerCacheRace: a writer that read SQL before another's write and
// sets the cache after it does not leave the older marker in the cache.
func TestMarkerCacheRace(t *testing.T) {
	ctx := t.Context()
	e := newUnreadEnv(t, feed.ModePush)
	p1, p2 := publish(t, e.svc, e.author), publish(t, e.svc, e.author)
	old, err := e.svc.store.SetMarker(ctx, e.reader, p1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.SetMarker(ctx, e.reader, p2); err != nil {
		t.Fatal(err)
	}
	// The slower writer arrives with what it read before.
	e.svc.cacheMarker(ctx, e.reader, old)
	m, err := e.svc.Marker(ctx, e.reader)
	if err != nil || m.LastReadID != p2 {
		t.Fatalf("Marker after a late cache write: got %d, %v; want %d", m.LastReadID, err, p2)
	}
}
