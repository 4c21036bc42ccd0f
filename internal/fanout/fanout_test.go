package fanout

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
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
		body := feed.FanoutTask{ID: "t", PostID: 100, AuthorID: 1, After: int64(i * 10), Upto: int64(i*10 + 10)}.Encode()
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

// flakyInboxes fails its first fails pushes, as Redis does while it is
// unreachable, then records the readers it is asked to write.
type flakyInboxes struct {
	nopCache
	mu     sync.Mutex
	fails  int
	calls  int
	pushed []int64
}

func (f *flakyInboxes) PushToInboxes(_ context.Context, readers []int64, _ int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= f.fails {
		return errors.New("dial tcp: connection refused")
	}
	f.pushed = append(f.pushed, readers...)
	return nil
}

// followerStore has two followers for every author.
type followerStore struct{ Store }

func (followerStore) User(_ context.Context, id int64) (feed.User, error) {
	return feed.User{ID: id, FollowerCount: 2}, nil
}

func (followerStore) Followers(_ context.Context, _, after int64, _ int) ([]int64, error) {
	if after > 0 {
		return nil, nil
	}
	return []int64{10, 11}, nil
}

func (followerStore) FollowersInRange(context.Context, int64, int64, int64) ([]int64, error) {
	return []int64{10, 11}, nil
}

func (followerStore) FollowerRangeEnd(_ context.Context, _, after int64, _ int) (int64, int, error) {
	if after > 0 {
		return 0, 0, nil
	}
	return 11, 2, nil
}

// TestHeldRetries checks that a post event or task whose inbox writes fail
// for a while (a Redis outage longer than the broker's redeliveries) is
// retried while its message is held, and completes once Redis answers,
// instead of spending its delivery attempts; that RetryFor bounds the
// retries; and that Done (shutdown) ends them at once.
func TestHeldRetries(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	event := feed.Event{Kind: feed.EventPostCreated, PostID: 100, AuthorID: 1}.Encode()
	task := feed.FanoutTask{ID: "t", PostID: 100, AuthorID: 1, After: 0, Upto: 20}.Encode()
	handlers := func(cfg Config, inboxes *flakyInboxes) map[string]feed.Handler {
		disp, worker := New(logger, cfg, followerStore{}, inboxes, nil, nil, nil)
		return map[string]feed.Handler{"event": disp.Handle, "task": worker.Handle}
	}
	bodies := map[string][]byte{"event": event, "task": task}

	for name := range bodies {
		t.Run(name+" completes once Redis answers", func(t *testing.T) {
			inboxes := &flakyInboxes{fails: 4}
			h := handlers(Config{RetryFor: time.Minute}, inboxes)[name]
			if err := h(t.Context(), feed.Delivery{Body: bodies[name], Attempt: 1}); err != nil {
				t.Fatalf("Handle = %v; want success after 4 failed pushes", err)
			}
			// The post event also writes the author's own inbox (1): an
			// author's home feed shows its own posts. A task writes its
			// range of followers only.
			want := map[string][]int64{"event": {1, 10, 11}, "task": {10, 11}}[name]
			if inboxes.calls != 5 || !slices.Equal(inboxes.pushed, want) {
				t.Fatalf("pushes = %d, readers written %v; want 5 tries and readers %v", inboxes.calls, inboxes.pushed, want)
			}
		})
		t.Run(name+" gives the message back after RetryFor", func(t *testing.T) {
			inboxes := &flakyInboxes{fails: 1 << 30}
			h := handlers(Config{RetryFor: 250 * time.Millisecond}, inboxes)[name]
			if err := h(t.Context(), feed.Delivery{Body: bodies[name], Attempt: 1}); err == nil {
				t.Fatal("Handle = nil with Redis down for good; want the push error")
			}
			// 0, 100 and 200 ms (backoff 100, then 200): the third try is
			// past the deadline.
			if inboxes.calls < 2 || inboxes.calls > 4 {
				t.Fatalf("pushes within RetryFor 250ms = %d; want 2 to 4", inboxes.calls)
			}
		})
		t.Run(name+" stops retrying at shutdown", func(t *testing.T) {
			inboxes := &flakyInboxes{fails: 1 << 30}
			done := make(chan struct{})
			h := handlers(Config{RetryFor: time.Hour, Done: done}, inboxes)[name]
			errc := make(chan error, 1)
			go func() { errc <- h(t.Context(), feed.Delivery{Body: bodies[name], Attempt: 1}) }()
			time.Sleep(50 * time.Millisecond)
			close(done)
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("Handle = nil at shutdown with Redis down; want the push error, so that the broker redelivers")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Handle still retrying 5s after Done closed")
			}
		})
	}
	t.Run("no retries without RetryFor", func(t *testing.T) {
		inboxes := &flakyInboxes{fails: 1}
		if err := handlers(Config{}, inboxes)["task"](t.Context(), feed.Delivery{Body: task, Attempt: 1}); err == nil || inboxes.calls != 1 {
			t.Fatalf("Handle = %v after %d pushes; want the error after one", err, inboxes.calls)
		}
	})
}

