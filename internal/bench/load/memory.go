package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/bench/report"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
	"github.com/feedd/feedd/internal/rediscache"
)

// memory lets a sample of readers read their feed once (so feedd builds
// whatever it keeps for them), then measures every key under the model's
// prefix.
func (r *runner) memory(ctx context.Context, m *modelRun) (*report.MemoryResult, error) {
	if r.rdb == nil {
		return nil, errors.New("needs Redis (FEEDD_REDIS_URL)")
	}
	sample := r.o.Manifest.SampleUsers[:min(r.o.MemoryReaders, len(r.o.Manifest.SampleUsers))]
	toks, err := r.tokensFor(ctx, m, sample)
	if err != nil {
		return nil, err
	}
	bar := progress.New(r.o.Progress, "memory: warm readers", int64(len(toks)))
	err = forEach(ctx, 16, len(toks), func(ctx context.Context, i int) error {
		_, err := m.cl.feedPage(ctx, toks[i], 20)
		bar.Add(1)
		return err
	})
	bar.Done()
	if err != nil {
		return nil, fmt.Errorf("warm readers: %w", err)
	}
	// The readers whose inboxes may exist: the sample, and the cohorts if
	// the read scenario ran.
	var readers []int64
	for _, s := range sample {
		id, _ := feed.ParseID(s)
		readers = append(readers, id)
	}
	if slices.Contains(r.o.Scenarios, ScenarioRead) {
		for _, co := range r.o.Manifest.Cohorts {
			for _, s := range co.Readers {
				id, _ := feed.ParseID(s)
				readers = append(readers, id)
			}
		}
	}
	res, err := measureMemory(ctx, r.rdb, m.cache, m.prefix, readers, r.o.MemoryMaxKeys, r.o.InboxMax)
	if err != nil {
		return nil, err
	}
	res.WarmedReaders = len(toks)
	r.logf("   memory: %d keys, %s; %d inboxes: %s for %d entries, %.1f B/entry",
		res.Keys, report.Bytes(res.RedisBytesTotal), res.Inboxes, report.Bytes(res.RedisInboxBytes), res.RedisEntries, res.RedisBytesPerEntry)
	return res, nil
}

