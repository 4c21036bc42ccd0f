package sqlstore

import (
	"maps"
	"slices"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

func testStaleFeeds(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	stale := func() []feed.StaleFeed {
		t.Helper()
		fs, err := s.StaleFeeds(ctx, 10)
		if err != nil {
			t.Fatalf("StaleFeeds: %v", err)
		}
		return fs
	}
	mark := func(user int64) {
		t.Helper()
		if err := s.MarkFeedStale(ctx, user); err != nil {
			t.Fatalf("MarkFeedStale(%d): %v", user, err)
		}
	}
	if fs := stale(); len(fs) != 0 {
		t.Fatalf("StaleFeeds of a new store = %v; want none", fs)
	}
	mark(7)
	mark(3)
	mark(7) // a second miss of 7
	seen := stale()
	if want := []feed.StaleFeed{{User: 3, Mark: 1}, {User: 7, Mark: 2}}; !slices.Equal(seen, want) {
		t.Fatalf("StaleFeeds = %v; want %v", seen, want)
	}
	if fs, err := s.StaleFeeds(ctx, 1); err != nil || !slices.Equal(fs, seen[:1]) {
		t.Fatalf("StaleFeeds(1) = %v, %v; want %v", fs, err, seen[:1])
	}
	// 7 misses a change again after the sweep read it: its record stays.
	mark(7)
	if err := s.ClearStaleFeeds(ctx, seen); err != nil {
		t.Fatalf("ClearStaleFeeds: %v", err)
	}
	if fs, want := stale(), []feed.StaleFeed{{User: 7, Mark: 3}}; !slices.Equal(fs, want) {
		t.Fatalf("StaleFeeds after clearing what was seen = %v; want %v", fs, want)
	}
	if err := s.ClearStaleFeeds(ctx, stale()); err != nil {
		t.Fatalf("ClearStaleFeeds: %v", err)
	}
	if fs := stale(); len(fs) != 0 {
		t.Fatalf("StaleFeeds after clearing all = %v; want none", fs)
	}
	// The sweep's statements are counted under its job as well (on MySQL,
	// whose statements are counted): six SELECTs by StaleFeeds, three
	// DELETEs by ClearStaleFeeds; MarkFeedStale's INSERTs are a request's.
	if e.backend != "mysql" {
		return
	}
	got := map[string]int64{}
	for _, c := range s.JobStatements() {
		got[c.Pool+"/"+c.Job+"/"+c.Verb] += c.N
	}
	if want := map[string]int64{"primary/stale_sweep/select": 6, "primary/stale_sweep/delete": 3}; !maps.Equal(got, want) {
		t.Errorf("JobStatements = %v; want %v", got, want)
	}
}
