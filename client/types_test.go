package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/feedd/feedd/client"
)

func TestIDJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want client.ID
	}{{`"42"`, 42}, {`"-245220619350666"`, -245220619350666}, {`17`, 17}, {`-3`, -3}, {`null`, 0}} {
		var id client.ID
		if err := json.Unmarshal([]byte(tc.in), &id); err != nil || id != tc.want {
			t.Errorf("unmarshal %s = %d, %v; want %d", tc.in, id, err, tc.want)
		}
	}
	for _, bad := range []string{`"4x"`, `""`, `"1.5"`, `true`, `"99999999999999999999"`} {
		var id client.ID
		if err := json.Unmarshal([]byte(bad), &id); err == nil {
			t.Errorf("unmarshal %s = %d; want an error", bad, id)
		}
	}
	b, err := json.Marshal(struct {
		ID client.ID `json:"id"`
	}{-7})
	if err != nil || string(b) != `{"id":"-7"}` {
		t.Fatalf("marshal = %s, %v; want the id as a decimal string", b, err)
	}
	if id, err := client.ParseID("-12"); err != nil || id != -12 || id.String() != "-12" {
		t.Fatalf("ParseID(-12) = %d, %v", id, err)
	}
}

// TestFeedPageIntoForgets checks that a reused page keeps nothing of the
// page before: a field the new post lacks is not the old post's.
func TestFeedPageIntoForgets(t *testing.T) {
	pages := []string{
		`{"items":[{"id":"2","author_id":"1","content":"a","data":{"x":1},"created_at":"2026-01-01T00:00:00.000Z","edited_at":"2026-01-02T00:00:00.000Z","like_count":3,"liked_by_me":true}],"next_cursor":"c1","degraded":true}`,
		`{"items":[{"id":"1","author_id":"1","content":"b","created_at":"2026-01-01T00:00:00.000Z"}],"next_cursor":null}`,
	}
	var n atomic.Int32
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer(200, pages[n.Add(1)-1])(w)
	}), fast)
	var pg client.Page[client.Post]
	if err := c.FeedPageInto(context.Background(), client.PageParams{}, &pg); err != nil || pg.Items[0].EditedAt == nil || !pg.Degraded {
		t.Fatalf("first page = %+v, %v", pg, err)
	}
	if err := c.FeedPageInto(context.Background(), client.PageParams{Cursor: pg.NextCursor}, &pg); err != nil {
		t.Fatal(err)
	}
	p := pg.Items[0]
	if len(pg.Items) != 1 || p.Content != "b" || p.EditedAt != nil || p.Data != nil || p.LikeCount != nil || p.LikedByMe != nil || pg.NextCursor != "" || pg.Degraded {
		t.Fatalf("second page = %+v (post %+v); want nothing of the first", pg, p)
	}
}
