package timeline

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/social"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/prometheus/client_golang/prometheus"
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

// testService is the read engine with the writes on top, wired as
// cmd/feedd wires them (the writes through the same SQL breaker, telling
// the read engine what they changed): the tests build their fixtures
// through the writes.
type testService struct {
	*Service
	*writes
}

type writes = social.Service

// fullStore is what the two services need of SQL together.
type fullStore interface {
	Store
	social.Store
}

// newWithWrites is New, with the writes on top; ids draws the writes'
// post and user ids.
func newWithWrites(logger *slog.Logger, cfg Config, store fullStore, cache feed.Cache, lists AuthorLists, ids *feed.IDGen, reg prometheus.Registerer, opts ...Option) *testService {
	svc := New(logger, cfg, store, cache, lists, reg, opts...)
	w := social.New(logger, social.Config{Policy: svc.cfg.Policy},
		store, cache, svc, ids, reg, social.WithBreaker(svc.SQLBreaker()))
	return &testService{svc, w}
}

// publish publishes a post by author and returns its id.
func publish(t *testing.T, svc *testService, author int64) int64 {
	t.Helper()
	p, err := svc.Publish(context.Background(), author, feed.Draft{Content: "a post"}, feed.Idempotency{})
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// sees reports whether post is on the first page of reader's feed, read
// through svc.
func sees(t *testing.T, svc *testService, reader, post int64) bool {
	t.Helper()
	pg, err := svc.Feed(context.Background(), reader, 0, 20)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(pg.Posts, func(p feed.Post) bool { return p.ID == post })
}

// feedPages pages through reader's whole feed through svc, n posts a page,
// and returns the ids in order.
func feedPages(t *testing.T, svc *testService, reader int64, n int) []int64 {
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
