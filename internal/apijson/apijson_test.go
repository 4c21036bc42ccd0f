package apijson

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestTime: the hand-written formatter writes what Format writes,
// whatever the zone, at the edges of its range and beyond them.
func TestTime(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	times := []time.Time{
		{},
		time.Date(2026, 11, 22, 7, 33, 43, 120_000_000, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 1, 1, 0, 0, 0, 999_999, east), // the day before, in UTC
		time.Date(2024, 2, 29, 12, 0, 0, 1_000_000, time.Local),
		time.Unix(0, 0),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).In(east))
	}
	for _, tm := range times {
		if got, want := Time(tm), tm.UTC().Format(feed.TimeFormat); got != want {
			t.Errorf("Time(%v) = %q; want %q", tm, got, want)
		}
	}
}

// TestPostsPageHidesDeleted: a stale deleted post from the service never
// reaches a client, and the cursor still resumes after it.
func TestPostsPageHidesDeleted(t *testing.T) {
	posts := []feed.Post{{ID: 9, AuthorID: 1, Content: "a"}, {ID: 8, AuthorID: 1, Content: "b", Deleted: true}}
	pg := NewPostsPage(posts, true, nil)
	if len(pg.Items) != 1 || pg.Items[0].ID != "9" {
		t.Errorf("items = %v; want only post 9", pg.Items)
	}
	if pg.NextCursor == nil || *pg.NextCursor != feed.EncodeCursor(feed.CursorFeed, 8) {
		t.Errorf("next_cursor = %v; want the cursor of post 8", pg.NextCursor)
	}
	if pg := NewPostsPage(nil, true, nil); pg.NextCursor != nil || pg.Items == nil {
		t.Errorf("empty page with more = %+v; want [] and a null cursor", pg)
	}
}
