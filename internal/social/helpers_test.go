package social

import (
	"context"
	"path/filepath"
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

// noTimeline is a read engine with no caches to keep: for tests of the
// writes' own state (token standings, idempotency keys).
type noTimeline struct{}

func (noTimeline) Followed(context.Context, int64, int64, bool)                                {}
func (noTimeline) ExclusiveChanged(context.Context, int64)                                     {}
func (noTimeline) ListChanged(int64, int64)                                                    {}
func (noTimeline) Hidden(context.Context, int64) (feed.Hidden, error)                          { return feed.Hidden{}, nil }
func (noTimeline) Unfollowed(context.Context, int64, int64, bool)                              {}
func (noTimeline) BatchFollowed(context.Context, []feed.Edge, []string, []feed.Edge, []string) {}
func (noTimeline) Muted(context.Context, int64, int64)                                         {}
func (noTimeline) Unmuted(context.Context, int64)                                              {}
func (noTimeline) Blocked(context.Context, int64, int64)                                       {}
func (noTimeline) Unblocked(context.Context, int64, int64)                                     {}
func (noTimeline) PostCreated(feed.Post)                                                       {}
func (noTimeline) PostEdited(context.Context, feed.Post)                                       {}
func (noTimeline) PostDeleted(context.Context, int64, int64)                                   {}
func (noTimeline) UserDeleted(int64)                                                           {}
func (noTimeline) SettingsChanged(context.Context, int64)                                      {}
func (noTimeline) CacheFailed(string, error)                                                   {}
