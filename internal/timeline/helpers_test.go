package timeline

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// testStore opens a migrated SQLite store in t's temporary directory,
// closed when t ends.
func testStore(t *testing.T) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "feedd.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

// publish publishes a post by author and returns its id.
func publish(t *testing.T, svc *Service, author int64) int64 {
	t.Helper()
	p, err := svc.Publish(context.Background(), author, feed.Draft{Content: "a post"}, feed.Idempotency{})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// sees reports whether post is on the first page of reader's feed, read
// through svc.
func sees(t *testing.T, svc *Service, reader, post int64) bool {
	t.Helper()
	pg, err := svc.Feed(context.Background(), reader, 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(pg.Posts, func(p feed.Post) bool { return p.ID == post })
}

// feedPages pages through reader's whole feed through svc, n posts a page,
// and returns the ids in order.
func feedPages(t *testing.T, svc *Service, reader int64, n int) []int64 {
	t.Helper()
	var ids []int64
	for before := int64(0); ; {
		pg, err := svc.Feed(t.Context(), reader, before, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pg.Posts {
			ids = append(ids, p.ID)
		}
		if !pg.More() {
			return ids
		}
		before = pg.Next
	}
}
