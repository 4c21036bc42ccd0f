package timeline

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/fanout"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/lru"
	"github.com/feedd/feedd/internal/sqlstore"
)

// ownEnv is a reader who follows a pushed author and (in hybrid mode) a
// pulled celebrity, with the real dispatcher delivering posts, on one
// model. Its inboxes are small, so that a feed pages past their end.
type ownEnv struct {
	mode                      feed.FanoutMode
	store                     *sqlstore.Store
	cache, lists              *inmemcache.Cache
	svc                       *testService
	disp                      *fanout.Dispatcher
	reader, author, celebrity int64
}

const ownInboxMax = 6

func newOwnEnv(t *testing.T, mode feed.FanoutMode) *ownEnv {
	t.Helper()
	e := &ownEnv{mode: mode, store: testStore(t)}
	e.open(t)
	ctx := t.Context()
	for _, p := range []*int64{&e.reader, &e.author, &e.celebrity} {
		u, err := e.svc.CreateUser(ctx, 0, "u", "")
		if err != nil {
			t.Fatal(err)
		}
		*p = u.ID
	}
	fan, _ := e.svc.CreateUser(ctx, 0, "fan", "")
	for _, f := range [][2]int64{{e.reader, e.author}, {e.reader, e.celebrity}, {fan.ID, e.celebrity}} {
		if err := e.svc.Follow(ctx, f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// open starts the service and the dispatcher on an empty cache: at first,
// and to stand for the cache being flushed.
func (e *ownEnv) open(t *testing.T) {
	t.Helper()
	e.cache = inmemcache.New(inmemcache.Options{})
	e.lists = inmemcache.New(inmemcache.Options{})
	cache, lists := e.cache, e.lists
	t.Cleanup(func() { cache.Close(); lists.Close() })
	var al AuthorLists
	var fl fanout.AuthorLists
	if e.mode == feed.ModeHybrid {
		al, fl = lists, lists
	}
	policy := feed.DeliveryPolicy{Mode: e.mode, PullThreshold: 2}
	// The smart refresh runs at most once an hour: what reaches an inbox
	// is the dispatcher's doing, unless a test opens the gate itself.
	e.svc = newWithWrites(slog.New(slog.DiscardHandler), Config{
		Policy: policy, InboxMax: ownInboxMax, AuthorListMax: ownInboxMax, RefreshInterval: time.Hour,
	}, e.store, cache, al, feed.NewIDGen(nil), nil, WithHotPosts(1000, time.Minute))
	e.disp, _ = fanout.New(slog.New(slog.DiscardHandler), fanout.Config{Policy: policy}, e.store, cache, fl, nil, nil)
}

// post publishes a post by author and hands its event to the dispatcher,
// as the relay would.
func (e *ownEnv) post(t *testing.T, author int64) int64 {
	t.Helper()
	id := publish(t, e.svc, author)
	e.dispatch(t, author, id)
	// A pulled author's new post reaches merged pages within listHeadTTL
	// (the process's copy of its list's head): the test does not wait.
	e.svc.heads = lru.New[int64, listHead](listHeads, listHeadTTL, nil)
	return id
}

func (e *ownEnv) dispatch(t *testing.T, author, id int64) {
	t.Helper()
	ev := feed.Event{Kind: feed.EventPostCreated, PostID: id, AuthorID: author}.Encode()
	if err := e.disp.Handle(t.Context(), feed.Delivery{Body: ev, Attempt: 1}); err != nil {
		t.Fatalf("dispatch post %d: %v", id, err)
	}
}

// inbox returns what reader's inbox holds, and whether it exists.
func (e *ownEnv) inbox(t *testing.T, reader int64) ([]int64, bool) {
	t.Helper()
	pg, err := e.cache.InboxPage(t.Context(), reader, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return pg.IDs, pg.Exists
}

func (e *ownEnv) wantFeed(t *testing.T, what string, reader int64, want []int64) {
	t.Helper()
	for _, n := range []int{1, 4, 100} {
		if got := feedPages(t, e.svc, reader, n); !slices.Equal(got, want) {
			t.Fatalf("%s, %d a page: feed %v; want %v", what, n, got, want)
		}
	}
	if n, capped, err := e.svc.Unread(t.Context(), reader, 0, 1000); err != nil || n != len(want) || capped {
		t.Fatalf("%s: unread with no marker %d (capped %v), %v; want %d, as many as the feed holds", what, n, capped, err, len(want))
	}
	if len(want) > 2 {
		if n, _, err := e.svc.Unread(t.Context(), reader, want[2], 1000); err != nil || n != 2 {
			t.Fatalf("%s: unread above the feed's third post %d, %v; want 2", what, n, err)
		}
	}
}

// newestFirst returns ids sorted newest first.
func newestFirst(ids ...[]int64) []int64 {
	var all []int64
	for _, l := range ids {
		all = append(all, l...)
	}
	slices.Sort(all)
	slices.Reverse(all)
	return all
}

// TestOwnPostsInFeed: on every model a reader's own posts are on its home
// feed, in id order with its followees' and behind the one cursor: on the
// first page and later ones, past the end of the inbox (read on from
// SQL), after the dispatcher delivers them into an inbox that exists,
// after the cache is lost (a rebuild), through the smart refresh, and
// with lazy delete; and the unread count counts them the same way. A
// pulled author reading its own feed sees its own posts, merged from its
// author list. Nobody else's feed gets them unless following.
func TestOwnPostsInFeed(t *testing.T) {
	for _, mode := range []feed.FanoutMode{feed.ModePush, feed.ModePull, feed.ModeHybrid} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := t.Context()
			e := newOwnEnv(t, mode)
			var own, others, celeb []int64
			for i := range 12 {
				switch i % 3 {
				case 0:
					own = append(own, e.post(t, e.reader))
				case 1:
					others = append(others, e.post(t, e.author))
				default:
					celeb = append(celeb, e.post(t, e.celebrity))
				}
			}
			// The first read finds no inbox and rebuilds it: 12 posts, an
			// inbox of 6, so later pages read on from SQL.
			e.wantFeed(t, "rebuilt", e.reader, newestFirst(own, others, celeb))
			e.wantFeed(t, "the celebrity's own feed", e.celebrity, newestFirst(celeb))
			e.wantFeed(t, "the author's own feed", e.author, newestFirst(others))

			// Pushed into the inbox that now exists: the dispatcher
			// delivers the reader's new post to the reader, as to a
			// follower. A pulled author's own post stays in its list.
			mine := e.post(t, e.reader)
			own = append(own, mine)
			ids, exists := e.inbox(t, e.reader)
			if pushed := mode != feed.ModePull; exists != pushed || slices.Contains(ids, mine) != pushed {
				t.Fatalf("reader's inbox after its own post: %v (exists %v); want the post in it: %v", ids, exists, pushed)
			}
			celebPost := e.post(t, e.celebrity)
			celeb = append(celeb, celebPost)
			if ids, _ := e.inbox(t, e.celebrity); mode == feed.ModeHybrid && slices.Contains(ids, celebPost) {
				t.Fatalf("pulled celebrity's inbox %v holds its own post: it belongs in its author list", ids)
			}
			e.wantFeed(t, "pushed", e.reader, newestFirst(own, others, celeb))
			e.wantFeed(t, "the celebrity's own feed, pushed", e.celebrity, newestFirst(celeb))

			// The smart refresh: a post whose fan-out has not run yet is
			// found by the first page once the refresh gate opens.
			late := publish(t, e.svc, e.reader)
			own = append(own, late)
			if err := e.cache.Set(ctx, refreshKey(e.reader), "0", time.Millisecond); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			e.svc.gates.Put(e.reader, time.Time{})
			pg, err := e.svc.Feed(ctx, e.reader, 0, 3)
			posts := pg.Posts
			if err != nil || len(posts) == 0 || posts[0].ID != late {
				t.Fatalf("first page after a refresh: %v, %v; want the reader's undelivered post %d first", posts, err, late)
			}
			if ids, _ := e.inbox(t, e.reader); mode != feed.ModePull && !slices.Contains(ids, late) {
				t.Fatalf("inbox after the refresh %v; want it to hold %d", ids, late)
			}
			e.dispatch(t, e.reader, late) // the fan-out, late: no duplicate
			e.wantFeed(t, "refreshed", e.reader, newestFirst(own, others, celeb))

			// Lazy delete: a deleted own post in the inbox is skipped and
			// leaves the inbox.
			if err := e.svc.DeletePost(ctx, e.reader, mine); err != nil {
				t.Fatal(err)
			}
			own = slices.DeleteFunc(own, func(id int64) bool { return id == mine })
			e.wantFeed(t, "after a delete", e.reader, newestFirst(own, others, celeb))
			if ids, _ := e.inbox(t, e.reader); slices.Contains(ids, mine) {
				t.Fatalf("inbox after reading past the deleted post: %v; want %d gone", ids, mine)
			}

			// The cache is lost: every inbox and list is rebuilt from SQL.
			e.open(t)
			e.wantFeed(t, "after the cache was lost", e.reader, newestFirst(own, others, celeb))
			e.wantFeed(t, "the celebrity's own feed after the cache was lost", e.celebrity, newestFirst(celeb))

			// The follow counts do not count the reader as its own
			// follower.
			u, err := e.svc.User(ctx, e.reader)
			if err != nil || u.FollowerCount != 0 || u.FollowingCount != 2 {
				t.Fatalf("reader: %+v, %v; want 0 followers, 2 following", u, err)
			}
			// Nobody else sees the reader's posts without following it.
			if got := feedPages(t, e.svc, e.author, 100); !slices.Equal(got, newestFirst(others)) {
				t.Fatalf("the author's feed %v; want only its own posts %v", got, newestFirst(others))
			}
			// A reader cannot mute or block itself out of its own feed.
			if err := e.svc.Mute(ctx, e.reader, e.reader); feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("muting oneself: %v; want EINVALID", err)
			}
			if err := e.svc.Block(ctx, e.reader, e.reader); feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("blocking oneself: %v; want EINVALID", err)
			}
		})
	}
}
