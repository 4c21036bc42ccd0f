// Package rediscache implements feed.Cache on Redis through go-redis: the
// home-timeline inboxes, the post cache and the small key-value surface
// that locks and rate gates use.
//
// It is built for Redis Cluster from the first line: every command and
// every script touches one key, named in KEYS, so any
// redis.UniversalClient works — a single server, a Sentinel failover
// client, a Cluster or a Ring. Batches (a fan-out push, a page of posts to
// hydrate) are pipelines of single-key commands, which a ClusterClient
// splits by slot and sends to the nodes in parallel; nothing uses MGET or
// a multi-key DEL.
//
// Keys, under Options.Prefix:
//
//	inbox:{<reader>}  an inbox: one string, a ring of post ids (inbox.go)
//	post:{<id>}       a cached post, in the compact encoding of post.go
//	kv:<key>          a KV key, as the caller named it
//	likes:…           like counters and recent sets (likes.go)
//
// # Inboxes
//
// An inbox is one Redis string: a 21-byte header (format, complete or
// not, ring size, head, count, newest id) and a ring of post ids, 7
// big-endian bytes each (ids are below 2^53), newest first from the head.
// Ids are time-ordered, so nearly every push brings a new newest id: the
// push script reads the header, writes the slot before the head — in a
// full inbox the oldest id's, so trimming to InboxMax costs nothing — and
// writes the header back: three O(1) calls on one small string. A late
// id (fan-outs finishing out of order) or a repeated one is found by
// binary search and the ids on its shorter side move one slot, so the
// inbox always holds exactly what a sorted set would. Reads are a script
// too, one round trip: a first page is one GETRANGE; a later one finds
// its cursor among the newest 64 ids or by binary search. An inbox is one
// key, so its ttl is the whole inbox's, and pushes (SETRANGE) keep it.
//
// Why not the sorted set this replaced (member and score the id, a
// sentinel member "0" for the state; bench_test.go keeps it for
// comparison): at InboxMax 1000 it is a skiplist of about 118 bytes an id.
// Raising zset-max-listpack-entries makes it about 20 bytes, but ZADD and
// ZREMRANGEBYRANK into a 1000-entry listpack are O(n) on parsed scores and
// pushes fell to about 15k inboxes/s. Bucket keys of at most 128 entries
// (listpacks) cost about 22 bytes an id plus a key and an index per
// bucket to keep in step; a LIST (LPUSH, LTRIM) costs about 10 bytes
// (measured once: 10.3) but can seek neither by id nor by offset, so
// cursors and late ids need the same scripting on a structure that is
// slower to search. A ring of fixed-width ids is the least memory and the
// cheapest common write, and depends on no encoding threshold.
//
// Measured with the benchmarks of bench_test.go (commands in LAYOUT.md):
// Redis 7.0 on loopback, 2 cores shared with the Go client, InboxMax
// 1000, both layouts in one run, medians of 5; rates move by 10-20% from
// run to run on a shared machine:
//
//	                                       sorted set   ring    plain command
//	bytes an id (MEMORY USAGE, all keys)      118.4      7.26
//	push into full inboxes, inboxes/s          91k       171k    265k (ZADD)
//	  every second push late by one            75k       114k
//	  into absent inboxes (skipped)           279k       283k
//	page of 20, pages/s (16 goroutines)                          (ZREVRANGEBYSCORE)
//	  first page                               66k        74k     71k
//	  pages 2 to 4                             60k        63k     73k
//	  below a random id                        57k        40k     75k
//
// A page below a random id is the one case that lost: it binary-searches
// past the newest 64 ids with a GETRANGE a probe, where the skiplist seeks
// in one call. Readers scroll from the top, so it is the rare page.
//
// What a deployment needs: Redis 6.0 or later (SET … KEEPTTL; tested on
// 7.0) with Lua scripting, whose struct library every Redis since 2.6 has.
// No encoding setting matters — zset-max-listpack-*, list-max-listpack-size
// and the like may stay at their defaults or be anything — and any
// maxmemory-policy will do, since an evicted inbox is rebuilt from SQL.
// Scripts are O(1) for a new post; a late id or a removal moves at most
// half an inbox, and adding or removing more than 16 ids at once rewrites
// it: O(InboxMax), tens of microseconds at 1000. Replicas and the AOF get
// the scripts' effects, SETRANGEs of a few bytes.
//
// Upgrading from the sorted sets: inboxes moved from feed:{reader} to
// inbox:{reader}, so that no string command ever meets an old sorted set
// (WRONGTYPE) during a rolling deploy; every reader's first read after it
// rebuilds the inbox from SQL. The old keys are never read again and
// expire with their ttl; to free them at once (on each master of a
// Cluster):
//
//	redis-cli --scan --pattern 'feedd:feed:{*}' | xargs -r -n 500 redis-cli unlink
package rediscache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// DefaultInboxMax is the inbox length when Options.InboxMax is not set.
const DefaultInboxMax = 800

