package rediscache

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
)

// The benchmarks compare the ring (this package's inbox layout) with the
// sorted-set layout it replaced (legacy_test.go) and with plain commands,
// on the same server in the same run, at FEEDD_INBOX_MAX's default of
// 1000. They write under a random prefix and delete it after; give them a
// database of their own:
//
//	FEEDD_TEST_REDIS_URL=redis://127.0.0.1:6379/3 go test -run x \
//	    -bench 'PushToInboxes|InboxPage' -count 5 ./internal/rediscache/
//	FEEDD_TEST_REDIS_URL=redis://127.0.0.1:6379/3 go test -run x \
//	    -bench InboxMemory -benchtime 1x ./internal/rediscache/
const benchInboxMax = 1000

// benchIDs returns n realistic post ids (one a millisecond, from now),
// ascending, starting at the i-th.
func benchIDs(i, n int) []int64 {
	base := feed.MinIDAt(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	ids := make([]int64, n)
	for j := range ids {
		ids[j] = base + int64(i+j)<<12
	}
	return ids
}

// benchReaders returns n reader ids from first.
func benchReaders(first int64, n int) []int64 {
	readers := make([]int64, n)
	for i := range readers {
		readers[i] = first + int64(i)
	}
	return readers
}

// layout is what a benchmark needs of an inbox layout.
type layout struct {
	name string
	fill func(ctx context.Context, reader int64, ids []int64) error
	push func(ctx context.Context, readers []int64, id int64) error
	page func(ctx context.Context, reader, before int64, n int) (int, error)
}

// benchLayouts returns the ring and the ZSET layout on client, each under
// its own prefix.
func benchLayouts(client redis.UniversalClient, prefix string, inboxMax int) []layout {
	ring := New(client, Options{Prefix: prefix + "ring:", InboxMax: inboxMax})
	zset := newZSetLayout(client, prefix+"zset:", inboxMax)
	return []layout{
		{
			name: "zset",
			fill: zset.fill,
			push: zset.pushAll,
			page: zset.page,
		},
		{
			name: "ring",
			fill: func(ctx context.Context, reader int64, ids []int64) error {
				return ring.FillInbox(ctx, reader, ids, false, time.Hour)
			},
			push: ring.PushToInboxes,
			page: func(ctx context.Context, reader, before int64, n int) (int, error) {
				p, err := ring.InboxPage(ctx, reader, before, n)
				return len(p.IDs), err
			},
		},
	}
}

// fillAll fills every reader's inbox with ids, a few at a time.
func fillAll(tb testing.TB, l layout, readers, ids []int64) {
	tb.Helper()
	g, ctx := errgroup.WithContext(tb.Context())
	g.SetLimit(8)
	for _, r := range readers {
		g.Go(func() error { return l.fill(ctx, r, ids) })
	}
	if err := g.Wait(); err != nil {
		tb.Fatalf("fill %d %s inboxes: %v", len(readers), l.name, err)
	}
}

// benchServer returns a client of the test server and a fresh prefix whose
// keys are deleted when b ends.
func benchServer(b *testing.B) (redis.UniversalClient, string) {
	client := testServer(b)()
	prefix := randomPrefix()
	b.Cleanup(func() {
		deleteKeys(b, client, prefix)
		client.Close()
	})
	return client, prefix
}

// BenchmarkPushToInboxes measures the fan-out write: one post pushed into
// a batch of 1000 inboxes, the unit a fan-out worker sends, in one
// pipeline. push=full is the steady state of an active reader's inbox:
// full, so every push also trims. The baseline is the same pipeline of
// plain ZADDs, the floor of any script.
func BenchmarkPushToInboxes(b *testing.B) {
	const batch = 1000
	client, prefix := benchServer(b)
	ctx := b.Context()
	full := benchIDs(0, benchInboxMax)
	next := benchInboxMax // the next new post, as an index of benchIDs
	report := func(b *testing.B, n int) {
		b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "inboxes/s")
	}

	b.Run("baseline=zadd", func(b *testing.B) {
		keys := New(client, Options{Prefix: prefix + "raw:"}).pendingKeys(benchReaders(1, batch))
		n := 0
		for b.Loop() {
			id := benchIDs(next, 1)[0]
			next++
			member := strconv.FormatInt(id, 10)
			p := client.Pipeline()
			for _, key := range keys {
				p.ZAdd(ctx, key, redis.Z{Score: float64(id), Member: member})
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			n++
		}
		report(b, n)
	})

	for i, l := range benchLayouts(client, prefix, benchInboxMax) {
		readers := benchReaders(int64(1+10*i)*batch, batch)
		fillAll(b, l, readers, full)
		b.Run("layout="+l.name+",push=full", func(b *testing.B) {
			n := 0
			for b.Loop() {
				if err := l.push(ctx, readers, benchIDs(next, 1)[0]); err != nil {
					b.Fatal(err)
				}
				next++
				n++
			}
			report(b, n)
		})
		// Every second push is late by one: it lands below the newest id,
		// the slow path of a ring (a fan-out finishing after a newer one).
		b.Run("layout="+l.name+",push=full,late=half", func(b *testing.B) {
			n := 0
			for b.Loop() {
				if err := l.push(ctx, readers, benchIDs(next+(n^1), 1)[0]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			next += n + 2
			report(b, n)
		})
		b.Run("layout="+l.name+",push=absent", func(b *testing.B) {
			absent := benchReaders(int64(5+10*i)*batch, batch)
			n := 0
			for b.Loop() {
				if err := l.push(ctx, absent, benchIDs(next, 1)[0]); err != nil {
					b.Fatal(err)
				}
				next++
				n++
			}
			report(b, n)
		})
	}
	// The ring with other group counts (Options.InboxGroups): a batch of
	// 1000 readers makes one script call per group, so groups=1000000 is
	// about one call an inbox.
	for i, groups := range []int{1_000_000, 1024, 256, 64, 16} {
		ring := New(client, Options{Prefix: prefix + "g" + strconv.Itoa(groups) + ":", InboxMax: benchInboxMax, InboxGroups: groups})
		readers := benchReaders(int64(100+10*i)*batch, batch)
		fillAll(b, layout{name: "ring", fill: func(ctx context.Context, reader int64, ids []int64) error {
			return ring.FillInbox(ctx, reader, ids, false, time.Hour)
		}}, readers, full)
		b.Run("layout=ring,groups="+strconv.Itoa(groups)+",push=full", func(b *testing.B) {
			n := 0
			for b.Loop() {
				if err := ring.PushToInboxes(ctx, readers, benchIDs(next, 1)[0]); err != nil {
					b.Fatal(err)
				}
				next++
				n++
			}
			report(b, n)
		})
	}
}

// BenchmarkInboxPage measures reads of pages of 20 from full inboxes of
// 1000, from 16 goroutines at once: page=1 is a first page, page=2-4 one
// of the next three (the cursor a reader scrolling on sends), page=random
// one below a random id of the inbox. The baseline is a bare
// ZREVRANGEBYSCORE on the ZSET layout's keys, without the sentinel's
// state.
func BenchmarkInboxPage(b *testing.B) {
	const (
		inboxes  = 1000
		pageSize = 20
	)
	client, prefix := benchServer(b)
	readers := benchReaders(1, inboxes)
	full := benchIDs(0, benchInboxMax)
	layouts := benchLayouts(client, prefix, benchInboxMax)
	for _, l := range layouts {
		fillAll(b, l, readers, full)
	}
	zset := newZSetLayout(client, prefix+"zset:", benchInboxMax)
	baseline := layout{name: "baseline=zrevrangebyscore", page: func(ctx context.Context, reader, before int64, n int) (int, error) {
		max := "+inf"
		if before > 0 {
			max = "(" + strconv.FormatInt(before, 10)
		}
		ids, err := client.ZRevRangeByScore(ctx, zset.key(reader), &redis.ZRangeBy{Max: max, Min: "(0", Count: int64(n)}).Result()
		return len(ids), err
	}}

	// Cursors by the position (0: the newest) of the last id seen.
	for _, pages := range []struct {
		name   string
		cursor func(rng *rand.Rand) int // -1: none
	}{
		{"page=1", func(*rand.Rand) int { return -1 }},
		{"page=2-4", func(rng *rand.Rand) int { return pageSize*(1+rng.IntN(3)) - 1 }},
		{"page=random", func(rng *rand.Rand) int { return rng.IntN(len(full) - pageSize) }},
	} {
		for _, l := range append([]layout{baseline}, layouts...) {
			name := l.name + "," + pages.name
			if !strings.HasPrefix(name, "baseline") {
				name = "layout=" + name
			}
			b.Run(name, func(b *testing.B) {
				ctx := b.Context()
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
					for pb.Next() {
						r := readers[rng.IntN(len(readers))]
						var before int64
						if pos := pages.cursor(rng); pos >= 0 {
							before = full[len(full)-1-pos]
						}
						got, err := l.page(ctx, r, before, pageSize)
						if err != nil || got != pageSize {
							b.Errorf("page of %d below %d: %d ids, %v; want %d", r, before, got, err, pageSize)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			})
		}
	}
}

// BenchmarkInboxMemory measures what full inboxes of 1000 ids cost the
// server, per id: MEMORY USAGE (key, value and their bookkeeping, exact
// with SAMPLES 0) summed over every key of the layout, and the change of
// INFO used_memory, which also counts the keyspace's hash table but moves
// with anything else the server does meanwhile. fill=full fills 2000
// inboxes with 1000 ids and then pushes 50 more into each (the steady
// state, trimmed); fill=pushes grows 200 empty inboxes one push at a time
// to 1000 ids and 50 past it. Run it once: -benchtime 1x.
func BenchmarkInboxMemory(b *testing.B) {
	for _, tc := range []struct {
		name    string
		inboxes int
		fill    int // ids filled, then pushes up to benchInboxMax+50
	}{
		{"fill=full", 2000, benchInboxMax},
		{"fill=pushes", 200, 0},
	} {
		for i := range benchLayouts(nil, "", benchInboxMax) {
			b.Run(benchLayouts(nil, "", benchInboxMax)[i].name+","+tc.name, func(b *testing.B) {
				client, prefix := benchServer(b)
				ctx := b.Context()
				l := benchLayouts(client, prefix, benchInboxMax)[i]
				readers := benchReaders(1, tc.inboxes)
				var perEntry, perEntryInfo float64
				for b.Loop() {
					before := usedMemory(b, client)
					fillAll(b, l, readers, benchIDs(0, tc.fill))
					for j := tc.fill; j < benchInboxMax+50; j++ {
						if err := l.push(ctx, readers, benchIDs(j, 1)[0]); err != nil {
							b.Fatal(err)
						}
					}
					for _, r := range readers[:10] {
						if n, err := l.page(ctx, r, 0, 2*benchInboxMax); err != nil || n != benchInboxMax {
							b.Fatalf("inbox %d holds %d ids, %v; want %d", r, n, err, benchInboxMax)
						}
					}
					entries := float64(tc.inboxes * benchInboxMax)
					perEntryInfo = float64(usedMemory(b, client)-before) / entries
					perEntry = float64(memoryUsage(b, client, prefix)) / entries
					deleteKeys(b, client, prefix)
				}
				b.ReportMetric(perEntry, "B/entry")
				b.ReportMetric(perEntryInfo, "used_memory-B/entry")
			})
		}
	}
}

// memoryUsage sums MEMORY USAGE over every key under prefix.
func memoryUsage(tb testing.TB, client redis.UniversalClient, prefix string) int64 {
	tb.Helper()
	ctx := tb.Context()
	var keys []string
	iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Fatal(err)
	}
	p := client.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = p.MemoryUsage(ctx, k, 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		tb.Fatal(err)
	}
	var sum int64
	for _, cmd := range cmds {
		sum += cmd.Val()
	}
	return sum
}

// usedMemory returns INFO used_memory.
func usedMemory(tb testing.TB, client redis.UniversalClient) int64 {
	tb.Helper()
	info, err := client.Info(tb.Context(), "memory").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("INFO memory has no used_memory")
	return 0
}
