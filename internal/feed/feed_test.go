package feed_test

import (
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

func TestIDGenUniqueOrderedExact(t *testing.T) {
	g := feed.NewIDGen(nil)
	const goroutines, each = 8, 5000
	var mu sync.Mutex
	seen := make(map[int64]bool, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			prev := int64(0)
			local := make([]int64, 0, each)
			for range each {
				id := g.Next()
				if id <= prev {
					t.Errorf("id %d after %d: want strictly increasing", id, prev)
				}
				prev = id
				local = append(local, id)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
			}
		})
	}
	wg.Wait()
	for id := range seen {
		if id <= 0 || id > feed.MaxID {
			t.Fatalf("id %d outside (0, 2^53)", id)
		}
		if float64(id) != float64(int64(float64(id))) || int64(float64(id)) != id {
			t.Fatalf("id %d is not exact as a float64", id)
		}
	}
}

func TestIDTimeRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 22, 7, 33, 43, 120_000_000, time.UTC)
	g := feed.NewIDGen(func() time.Time { return now })
	id := g.Next()
	if got := feed.IDTime(id); !got.Equal(now) {
		t.Fatalf("IDTime = %v; want %v", got, now)
	}
	if min := feed.MinIDAt(now); id < min || min > id {
		t.Fatalf("MinIDAt(now) = %d; want <= %d", min, id)
	}
	// The clock standing still (or going back) must not repeat ids.
	if id2 := g.Next(); id2 <= id {
		t.Fatalf("second id %d; want > %d", id2, id)
	}
}

func TestCursorRoundTripAndRejects(t *testing.T) {
	for _, pos := range []int64{1, 4096, feed.MaxID, 1<<63 - 1} {
		c := feed.EncodeCursor(feed.CursorFeed, pos)
		got, err := feed.DecodeCursor(feed.CursorFeed, c)
		if err != nil || got != pos {
			t.Fatalf("DecodeCursor(EncodeCursor(%d)) = %d, %v; want %d, nil", pos, got, err, pos)
		}
		if _, err := feed.DecodeCursor(feed.CursorUsers, c); feed.ErrorCode(err) != feed.EINVALID {
			t.Fatalf("feed cursor accepted as a user cursor: err %v", err)
		}
	}
	if got, err := feed.DecodeCursor(feed.CursorFeed, ""); got != 0 || err != nil {
		t.Fatalf("empty cursor = %d, %v; want 0, nil", got, err)
	}
	for _, bad := range []string{"x", "!!!", "AQ", "AWYA", "aGVsbG8gd29ybGQ", "AWaAgICAgICAgICAAQ", string(make([]byte, 100))} {
		if _, err := feed.DecodeCursor(feed.CursorFeed, bad); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("DecodeCursor(%q) err = %v; want code %s", bad, err, feed.EINVALID)
		}
	}
}

func FuzzDecodeCursor(f *testing.F) {
	f.Add(feed.EncodeCursor(feed.CursorFeed, 12345))
	f.Add("")
	f.Add("AWYA")
	f.Fuzz(func(t *testing.T, s string) {
		pos, err := feed.DecodeCursor(feed.CursorFeed, s)
		if err != nil {
			if feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("err code %s; want %s", feed.ErrorCode(err), feed.EINVALID)
			}
			return
		}
		if s != "" && feed.EncodeCursor(feed.CursorFeed, pos) != s {
			t.Fatalf("cursor %q decodes to %d which encodes differently", s, pos)
		}
	})
}

func TestParseID(t *testing.T) {
	for _, s := range []string{"0", "-1", "+5", "abc", "1e3", "", " 1", "9223372036854775808", "0x10"} {
		if _, err := feed.ParseID(s); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("ParseID(%q) err = %v; want invalid", s, err)
		}
	}
	if id, err := feed.ParseID("9223372036854775807"); err != nil || id != 1<<63-1 {
		t.Errorf("ParseID(max) = %d, %v", id, err)
	}
}

func BenchmarkCursor(b *testing.B) {
	id := feed.NewIDGen(nil).Next()
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			_ = feed.EncodeCursor(feed.CursorFeed, id)
		}
	})
	c := feed.EncodeCursor(feed.CursorFeed, id)
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := feed.DecodeCursor(feed.CursorFeed, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkIDGen(b *testing.B) {
	g := feed.NewIDGen(nil)
	for b.Loop() {
		_ = g.Next()
	}
}

func TestDeliveryPolicyHysteresis(t *testing.T) {
	p := feed.DeliveryPolicy{Mode: feed.ModeHybrid, PullThreshold: 1000}
	for _, c := range []struct {
		followers int64
		stored    bool
		want      bool
	}{
		{0, false, false}, {899, true, false}, {900, false, false}, {900, true, true},
		{999, true, true}, {999, false, false}, {1000, false, true}, {5000, false, true},
	} {
		if got := p.Pulls(feed.User{FollowerCount: c.followers, PullMode: c.stored}); got != c.want {
			t.Errorf("Pulls(%d followers, stored %v) = %v; want %v", c.followers, c.stored, got, c.want)
		}
	}
	if (feed.DeliveryPolicy{Mode: feed.ModePush, PullThreshold: 1}).Pulls(feed.User{FollowerCount: 10}) {
		t.Error("push mode pulled an author")
	}
	if !(feed.DeliveryPolicy{Mode: feed.ModePull}).Pulls(feed.User{}) {
		t.Error("pull mode pushed an author")
	}
	if _, err := feed.ParseFanoutMode("fanout"); err == nil {
		t.Error("ParseFanoutMode accepted an unknown mode")
	}
}