// Options configure a Cache.
type Options struct {
	// Prefix starts every key, e.g. "feedd:", so that tenants and tests
	// can share a server. It should not contain '{': a hash tag in the
	// prefix would put every key in one Cluster slot.
	Prefix string
	// InboxMax is how many post ids an inbox keeps (DefaultInboxMax if
	// <= 0).
	InboxMax int
}

// Cache is a feed.Cache on Redis, safe for concurrent use.
type Cache struct {
	client   redis.UniversalClient
	inboxMax int
	// maxArg is InboxMax formatted and boxed once, because every push of
	// a fan-out passes it.
	maxArg any

	// Key prefixes, built once.
	inboxPrefix, postKey, kvKey string
	likesKey                    string

	push, add, remove, page, bounds    *redis.Script
	compareAndDelete, compareAndExpire *redis.Script
}

var _ feed.Cache = (*Cache)(nil)

// New returns a Cache on client. It does no I/O; Close closes client.
func New(client redis.UniversalClient, opts Options) *Cache {
	if opts.InboxMax <= 0 {
		opts.InboxMax = DefaultInboxMax
	}
	return &Cache{
		client:           client,
		inboxMax:         opts.InboxMax,
		maxArg:           strconv.Itoa(opts.InboxMax),
		inboxPrefix:      opts.Prefix + "inbox:",
		postKey:          opts.Prefix + "post:",
		kvKey:            opts.Prefix + "kv:",
		likesKey:         opts.Prefix + "likes:",
		push:             redis.NewScript(pushScript),
		add:              redis.NewScript(addScript),
		remove:           redis.NewScript(removeScript),
		page:             redis.NewScript(pageScript),
		bounds:           redis.NewScript(boundsScript),
		compareAndDelete: redis.NewScript(compareAndDeleteScript),
		compareAndExpire: redis.NewScript(compareAndExpireScript),
	}
}

// KEYS[1] key; ARGV[1] expected value.
const compareAndDeleteScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`

// KEYS[1] key; ARGV[1] expected value; ARGV[2] ttl in ms, <= 0 for none.
const compareAndExpireScript = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  redis.call('PERSIST', KEYS[1])
end
return 1
`

// Ping checks that Redis answers.
func (c *Cache) Ping(ctx context.Context) error {
	if err := c.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("rediscache: ping: %w", err)
	}
	return nil
}

// Close closes the client.
func (c *Cache) Close() error {
	if err := c.client.Close(); err != nil {
		return fmt.Errorf("rediscache: close: %w", err)
	}
	return nil
}

func (c *Cache) postKeyOf(id int64) string {
	b := make([]byte, 0, len(c.postKey)+22)
	b = append(b, c.postKey...)
	b = append(b, '{')
	b = strconv.AppendInt(b, id, 10)
	return string(append(b, '}'))
}

