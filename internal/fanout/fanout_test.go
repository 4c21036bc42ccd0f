package fanout

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// slowStore answers follower reads after a pause and records how many ran
// at once.
type slowStore struct {
	Store
	running, most atomic.Int32
}

func (s *slowStore) FollowersInRange(ctx context.Context, user, after, upto int64) ([]int64, error) {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(20 * time.Millisecond)
	return []int64{after + 1}, nil
}

type nopCache struct{ Cache }

func (nopCache) PushToInboxes(context.Context, []int64, int64) error { return nil }

// TestSQLReadsBound checks that however many tasks a work process runs at
// once, at most Config.SQLReads of their follower reads reach SQL
// together, and that every task still completes.
func TestSQLReadsBound(t *testing.T) {
	store := &slowStore{}
	_, worker := New(slog.New(slog.NewTextHandler(io.Discard, nil)), Config{SQLReads: 2}, store, nopCache{}, nil, nil, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		body, _ := json.Marshal(feed.FanoutTask{ID: "t", PostID: 100, AuthorID: 1, After: int64(i * 10), Upto: int64(i*10 + 10)})
		wg.Go(func() {
			if err := worker.Handle(t.Context(), feed.Delivery{Body: body, Attempt: 1}); err != nil {
				t.Errorf("task %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if got := store.most.Load(); got != 2 {
		t.Fatalf("follower reads at once = %d; want 2 (Config.SQLReads)", got)
	}
}
