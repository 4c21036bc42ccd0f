package timeline

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
)

func TestPublishAndEditData(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newTestService(t, Config{}, WithHotPosts(100, time.Minute))
	author, _ := svc.CreateUser(ctx, 0, "a", "")
	other, _ := svc.CreateUser(ctx, 0, "b", "")

	// Data comes compact from the API, which checks drafts and edits
	// (feed.CheckContent, CheckData, CheckExternalID: httpapi's postdata
	// and externalid tests); the service stores it as it is.
	p, err := svc.Publish(ctx, author.ID, feed.Draft{Content: "hi", Data: `{"a":[1,2]}`}, feed.Idempotency{})
	if err != nil || p.Data != `{"a":[1,2]}` {
		t.Fatalf("Publish with data = %+v, %v; want its data", p, err)
	}
	content := func(s string) *string { return &s }
	if _, err := svc.EditPost(ctx, other.ID, p.ID, feed.PostEdit{Content: content("mine")}); feed.ErrorCode(err) != feed.EFORBIDDEN {
		t.Errorf("EditPost by another user = %v; want %s", err, feed.EFORBIDDEN)
	}

	// Read once, so the post is in the caches, then edit: this process
	// shows the edit at once.
	if _, err := svc.Post(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	edited, err := svc.EditPost(ctx, author.ID, p.ID, feed.PostEdit{Content: content("hi again"), SetData: true, Data: `{"b":true}`})
	if err != nil || edited.Content != "hi again" || edited.Data != `{"b":true}` || edited.EditedAt.IsZero() || edited.ID != p.ID {
		t.Fatalf("EditPost = %+v, %v", edited, err)
	}
	if got, err := svc.Post(ctx, p.ID); err != nil || got != edited {
		t.Fatalf("Post after the edit = %+v, %v; want %+v", got, err, edited)
	}
	if err := svc.DeletePost(ctx, author.ID, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.EditPost(ctx, author.ID, p.ID, feed.PostEdit{Content: content("back")}); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Errorf("EditPost of a deleted post = %v; want %s", err, feed.ENOTFOUND)
	}
}

// heldStore holds every SQL load of posts, after the read and before it
// returns, until release is closed: a reader that read a post just before
// an edit committed and fills the caches just after.
type heldStore struct {
	fullStore
	read    chan struct{} // closed after the first load read SQL
	once    sync.Once
	release chan struct{}
}

func (h *heldStore) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	posts, err := h.fullStore.Posts(ctx, ids)
	h.once.Do(func() { close(h.read) })
	<-h.release
	return posts, err
}

// TestEditRacingFill checks that a reader whose cache fill carries the
// copy it read before an edit, and arrives after the edit's own cache
// write, leaves the edit in the shared cache and in the editing process's
// hot posts. Two services on one store and one cache stand for two
// processes.
func TestEditRacingFill(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	cache := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { cache.Close() })
	cfg := Config{Policy: feed.DeliveryPolicy{Mode: feed.ModePush}}
	newSvc := func(store fullStore) *testService {
		return newWithWrites(slog.New(slog.DiscardHandler), cfg, store, cache, nil, feed.NewIDGen(nil), nil, WithHotPosts(100, time.Minute))
	}
	held := &heldStore{fullStore: st, read: make(chan struct{}), release: make(chan struct{})}
	reader, editor := newSvc(held), newSvc(st)

	author, _ := editor.CreateUser(ctx, 0, "a", "")
	for i, sameProcess := range []bool{false, true} {
		id := int64(1<<40 + i)
		if _, _, err := st.CreatePost(ctx, feed.Post{ID: id, AuthorID: author.ID, Content: "old", CreatedAt: feed.IDTime(id)}, feed.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		edit := editor
		if sameProcess {
			edit = reader
		}
		held.read, held.release, held.once = make(chan struct{}), make(chan struct{}), sync.Once{}
		done := make(chan feed.Post)
		go func() {
			got, err := reader.Post(ctx, id)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		<-held.read // the reader has the old row
		content := "edited while a reader filled"
		edited, err := edit.EditPost(ctx, author.ID, id, feed.PostEdit{Content: &content})
		if err != nil {
			t.Fatal(err)
		}
		close(held.release) // its fill comes after the edit's cache write
		if got := <-done; got.Content != "old" {
			t.Fatalf("the racing read returned %q; want the old row it read", got.Content)
		}
		cached, err := cache.CachedPosts(ctx, []int64{id})
		if err != nil || cached[id] != edited {
			t.Errorf("same process %v: cached post = %+v, %v; want the edit %+v", sameProcess, cached[id], err, edited)
		}
		if got, err := edit.Post(ctx, id); err != nil || got != edited {
			t.Errorf("same process %v: the editing process shows %+v, %v; want the edit", sameProcess, got, err)
		}
	}
}
