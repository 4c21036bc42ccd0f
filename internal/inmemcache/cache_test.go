package inmemcache

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
)

func TestCache(t *testing.T) {
	feedtest.TestCache(t, func(t *testing.T, inboxMax int) feed.Cache {
		c := New(Options{InboxMax: inboxMax, InboxTTL: feedtest.ReadTTL})
		t.Cleanup(func() { c.Close() })
		return c
	})
}

// TestExpiryUsesNow checks that ttls follow the injected clock, so that
// callers can test their own ttl logic against the embedded cache without
// sleeping.
func TestExpiryUsesNow(t *testing.T) {
	ctx := t.Context()
	clk := feedtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := New(Options{Now: clk.Now})
	defer c.Close()

	if err := c.FillInbox(ctx, 1, []int64{101}, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := c.CachePosts(ctx, []feed.Post{{ID: 101}}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "v", time.Hour); err != nil {
		t.Fatal(err)
	}

	clk.Add(time.Hour - time.Nanosecond)
	if p, _ := c.InboxPage(ctx, 1, 0, 10); !p.Exists {
		t.Errorf("inbox gone before its ttl")
	}
	clk.Add(time.Nanosecond)
	if p, _ := c.InboxPage(ctx, 1, 0, 10); p.Exists {
		t.Errorf("inbox alive at its ttl")
	}
	if got, _ := c.CachedPosts(ctx, []int64{101}); len(got) != 0 {
		t.Errorf("post alive at its ttl")
	}
	if _, ok, _ := c.Get(ctx, "k"); ok {
		t.Errorf("key alive at its ttl")
	}
}

// TestJanitor checks that expired entries nobody touches are freed, and
// that Close stops the janitor: synctest fails the test if a goroutine
// started inside the bubble outlives it.
func TestJanitor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		c := New(Options{})
		for r := int64(1); r <= 100; r++ {
			if err := c.FillInbox(ctx, r, []int64{101}, true, time.Second); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.FillInbox(ctx, 1000, nil, true, 0); err != nil { // never expires
			t.Fatal(err)
		}
		if err := c.CachePosts(ctx, []feed.Post{{ID: 101}, {ID: 102}}, time.Second); err != nil {
			t.Fatal(err)
		}
		if err := c.Set(ctx, "k", "v", time.Second); err != nil {
			t.Fatal(err)
		}

		time.Sleep(sweepEvery + time.Second)
		synctest.Wait()
		if inboxes, posts, kv := c.count(); inboxes != 1 || posts != 0 || kv != 0 {
			t.Errorf("after a sweep: %d inboxes, %d posts, %d keys; want 1, 0, 0", inboxes, posts, kv)
		}

		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

// BenchmarkPushToInboxes measures the embedded fan-out write: one post into
// 1000 inboxes, full ones (every push trims) and absent ones (skipped).
func BenchmarkPushToInboxes(b *testing.B) {
	const batch = 1000
	for _, tc := range []struct {
		name string
		fill int // ids per inbox before the run; -1: no inbox
	}{
		{"absent", -1},
		{"empty", 0},
		{"full", feed.DefaultInboxMax},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := b.Context()
			c := New(Options{})
			defer c.Close()
			readers := make([]int64, batch)
			ids := make([]int64, max(tc.fill, 0))
			for i := range ids {
				ids[i] = int64(i + 1)
			}
			for i := range readers {
				readers[i] = int64(i + 1)
				if tc.fill >= 0 {
					if err := c.FillInbox(ctx, readers[i], ids, true, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			id := int64(1 << 20)
			for b.Loop() {
				id++
				if err := c.PushToInboxes(ctx, readers, id); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "inboxes/s")
		})
	}
}

func TestNotifier(t *testing.T) {
	feedtest.TestNotifier(t, func(t *testing.T) feed.Notifier {
		c := New(Options{})
		t.Cleanup(func() { c.Close() })
		return c
	})
}

func TestBeats(t *testing.T) {
	feedtest.TestBeats(t, func(t *testing.T) feedtest.Beats {
		c := New(Options{})
		t.Cleanup(func() { c.Close() })
		return c
	})
}
