package feed_test

import (
	"fmt"
	"strings"
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

// TestIDBounds: ids keep time order across 2025-01-01, from the first
// millisecond of 2006 to now, and every id IDGen makes is above history.
func TestIDBounds(t *testing.T) {
	if got := feed.IDTime(feed.MinID); !got.Equal(feed.HistoryStart) {
		t.Fatalf("IDTime(MinID) = %s; want %s", got, feed.HistoryStart)
	}
	if float64(feed.MinID) != float64(feed.MinID+1)-1 || -feed.MinID >= 1<<53 {
		t.Fatalf("MinID %d is not exact as a float64", int64(feed.MinID))
	}
	times := []time.Time{
		feed.HistoryStart,
		time.Date(2016, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2024, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		feed.IDEpoch,
		feed.IDEpoch.Add(time.Millisecond),
		time.Now(),
	}
	var prev int64
	for i, ts := range times {
		first, err := feed.IDAt(ts, 1) // seq 1: 2025-01-01's seq 0 would be the id 0
		if err != nil {
			t.Fatalf("IDAt(%s, 1): %v", ts, err)
		}
		last, err := feed.IDAt(ts, feed.MaxSeq)
		if err != nil {
			t.Fatalf("IDAt(%s, MaxSeq): %v", ts, err)
		}
		if i > 0 && first <= prev {
			t.Errorf("IDAt(%s) = %d; want above %d, the last id of %s", ts, first, prev, times[i-1])
		}
		if got := feed.IDTime(first); !got.Equal(ts.Truncate(time.Millisecond)) {
			t.Errorf("IDTime(IDAt(%s)) = %s", ts, got)
		}
		if got := feed.IDTime(last); !got.Equal(ts.Truncate(time.Millisecond)) {
			t.Errorf("IDTime(IDAt(%s, MaxSeq)) = %s", ts, got)
		}
		if m := feed.MinIDAt(ts); m > first || m+feed.MaxSeq < last {
			t.Errorf("MinIDAt(%s) = %d; want the first id of that millisecond, at most %d", ts, m, first)
		}
		if !feed.ValidPostID(first) || !feed.ValidPostID(last) {
			t.Errorf("ids %d, %d of %s are not valid post ids", first, last, ts)
		}
		prev = last
	}
	// The last millisecond of 2024 is ids -4096..-1; 2025's first is 0..4095.
	if id, _ := feed.IDAt(times[2], 0); id != -4096 {
		t.Errorf("IDAt(2024-12-31T23:59:59.999Z, 0) = %d; want -4096", id)
	}
	if id, _ := feed.IDAt(feed.IDEpoch.Add(-500*time.Microsecond), 0); id != -4096 {
		t.Errorf("IDAt(half a millisecond before the epoch, 0) = %d; want -4096, the last millisecond of 2024", id)
	}
	if id, _ := feed.IDAt(times[0], 0); id != feed.MinID {
		t.Errorf("IDAt(2006-01-01, 0) = %d; want MinID %d", id, int64(feed.MinID))
	}
	// IDGen's ids, from the first it can make, sort above all history.
	g := feed.NewIDGen(func() time.Time { return feed.IDEpoch })
	if id := g.Next(); id < 4096 {
		t.Errorf("IDGen at the epoch = %d; want at least 4096", id)
	}
	for _, c := range []struct {
		t   time.Time
		seq int64
	}{
		{feed.HistoryStart.Add(-time.Millisecond), 0},
		{time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), 5},
		{feed.IDEpoch, 0}, // the id 0
		{time.Now(), -1},
		{time.Now(), feed.MaxSeq + 1},
		{feed.IDTime(feed.MaxID).Add(time.Millisecond), 0},
	} {
		if id, err := feed.IDAt(c.t, c.seq); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("IDAt(%s, %d) = %d, %v; want invalid", c.t, c.seq, id, err)
		}
	}
	if feed.ValidPostID(0) || feed.ValidPostID(feed.MinID-1) || feed.ValidPostID(feed.MaxID+1) {
		t.Error("ValidPostID accepts 0, MinID-1 or MaxID+1")
	}
	if got := feed.MinIDAt(time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)); got != feed.MinID {
		t.Errorf("MinIDAt(1990) = %d; want MinID", got)
	}
}