// rangeStore is an author with followers 1..n.
type rangeStore struct {
	Store
	n int64
}

func (s rangeStore) User(_ context.Context, id int64) (feed.User, error) {
	return feed.User{ID: id, FollowerCount: s.n}, nil
}

func (s rangeStore) FollowerRangeEnd(_ context.Context, _, after int64, n int) (int64, int, error) {
	upto := min(after+int64(n), s.n)
	return upto, int(upto - after), nil
}

// lockCache grants every split lock.
type lockCache struct{ nopCache }

func (lockCache) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}
func (lockCache) Set(context.Context, string, string, time.Duration) error { return nil }
func (lockCache) CompareAndExpire(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}

// taskQueue records what is published to it.
type taskQueue struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (q *taskQueue) Publish(_ context.Context, _ string, bodies ...[]byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bodies = append(q.bodies, bodies...)
	return nil
}

// TestSplitTasks checks that a split covers the followers with contiguous
// ranges of BatchSize and marks the last task, and only it, as the last:
// also when the last range is full, and when it ends a publish of a
// hundred tasks.
func TestSplitTasks(t *testing.T) {
	for _, followers := range []int64{25, 30, 1000, 1010} {
		store, q := rangeStore{n: followers}, &taskQueue{}
		disp, _ := New(slog.New(slog.DiscardHandler), Config{DirectFanout: 1, BatchSize: 10}, store, lockCache{}, nil, q, nil)
		ev := feed.Event{Kind: feed.EventPostCreated, PostID: 100, AuthorID: 1}.Encode()
		if err := disp.Handle(t.Context(), feed.Delivery{Body: ev, Attempt: 1}); err != nil {
			t.Fatalf("%d followers: Handle = %v", followers, err)
		}
		if want := int((followers + 9) / 10); len(q.bodies) != want {
			t.Fatalf("%d followers: %d tasks; want %d", followers, len(q.bodies), want)
		}
		var after int64
		for i, b := range q.bodies {
			task, err := feed.DecodeFanoutTask(b)
			if err != nil {
				t.Fatalf("%d followers: task %d: %v", followers, i, err)
			}
			last := i == len(q.bodies)-1
			if task.After != after || task.Upto != min(after+10, followers) || task.Last != last {
				t.Errorf("%d followers: task %d = %+v; want range (%d, %d], last %v", followers, i, task, after, min(after+10, followers), last)
			}
			after = task.Upto
		}
	}
}

// TestAuthorsOwnInbox checks that a post reaches its author's own inbox on
// both pushed paths (direct, and split into tasks), so an author's home
// feed shows its own posts, and that a pulled author's post reaches no
// inbox: its readers, the author among them, merge its author list.
func TestAuthorsOwnInbox(t *testing.T) {
	ev := feed.Event{Kind: feed.EventPostCreated, PostID: 100, AuthorID: 1}.Encode()
	for _, tc := range []struct {
		name string
		cfg  Config
		want []int64
	}{
		{"direct", Config{}, []int64{1, 10, 11}},
		{"split", Config{DirectFanout: 1, BatchSize: 10}, []int64{1}}, // the tasks write 10 and 11
		{"pulled", Config{Policy: feed.DeliveryPolicy{Mode: feed.ModePull}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inboxes := &flakyInboxes{}
			disp, _ := New(slog.New(slog.DiscardHandler), tc.cfg, followerStore{}, lockedInboxes{inboxes: inboxes}, nil, &taskQueue{}, nil)
			if err := disp.Handle(t.Context(), feed.Delivery{Body: ev, Attempt: 1}); err != nil {
				t.Fatalf("Handle = %v", err)
			}
			if !slices.Equal(inboxes.pushed, tc.want) {
				t.Fatalf("inboxes written %v; want %v", inboxes.pushed, tc.want)
			}
		})
	}
}

// lockedInboxes grants every split lock and records inbox writes.
type lockedInboxes struct {
	lockCache
	inboxes *flakyInboxes
}

func (c lockedInboxes) PushToInboxes(ctx context.Context, readers []int64, post int64) error {
	return c.inboxes.PushToInboxes(ctx, readers, post)
}