// checkIDs rejects ids outside 1..MaxID: the scripts compare ids as Lua
// numbers (float64), exact only to 2^53, and 0 is an empty inbox's newest
// id.
func checkIDs(ids ...int64) error {
	for _, id := range ids {
		if id < 1 || id > feed.MaxID {
			return feed.Errorf(feed.EINVALID, "post id %d is out of range: ids are 1 to 2^53-1", id)
		}
	}
	return nil
}

// isNoScript reports whether err says that the node had no script for an
// EVALSHA: after a restart, a SCRIPT FLUSH or a failover.
func isNoScript(err error) bool {
	return errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")
}

// ms renders a ttl in milliseconds for a script; a positive ttl under a
// millisecond rounds up rather than to "no expiry".
func ms(ttl time.Duration) int64 {
	switch {
	case ttl <= 0:
		return 0
	case ttl < time.Millisecond:
		return 1
	}
	return ttl.Milliseconds()
}

// CachedPosts returns the cached posts among ids, with a pipeline of GETs
// (one key each, so that a Cluster can serve them from every node). An
// entry that does not decode is a miss: the caller reloads it from SQL and
// overwrites it.
func (c *Cache) CachedPosts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	got := make(map[int64]feed.Post, len(ids))
	if len(ids) == 0 {
		return got, nil
	}
	cmds := make([]*redis.StringCmd, len(ids))
	p := c.client.Pipeline()
	for i, id := range ids {
		cmds[i] = p.Get(ctx, c.postKeyOf(id))
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("rediscache: get %d posts: %w", len(ids), err)
	}
	for i, cmd := range cmds {
		b, err := cmd.Bytes()
		if err != nil {
			continue // redis.Nil: a miss
		}
		if post, ok := decodePost(b); ok && post.ID == ids[i] {
			got[post.ID] = post
		}
	}
	return got, nil
}

// CachePosts stores posts for ttl (no expiry if ttl <= 0), in one
// pipeline.
func (c *Cache) CachePosts(ctx context.Context, posts []feed.Post, ttl time.Duration) error {
	if len(posts) == 0 {
		return nil
	}
	ttl = max(ttl, 0) // go-redis reads -1 as KEEPTTL
	p := c.client.Pipeline()
	for _, post := range posts {
		p.Set(ctx, c.postKeyOf(post.ID), appendPost(nil, post), ttl)
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("rediscache: cache %d posts: %w", len(posts), err)
	}
	return nil
}

// SetNX sets key to value for ttl (no expiry if ttl <= 0) if key is absent.
func (c *Cache) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	ok, err := c.client.SetNX(ctx, c.kvKey+key, value, max(ttl, 0)).Result()
	if err != nil {
		return false, fmt.Errorf("rediscache: setnx %q: %w", key, err)
	}
	return ok, nil
}

// Get returns key's value and whether it exists.
func (c *Cache) Get(ctx context.Context, key string) (string, bool, error) {
	v, err := c.client.Get(ctx, c.kvKey+key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("rediscache: get %q: %w", key, err)
	}
	return v, true, nil
}

// Set sets key to value for ttl (no expiry if ttl <= 0).
func (c *Cache) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	if err := c.client.Set(ctx, c.kvKey+key, value, max(ttl, 0)).Err(); err != nil {
		return fmt.Errorf("rediscache: set %q: %w", key, err)
	}
	return nil
}

// CompareAndDelete deletes key if its value is value.
func (c *Cache) CompareAndDelete(ctx context.Context, key, value string) (bool, error) {
	n, err := c.compareAndDelete.Run(ctx, c.client, []string{c.kvKey + key}, value).Int()
	if err != nil {
		return false, fmt.Errorf("rediscache: compare and delete %q: %w", key, err)
	}
	return n == 1, nil
}

// CompareAndExpire resets key's ttl if its value is value; a ttl <= 0
// makes it never expire.
func (c *Cache) CompareAndExpire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n, err := c.compareAndExpire.Run(ctx, c.client, []string{c.kvKey + key}, value, ms(ttl)).Int()
	if err != nil {
		return false, fmt.Errorf("rediscache: compare and expire %q: %w", key, err)
	}
	return n == 1, nil
}