// measureMemory SCANs prefix and sums MEMORY USAGE (SAMPLES 0: exact) of
// the keys. It knows nothing of feedd's layout: the cache's measurement
// hook (rediscache's InboxKeys) names the keys of each reader's inbox. So:
//
//   - the inbox keys are those of readers' inboxes; they are all measured,
//     and their entries are counted through feedd's own API (InboxPage of
//     up to inboxMax ids), whatever the inbox's encoding;
//   - every other key is measured too, or a random sample of maxKeys of
//     them, extrapolated (Sampled says so);
//   - entries are also counted generically per Redis type, for by_type: a
//     zset's ZCARD less a sentinel member "0" when it has one, a list's
//     LLEN, a hash's HLEN, a set's SCARD (a string has none).
func measureMemory(ctx context.Context, rdb redis.UniversalClient, cache *rediscache.Cache, prefix string, readers []int64, maxKeys, inboxMax int) (*report.MemoryResult, error) {
	keys, err := scanKeys(ctx, rdb, prefix)
	if err != nil {
		return nil, err
	}
	res := &report.MemoryResult{Prefix: prefix, Keys: int64(len(keys)), ByType: map[string]*report.TypeMemory{}, ByNamespace: map[string]*report.TypeMemory{}}
	isInbox := make(map[string]bool, len(readers))
	for _, r := range readers {
		for _, k := range cache.InboxKeys(r) {
			isInbox[k] = true
		}
	}
	var inboxKeys, others []string
	for _, k := range keys {
		if isInbox[k] {
			inboxKeys = append(inboxKeys, k)
		} else {
			others = append(others, k)
		}
	}
	measured := others
	if budget := max(maxKeys-len(inboxKeys), 1); maxKeys > 0 && len(others) > budget {
		measured, res.Sampled = sampleOf(others, budget), true
	}
	scale := 1.0
	if len(measured) > 0 {
		scale = float64(len(others)) / float64(len(measured))
	}
	res.MeasuredKeys = len(inboxKeys) + len(measured)

	add := func(set map[string]*report.TypeMemory, name string, bytes, entries int64, w float64) {
		t := set[name]
		if t == nil {
			t = &report.TypeMemory{}
			set[name] = t
		}
		t.Keys += int64(math.Round(w))
		t.Bytes += int64(math.Round(float64(bytes) * w))
		t.Entries += int64(math.Round(float64(entries) * w))
	}
	measure := func(keys []string, w float64, inbox bool) error {
		for start := 0; start < len(keys); start += 500 {
			batch := keys[start:min(start+500, len(keys))]
			p := rdb.Pipeline()
			types := make([]*redis.StatusCmd, len(batch))
			for i, k := range batch {
				types[i] = p.Type(ctx, k)
			}
			if _, err := p.Exec(ctx); err != nil {
				return fmt.Errorf("type: %w", err)
			}
			p = rdb.Pipeline()
			usage := make([]*redis.IntCmd, len(batch))
			card := make([]*redis.IntCmd, len(batch))
			sentinel := make([]*redis.FloatCmd, len(batch))
			for i, k := range batch {
				usage[i] = p.MemoryUsage(ctx, k, 0)
				switch types[i].Val() {
				case "zset":
					card[i] = p.ZCard(ctx, k)
					sentinel[i] = p.ZScore(ctx, k, "0")
				case "list":
					card[i] = p.LLen(ctx, k)
				case "hash":
					card[i] = p.HLen(ctx, k)
				case "set":
					card[i] = p.SCard(ctx, k)
				}
			}
			// Keys that expired since the SCAN answer nil: not an error.
			if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("memory usage: %w", err)
			}
			for i, k := range batch {
				typ := types[i].Val()
				if typ == "none" || usage[i].Err() != nil {
					continue
				}
				var entries int64
				if card[i] != nil {
					entries = card[i].Val()
					if sentinel[i] != nil && sentinel[i].Err() == nil {
						entries--
					}
				}
				b := usage[i].Val()
				add(res.ByType, typ, b, entries, w)
				add(res.ByNamespace, namespaceOf(strings.TrimPrefix(k, prefix)), b, entries, w)
				res.RedisBytesTotal += int64(math.Round(float64(b) * w))
				if inbox {
					res.RedisInboxBytes += b
				}
			}
		}
		return nil
	}
	if err := measure(inboxKeys, 1, true); err != nil {
		return nil, err
	}
	if err := measure(measured, scale, false); err != nil {
		return nil, err
	}

	// Entries through feedd's API, for the readers whose inbox exists.
	var inboxes, entries atomic.Int64
	err = forEach(ctx, 32, len(readers), func(ctx context.Context, i int) error {
		pg, err := cache.InboxPage(ctx, readers[i], 0, inboxMax)
		if err != nil {
			return err
		}
		if pg.Exists {
			inboxes.Add(1)
			entries.Add(int64(len(pg.IDs)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count inbox entries: %w", err)
	}
	res.InboxReaders, res.Inboxes, res.RedisEntries = len(readers), int(inboxes.Load()), entries.Load()
	if res.RedisEntries > 0 {
		res.RedisBytesPerEntry = float64(res.RedisInboxBytes) / float64(res.RedisEntries)
	}
	res.RedisConfig = map[string]string{}
	for _, pat := range []string{"zset-max-listpack-*", "zset-max-ziplist-*", "list-max-listpack-size", "hash-max-listpack-entries", "maxmemory-policy"} {
		if cfg, err := rdb.ConfigGet(ctx, pat).Result(); err == nil {
			for k, v := range cfg {
				res.RedisConfig[k] = v
			}
		}
	}
	return res, nil
}

// namespaceOf returns the constant start of a key (prefix removed): up to
// its hash tag or its first digit. "feed:{42}" is "feed:", "kv:refresh:{42}"
// is "kv:refresh:".
func namespaceOf(rest string) string {
	for i, c := range rest {
		if c == '{' || (c >= '0' && c <= '9') {
			return rest[:i]
		}
	}
	return rest
}
