package timeline

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/inmemcache"
)

// downCache fails the inbox calls too while Down is set, as a Redis that
// went away.
type downCache struct {
	*feedtest.FailingCache
}

func (c *downCache) fail() error {
	if c.Down.Load() {
		return feedtest.ErrCacheDown
	}
	return nil
}

func (c *downCache) InboxPage(ctx context.Context, reader, before int64, n int) (feed.InboxPage, error) {
	if err := c.fail(); err != nil {
		return feed.InboxPage{}, err
	}
	return c.Cache.InboxPage(ctx, reader, before, n)
}

func (c *downCache) InboxBounds(ctx context.Context, reader int64) (int64, int64, bool, error) {
	if err := c.fail(); err != nil {
		return 0, 0, false, err
	}
	return c.Cache.InboxBounds(ctx, reader)
}

func (c *downCache) FillInbox(ctx context.Context, reader int64, ids []int64, complete bool, ttl time.Duration) error {
	if err := c.fail(); err != nil {
		return err
	}
	return c.Cache.FillInbox(ctx, reader, ids, complete, ttl)
}

func (c *downCache) AddToInbox(ctx context.Context, reader int64, ids []int64, markIncomplete bool) error {
	if err := c.fail(); err != nil {
		return err
	}
	return c.Cache.AddToInbox(ctx, reader, ids, markIncomplete)
}

func (c *downCache) RemoveFromInbox(ctx context.Context, reader int64, ids []int64) error {
	if err := c.fail(); err != nil {
		return err
	}
	return c.Cache.RemoveFromInbox(ctx, reader, ids)
}

func (c *downCache) DropInbox(ctx context.Context, reader int64) error {
	if err := c.fail(); err != nil {
		return err
	}
	return c.Cache.DropInbox(ctx, reader)
}

// TestStaleFeedsReset: with the cache unreachable, a reader unfollows one
// author, follows another and mutes a third, on each delivery model. The
// writes succeed and the reads, from SQL, show them at once. When the
// cache is back, the inbox it kept from before (which reads would renew,
// so it would never expire) is stale; the sweep resets the reader's cached
// state, and the feed read through the cache is exactly SQL's again.
func TestStaleFeedsReset(t *testing.T) {
	for _, mode := range []feed.FanoutMode{feed.ModePush, feed.ModePull, feed.ModeHybrid} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			mem := inmemcache.New(inmemcache.Options{InboxTTL: time.Hour})
			lists := inmemcache.New(inmemcache.Options{InboxTTL: time.Hour})
			t.Cleanup(func() { mem.Close(); lists.Close() })
			cache := &downCache{&feedtest.FailingCache{Cache: mem}}
			store := testStore(t)
			cfg := Config{Policy: feed.DeliveryPolicy{Mode: mode, PullThreshold: 3}}
			svc := newWithWrites(slog.New(slog.DiscardHandler), cfg, store, cache, lists, feed.NewIDGen(nil), nil)

			// Authors 10 and 11 have three followers (pulled in hybrid),
			// 12 and 13 one (pushed); the reader follows 10, 12 and 13.
			reader := int64(1)
			for _, id := range []int64{1, 2, 3, 10, 11, 12, 13} {
				if _, err := svc.CreateUser(ctx, id, "user", ""); err != nil {
					t.Fatal(err)
				}
			}
			follow := func(a, b int64) {
				t.Helper()
				if err := svc.Follow(ctx, a, b); err != nil {
					t.Fatalf("Follow(%d, %d): %v", a, b, err)
				}
			}
			for _, a := range []int64{10, 12, 13} {
				follow(reader, a)
			}
			for _, a := range []int64{10, 11} {
				follow(2, a)
				follow(3, a)
			}
			posts := map[int64][]int64{}
			for range 3 {
				for _, a := range []int64{10, 11, 12, 13} {
					posts[a] = append(posts[a], publish(t, svc, a))
				}
			}
			want := func(authors ...int64) []int64 {
				var ids []int64
				for _, a := range authors {
					ids = append(ids, posts[a]...)
				}
				slices.Sort(ids)
				slices.Reverse(ids)
				return ids
			}
			check := func(when string, authors ...int64) {
				t.Helper()
				if got, w := readAll(t, svc, reader, 4), want(authors...); !slices.Equal(got, w) {
					t.Fatalf("%s: feed = %v; want %v (authors %v)", when, got, w, authors)
				}
			}
			check("before the outage", 10, 12, 13) // the inbox is warm

			cache.Down.Store(true)
			if err := svc.Unfollow(ctx, reader, 12); err != nil { // pushed
				t.Fatal(err)
			}
			if err := svc.Unfollow(ctx, reader, 10); err != nil { // pulled in hybrid
				t.Fatal(err)
			}
			follow(reader, 11)
			if err := svc.Mute(ctx, reader, 13); err != nil {
				t.Fatal(err)
			}
			check("cache unreachable", 11)
			marked, err := store.StaleFeeds(ctx, 10)
			if err != nil || len(marked) != 1 || marked[0].User != reader {
				t.Fatalf("StaleFeeds after the writes = %v, %v; want the reader %d marked", marked, err, reader)
			}
			if n, err := svc.SweepStale(ctx); err == nil || n != 0 {
				t.Fatalf("SweepStale with the cache unreachable = %d, %v; want 0 and an error", n, err)
			}

			cache.Down.Store(false)
			if n, err := svc.SweepStale(ctx); err != nil || n != 1 {
				t.Fatalf("SweepStale with the cache back = %d, %v; want 1, nil", n, err)
			}
			if marked, err := store.StaleFeeds(ctx, 10); err != nil || len(marked) != 0 {
				t.Fatalf("StaleFeeds after the sweep = %v, %v; want none", marked, err)
			}
			// The process's own copy of the mute set is at most HiddenTTL
			// old; the shared one was held out by the reset.
			time.Sleep(svc.cfg.HiddenTTL)
			check("cache back", 11)
		})
	}
}