// TestImportSeq: deterministic, in range, and different per attempt and
// per post most of the time.
func TestImportSeq(t *testing.T) {
	seen := map[int64]int{}
	for i := range 1000 {
		ext := fmt.Sprint("blog-", i)
		s := feed.ImportSeq(42, ext, 0)
		if s < 0 || s > feed.MaxSeq || s != feed.ImportSeq(42, ext, 0) {
			t.Fatalf("ImportSeq(42, %s, 0) = %d; want one stable seq in 0..MaxSeq", ext, s)
		}
		seen[s]++
	}
	// 1,000 draws from 4,096: about 113 collide by chance.
	if len(seen) < 800 {
		t.Errorf("1,000 external ids share %d seqs; want them spread", len(seen))
	}
	if feed.ImportSeq(42, "a", 0) == feed.ImportSeq(42, "a", 1) && feed.ImportSeq(42, "a", 1) == feed.ImportSeq(42, "a", 2) {
		t.Error("ImportSeq gives the same seq on three attempts")
	}
}

func TestPostCursors(t *testing.T) {
	for _, id := range []int64{feed.MinID, -4096, -1, 1, 4096, feed.MaxID} {
		c := feed.EncodeCursor(feed.CursorFeed, id)
		if got, err := feed.DecodeCursor(feed.CursorFeed, c); err != nil || got != id {
			t.Errorf("DecodeCursor(EncodeCursor(%d)) = %d, %v", id, got, err)
		}
		if id < 0 {
			if _, err := feed.DecodeCursor(feed.CursorUsers, feed.EncodeCursor(feed.CursorUsers, id)); feed.ErrorCode(err) != feed.EINVALID {
				t.Errorf("a users cursor at %d: err %v; want invalid", id, err)
			}
		}
	}
	// A cursor made before history keeps its spelling.
	if got := feed.EncodeCursor(feed.CursorFeed, 12345); got != "AWa5YA" {
		t.Errorf("EncodeCursor(12345) = %q; want the spelling it always had, AWa5YA", got)
	}
	if _, err := feed.DecodeCursor(feed.CursorFeed, feed.EncodeCursor(feed.CursorFeed, feed.MinID-1)); feed.ErrorCode(err) != feed.EINVALID {
		t.Errorf("a cursor below MinID: err %v; want invalid", err)
	}
	for _, s := range []string{"-0", "+5", "0", "-2456027136000001", "abc", "", "- 1"} {
		if _, err := feed.ParsePostID(s); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("ParsePostID(%q) err = %v; want invalid", s, err)
		}
	}
	for s, want := range map[string]int64{"-1": -1, "-2456027136000000": feed.MinID, "42": 42} {
		if got, err := feed.ParsePostID(s); err != nil || got != want {
			t.Errorf("ParsePostID(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	// User ids stay positive.
	if _, err := feed.ParseID("-1"); feed.ErrorCode(err) != feed.EINVALID {
		t.Errorf("ParseID(-1) err = %v; want invalid", err)
	}
}

func TestCheckExternalID(t *testing.T) {
	for _, ok := range []string{"blog-9913", "x", "with space", strings.Repeat("é", 127) + "x", "🚀"} {
		if err := feed.CheckExternalID(ok); err != nil {
			t.Errorf("CheckExternalID(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []string{"", " ", "\u200b", "a\x00b", "tab\there", "\x85", "\xff", strings.Repeat("x", 256), strings.Repeat("é", 128)} {
		if err := feed.CheckExternalID(bad); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("CheckExternalID(%q) = %v; want invalid", bad, err)
		}
	}
}
