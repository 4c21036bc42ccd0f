package feed_test

import (
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

func TestNextOnCarriesTheShard(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, shards := range []int{1, 4, 64} {
		// A process uses one shard count, so one generator per count.
		g := feed.NewIDGen(func() time.Time { return now })
		seen := map[int64]bool{}
		for author := int64(1); author <= 200; author++ {
			for range 40 { // beyond 4096/64 ids in one ms: the next ms is taken
				id := g.NextOn(author, shards)
				if seen[id] {
					t.Fatalf("id %d given twice", id)
				}
				seen[id] = true
				if got := id & int64(shards-1); got != author&int64(shards-1) {
					t.Fatalf("NextOn(%d, %d) = %d, on shard %d", author, shards, id, got)
				}
				if !feed.ValidPostID(id) {
					t.Fatalf("NextOn gave invalid id %d", id)
				}
			}
		}
	}
	if got := feed.OnShard(0xfff, 6, 4); got&3 != 2 || got>>2 != 0xfff>>2 {
		t.Fatalf("feed.OnShard(0xfff, 6, 4) = %#x", got)
	}
}
