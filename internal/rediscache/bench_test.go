package rediscache

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkPushToInboxes measures the fan-out write: one post pushed into
// a batch of 1000 inboxes, the unit a fan-out worker sends. The baseline
// is what the same pipeline of plain ZADDs costs on the same server in the
// same run, so the figure that matters is the ratio: the price of the
// script (skip absent, trim, mark incomplete) over a blind write.
//
//	go test -run x -bench PushToInboxes -benchtime 20x ./internal/rediscache/
func BenchmarkPushToInboxes(b *testing.B) {
	const batch = 1000
	newClient := testServer(b)
	client := newClient()
	prefix := randomPrefix()
	b.Cleanup(func() {
		deleteKeys(b, client, prefix)
		client.Close()
	})
	ctx := b.Context()

	c := New(client, Options{Prefix: prefix})
	readers := make([]int64, batch)
	for i := range readers {
		readers[i] = int64(i + 1)
	}
	full := make([]int64, DefaultInboxMax)
	for i := range full {
		full[i] = int64(i + 1)
	}
	// Ids above every id in the full inboxes, so each push is the newest
	// and, in a full inbox, trims the oldest.
	id := int64(1 << 30)
	report := func(b *testing.B, n int) {
		b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "inboxes/s")
	}

	// Baselines: plain ZADDs into small sets, and into sets as large as a
	// full inbox, to tell the script's cost from that of a large set.
	for _, tc := range []struct {
		name string
		size int
	}{
		{"baseline=zadd", 0},
		{"baseline=zadd-into-800", DefaultInboxMax},
	} {
		b.Run(tc.name, func(b *testing.B) {
			// Keys of their own, so that later cases do not see them.
			raw := New(client, Options{Prefix: prefix + tc.name + ":"})
			keys := raw.inboxKeys(readers)
			if tc.size > 0 {
				members := make([]redis.Z, tc.size)
				for i := range members {
					members[i] = redis.Z{Score: float64(i + 1), Member: strconv.Itoa(i + 1)}
				}
				p := client.Pipeline()
				for _, key := range keys {
					p.ZAdd(ctx, key, members...)
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				id++
				member := strconv.FormatInt(id, 10)
				p := client.Pipeline()
				// Keys built per batch, as PushToInboxes does.
				for _, key := range raw.inboxKeys(readers) {
					p.ZAdd(ctx, key, redis.Z{Score: float64(id), Member: member})
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
				n++
			}
			report(b, n)
		})
	}

	for _, tc := range []struct {
		name    string
		readers []int64
		fill    []int64 // nil: no inbox, the push skips it
	}{
		{"push=existing", readers, []int64{}},
		{"push=full", offset(readers, batch), full},
		{"push=absent", offset(readers, 2*batch), nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.fill != nil {
				for _, r := range tc.readers {
					if err := c.FillInbox(ctx, r, tc.fill, true, time.Hour); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				id++
				if err := c.PushToInboxes(ctx, tc.readers, id); err != nil {
					b.Fatal(err)
				}
				n++
			}
			report(b, n)
		})
	}
}

// offset returns readers shifted by d, a fresh set of inboxes per case.
func offset(readers []int64, d int64) []int64 {
	out := make([]int64, len(readers))
	for i, r := range readers {
		out[i] = r + d
	}
	return out
}
