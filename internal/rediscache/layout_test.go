package rediscache

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestRingBytes pins the inbox layout byte for byte (LAYOUT.md, and the
// package comment): a change to it must rename the keys (and bump the
// format byte), or a rolling deploy would read rings of the other layout. It spells the layout out
// on its own, independently of the code that writes it.
func TestRingBytes(t *testing.T) {
	ctx := t.Context()
	client := testServer(t)()
	prefix := randomPrefix()
	c := New(client, Options{Prefix: prefix, InboxMax: 40})
	t.Cleanup(func() {
		deleteKeys(t, client, prefix)
		c.Close()
	})
	// ring returns a ring's bytes: the 21-byte header (format 2, state,
	// cap, head, count, newest id) and cap slots of 7 bytes, slots[i] in
	// slot i, zeros elsewhere. An id is its 7 low bytes of two's
	// complement: a negative one (a post from before 2025) starts with
	// 0xff, a positive one has the bytes of format 1's unsigned slots.
	ring := func(state byte, capacity, head, count uint32, newest int64, slots map[int]int64) string {
		b := []byte{2, state}
		b = binary.BigEndian.AppendUint32(b, capacity)
		b = binary.BigEndian.AppendUint32(b, head)
		b = binary.BigEndian.AppendUint32(b, count)
		id := func(id int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(id))[1:] }
		b = append(b, id(newest)...)
		for i := range int(capacity) {
			b = append(b, id(slots[i])...)
		}
		return string(b)
	}
	check := func(step string, reader int64, want string, ttl bool) {
		t.Helper()
		ringKey, pendingKey := c.inboxKey(reader), c.pendingKey(reader)
		if got, err := client.Get(ctx, ringKey).Result(); err != nil || got != want {
			t.Errorf("%s: ring = %x, %v;\nwant   %x", step, got, err, want)
		}
		if got, err := client.LRange(ctx, pendingKey, 0, -1).Result(); err != nil || !slices.Equal(got, []string{"s"}) {
			t.Errorf("%s: pending list = %q, %v; want just the sentinel", step, got, err)
		}
		for _, k := range []string{ringKey, pendingKey} {
			d, err := client.PTTL(ctx, k).Result()
			if err != nil || (d > 0) != ttl || (ttl && d > time.Hour) {
				t.Errorf("%s: ttl of %s = %v, %v; want one (%v) of at most an hour", step, k, d, err, ttl)
			}
		}
	}

	if err := c.FillInbox(ctx, 1, []int64{3, 1, 5, 2, 4}, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	// 5 ids get 5 + 5/2 + 16 = 23 slots, newest first from slot 0.
	check("fill", 1, ring(0, 23, 0, 5, 5, map[int]int64{0: 5, 1: 4, 2: 3, 3: 2, 4: 1}), true)

	for _, id := range []int64{6, 7} {
		if err := c.PushToInboxes(ctx, []int64{1}, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.InboxPage(ctx, 1, 0, 1); err != nil { // drains
		t.Fatal(err)
	}
	// Newer ids go before the head, which wraps.
	check("drain", 1, ring(0, 23, 21, 7, 7, map[int]int64{21: 7, 22: 6, 0: 5, 1: 4, 2: 3, 3: 2, 4: 1}), true)

	if err := c.FillInbox(ctx, 2, nil, false, 0); err != nil {
		t.Fatal(err)
	}
	check("empty fill", 2, ring(1, 16, 0, 0, 0, nil), false)

	ids := make([]int64, 45)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	if err := c.FillInbox(ctx, 3, ids, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Trimmed to InboxMax: no slack, and incomplete.
	want := map[int]int64{}
	for i := range 40 {
		want[i] = int64(45 - i)
	}
	check("trimmed fill", 3, ring(1, 40, 0, 40, 45, want), true)

	// History: ids below 0, in order below every id of 2025 on.
	if err := c.FillInbox(ctx, 4, []int64{4096, -1, -4096, feed.MinID}, true, time.Hour); err != nil {
		t.Fatal(err)
	}
	check("fill with history", 4, ring(0, 22, 0, 4, 4096, map[int]int64{0: 4096, 1: -1, 2: -4096, 3: feed.MinID}), true)
	if got, _ := client.GetRange(ctx, c.inboxKey(4), 21+7, 21+7+6).Result(); got != "\xff\xff\xff\xff\xff\xff\xff" {
		t.Errorf("slot of id -1 = %x; want seven 0xff bytes", got)
	}
	for _, id := range []int64{-2, 5000} {
		if err := c.PushToInboxes(ctx, []int64{4}, id); err != nil {
			t.Fatal(err)
		}
	}
	pg, err := c.InboxPage(ctx, 4, -1, 10) // drains, then pages below -1
	if err != nil || !slices.Equal(pg.IDs, []int64{-2, -4096, feed.MinID}) {
		t.Fatalf("InboxPage(4, below -1) = %v, %v; want -2, -4096, MinID", pg.IDs, err)
	}
	check("drain with history", 4, ring(0, 22, 21, 6, 5000, map[int]int64{21: 5000, 0: 4096, 1: -1, 2: -2, 3: -4096, 4: feed.MinID}), true)

	// A ring of format 1 (unsigned slots), under this version's keys,
	// reads as absent: it is rebuilt from SQL.
	old := []byte(ring(0, 16, 0, 1, 4096, map[int]int64{0: 4096}))
	old[0] = 1
	if err := client.Set(ctx, c.inboxKey(5), old, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.RPush(ctx, c.pendingKey(5), "s").Err(); err != nil {
		t.Fatal(err)
	}
	if pg, err := c.InboxPage(ctx, 5, 0, 10); err != nil || pg.Exists {
		t.Errorf("InboxPage of a format-1 ring = %+v, %v; want absent", pg, err)
	}
}
