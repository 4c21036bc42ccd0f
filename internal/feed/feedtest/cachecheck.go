package feedtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

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
		p.Data != want.Data || !p.EditedAt.Equal(want.EditedAt) || p.ExternalID != want.ExternalID ||
		p.InReplyToID != want.InReplyToID || p.InReplyToAuthorID != want.InReplyToAuthorID ||
		p.RepostOfID != want.RepostOfID || p.RepostOfAuthorID != want.RepostOfAuthorID:
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
