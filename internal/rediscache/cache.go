// Package rediscache implements feed.Cache on Redis through go-redis: the
// home-timeline inboxes, the post cache and the small key-value surface
// that locks and rate gates use.
//
// It is built for Redis Cluster from the first line: every command and
// every script touches one key, so any redis.UniversalClient works — a
// single server, a Sentinel failover client, a Cluster or a Ring. Batches
// (a fan-out push, a page of posts to hydrate) are pipelines of
// single-key commands, which a ClusterClient splits by slot and sends to
// the nodes in parallel; nothing uses MGET or a multi-key DEL.
//
// Keys, under Options.Prefix:
//
//	feed:{<reader>}  an inbox: a ZSET of post ids, member and score both the id
//	post:{<id>}      a cached post, in the compact encoding of post.go
//	kv:<key>         a KV key, as the caller named it
//
// Every inbox holds a sentinel member "0" next to its ids. Its presence
// means the inbox exists — so an empty feed is remembered as an inbox
// holding only the sentinel — and its score says whether the inbox is
// complete (0) or not (-1). Post ids are positive, so the sentinel always
// has rank 0 and a score range that stops above 0 never returns it.
package rediscache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// DefaultInboxMax is the inbox length when Options.InboxMax is not set.
const DefaultInboxMax = 800

// The sentinel member of every inbox and the scores that say whether the
// inbox is complete.
const (
	sentinel        = "0"
	scoreComplete   = 0
	scoreIncomplete = -1
)

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
	// trimArg is -(InboxMax+1), the scripts' trim bound, formatted and
	// boxed once because every push of a fan-out passes it.
	trimArg any

	// Key prefixes, built once.
	feedKey, postKey, kvKey string

	push, add, compareAndDelete, compareAndExpire *redis.Script
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
		trimArg:          strconv.Itoa(-(opts.InboxMax + 1)),
		feedKey:          opts.Prefix + "feed:",
		postKey:          opts.Prefix + "post:",
		kvKey:            opts.Prefix + "kv:",
		push:             redis.NewScript(pushScript),
		add:              redis.NewScript(addScript),
		compareAndDelete: redis.NewScript(compareAndDeleteScript),
		compareAndExpire: redis.NewScript(compareAndExpireScript),
	}
}

// pushScript adds one id to one inbox if it exists, then trims the oldest
// ids past InboxMax and marks the inbox incomplete if it did. It is the
// fan-out's inner loop, so it makes as few calls as it can: the sentinel's
// score tells both existence and state, and a trim by a negative rank
// needs no ZCARD.
//
// KEYS[1] inbox; ARGV[1] post id; ARGV[2] -(InboxMax+1), the rank of the
// last id to trim: ranks 1 .. -(InboxMax+1) are the ids past InboxMax
// (rank 0 is the sentinel), an empty range unless the inbox overflows.
const pushScript = `
local state = redis.call('ZSCORE', KEYS[1], '0')
if not state then
  return 0
end
if redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1]) == 0 then
  return 1
end
if redis.call('ZREMRANGEBYRANK', KEYS[1], 1, ARGV[2]) > 0 and tonumber(state) == 0 then
  redis.call('ZADD', KEYS[1], -1, '0')
end
return 1
`

// addScript adds ids to one inbox if it exists, trims it as pushScript
// does, and marks it incomplete if it trimmed or if asked to.
//
// KEYS[1] inbox; ARGV[1] -(InboxMax+1); ARGV[2] "1" to mark incomplete;
// ARGV[3...] post ids.
const addScript = `
if not redis.call('ZSCORE', KEYS[1], '0') then
  return 0
end
-- ZADD in chunks: unpack of thousands of values overflows Lua's stack.
local z = {}
for i = 3, #ARGV do
  z[#z + 1] = ARGV[i]
  z[#z + 1] = ARGV[i]
  if #z >= 1000 or i == #ARGV then
    redis.call('ZADD', KEYS[1], unpack(z))
    z = {}
  end
end
if redis.call('ZREMRANGEBYRANK', KEYS[1], 1, ARGV[1]) > 0 or ARGV[2] == '1' then
  redis.call('ZADD', KEYS[1], -1, '0')
end
return 1
`

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

// inboxKey returns the key of reader's inbox. The reader id is the hash
// tag, so that an inbox's commands, and a script on it, stay on one slot.
func (c *Cache) inboxKey(reader int64) string {
	return string(c.appendInboxKey(make([]byte, 0, len(c.feedKey)+22), reader))
}

func (c *Cache) appendInboxKey(b []byte, reader int64) []byte {
	b = append(b, c.feedKey...)
	b = append(b, '{')
	b = strconv.AppendInt(b, reader, 10)
	return append(b, '}')
}

// inboxKeys returns the keys of readers' inboxes, all cut from one string
// so that a batch of a thousand keys costs a handful of allocations.
func (c *Cache) inboxKeys(readers []int64) []string {
	var all strings.Builder
	all.Grow(len(readers) * (len(c.feedKey) + 12))
	ends := make([]int, len(readers))
	var scratch [32]byte
	for i, r := range readers {
		all.Write(c.appendInboxKey(scratch[:0], r))
		ends[i] = all.Len()
	}
	s := all.String()
	keys := make([]string, len(readers))
	start := 0
	for i, end := range ends {
		keys[i] = s[start:end]
		start = end
	}
	return keys
}

func (c *Cache) postKeyOf(id int64) string {
	b := make([]byte, 0, len(c.postKey)+22)
	b = append(b, c.postKey...)
	b = append(b, '{')
	b = strconv.AppendInt(b, id, 10)
	return string(append(b, '}'))
}

// checkIDs rejects ids outside 1..MaxID: a larger one is not exact as a
// float64 score, and 0 is the sentinel.
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

// InboxPage returns up to n ids of reader's inbox strictly below before (0:
// from the newest), newest first, in one round trip.
func (c *Cache) InboxPage(ctx context.Context, reader, before int64, n int) (feed.InboxPage, error) {
	key := c.inboxKey(reader)
	start := "+inf"
	if before > 0 {
		start = "(" + strconv.FormatInt(before, 10)
	}
	var (
		state *redis.FloatCmd
		ids   *redis.StringSliceCmd
	)
	// MULTI so that the ids and the state come from the same version of an
	// inbox that FillInbox may be replacing. Members are read without
	// scores: a member is its score, and scores would double the reply.
	_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		state = p.ZScore(ctx, key, sentinel)
		if n > 0 {
			ids = p.ZRangeArgs(ctx, redis.ZRangeArgs{
				Key: key, Start: start, Stop: "(0", ByScore: true, Rev: true, Count: int64(n),
			})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return feed.InboxPage{}, fmt.Errorf("rediscache: page inbox %d: %w", reader, err)
	}
	score, err := state.Result()
	if errors.Is(err, redis.Nil) {
		return feed.InboxPage{}, nil
	}
	page := feed.InboxPage{Exists: true, Complete: score == scoreComplete}
	if ids != nil {
		if page.IDs, err = parseIDs(ids.Val()); err != nil {
			return feed.InboxPage{}, fmt.Errorf("rediscache: page inbox %d: %w", reader, err)
		}
	}
	return page, nil
}

func parseIDs(members []string) ([]int64, error) {
	ids := make([]int64, len(members))
	for i, m := range members {
		id, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("inbox member %q is not a post id: %w", m, err)
		}
		ids[i] = id
	}
	return ids, nil
}

// FillInbox creates or replaces reader's inbox with the newest InboxMax of
// ids, atomically; it is complete only if complete is set and nothing was
// trimmed.
func (c *Cache) FillInbox(ctx context.Context, reader int64, ids []int64, complete bool, ttl time.Duration) error {
	if err := checkIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: fill inbox %d: %w", reader, err)
	}
	sorted := slices.Compact(slices.Sorted(slices.Values(ids)))
	if over := len(sorted) - c.inboxMax; over > 0 {
		sorted = sorted[over:]
		complete = false
	}
	members := make([]redis.Z, 0, len(sorted)+1)
	members = append(members, redis.Z{Score: scoreComplete, Member: sentinel})
	if !complete {
		members[0].Score = scoreIncomplete
	}
	for _, id := range sorted {
		members = append(members, redis.Z{Score: float64(id), Member: strconv.FormatInt(id, 10)})
	}
	key := c.inboxKey(reader)
	_, err := c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.ZAdd(ctx, key, members...)
		if ttl > 0 {
			p.PExpire(ctx, key, ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rediscache: fill inbox %d with %d ids: %w", reader, len(sorted), err)
	}
	return nil
}

// AddToInbox adds ids to reader's inbox if it exists, trims it, and marks
// it incomplete if markIncomplete is set.
func (c *Cache) AddToInbox(ctx context.Context, reader int64, ids []int64, markIncomplete bool) error {
	if err := checkIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: add to inbox %d: %w", reader, err)
	}
	args := make([]any, 0, 2+len(ids))
	args = append(args, c.trimArg, "0")
	if markIncomplete {
		args[1] = "1"
	}
	for _, id := range ids {
		args = append(args, strconv.FormatInt(id, 10))
	}
	if err := c.add.Run(ctx, c.client, []string{c.inboxKey(reader)}, args...).Err(); err != nil {
		return fmt.Errorf("rediscache: add %d ids to inbox %d: %w", len(ids), reader, err)
	}
	return nil
}

// PushToInboxes adds id to the inbox of each reader whose inbox exists, in
// one pipelined round trip of one EVALSHA per reader.
func (c *Cache) PushToInboxes(ctx context.Context, readers []int64, id int64) error {
	if err := checkIDs(id); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	if len(readers) == 0 {
		return nil
	}
	keys := c.inboxKeys(readers)
	// One argument list for every reader: go-redis copies it into each
	// command, so sharing it saves a slice and a boxed id per reader.
	args := []any{strconv.FormatInt(id, 10), c.trimArg}

	cmds, err := c.pushAll(ctx, keys, args, c.push.EvalSha)
	if err == nil {
		return nil
	}
	// A node that lost its scripts (restart, SCRIPT FLUSH, failover)
	// answers NOSCRIPT; any other error fails the batch, which is safe to
	// redo because a push is idempotent.
	var missing []string
	for i, cmd := range cmds {
		switch err := cmd.Err(); {
		case err == nil:
		case isNoScript(err):
			missing = append(missing, keys[i])
		default:
			return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
		}
	}
	if len(missing) == 0 {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	// Load the script everywhere so that the next batches find it, then
	// redo the missed inboxes with EVAL, which needs no cache: even if the
	// load failed on some node, this batch completes.
	loadErr := c.loadPushScript(ctx)
	if _, err := c.pushAll(ctx, missing, args, c.push.Eval); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes (%d without the script): %w",
			len(readers), len(missing), errors.Join(err, loadErr))
	}
	return nil
}

// pushAll runs the push script on every key in one pipeline, with EVALSHA
// or EVAL, and returns the commands in the order of keys.
func (c *Cache) pushAll(ctx context.Context, keys []string, args []any,
	eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd,
) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(keys))
	p := c.client.Pipeline()
	for i := range keys {
		cmds[i] = eval(ctx, p, keys[i:i+1:i+1], args...)
	}
	_, err := p.Exec(ctx)
	return cmds, err
}

// loadPushScript loads the push script on every node that may run it. A
// ClusterClient's SCRIPT LOAD already goes to every node, replicas
// included, so that a promoted replica has it too; a Ring's goes to one
// shard, so each is asked.
func (c *Cache) loadPushScript(ctx context.Context) error {
	if ring, ok := c.client.(*redis.Ring); ok {
		return ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
			return c.push.Load(ctx, shard).Err()
		})
	}
	return c.push.Load(ctx, c.client).Err()
}

// RemoveFromInbox removes ids from reader's inbox.
func (c *Cache) RemoveFromInbox(ctx context.Context, reader int64, ids []int64) error {
	// The check also keeps the sentinel, "0", from being removed.
	if err := checkIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: remove from inbox %d: %w", reader, err)
	}
	if len(ids) == 0 {
		return nil
	}
	members := make([]any, len(ids))
	for i, id := range ids {
		members[i] = strconv.FormatInt(id, 10)
	}
	if err := c.client.ZRem(ctx, c.inboxKey(reader), members...).Err(); err != nil {
		return fmt.Errorf("rediscache: remove %d ids from inbox %d: %w", len(ids), reader, err)
	}
	return nil
}

// InboxBounds returns the newest and oldest id in reader's inbox, in one
// round trip.
func (c *Cache) InboxBounds(ctx context.Context, reader int64) (newest, oldest int64, exists bool, err error) {
	key := c.inboxKey(reader)
	var state *redis.FloatCmd
	var first, last *redis.StringSliceCmd
	_, err = c.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		state = p.ZScore(ctx, key, sentinel)
		first = p.ZRange(ctx, key, 1, 1) // rank 0 is the sentinel
		last = p.ZRange(ctx, key, -1, -1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, false, fmt.Errorf("rediscache: bounds of inbox %d: %w", reader, err)
	}
	if errors.Is(state.Err(), redis.Nil) {
		return 0, 0, false, nil
	}
	if len(first.Val()) == 0 { // only the sentinel
		return 0, 0, true, nil
	}
	ids, err := parseIDs([]string{last.Val()[0], first.Val()[0]})
	if err != nil {
		return 0, 0, false, fmt.Errorf("rediscache: bounds of inbox %d: %w", reader, err)
	}
	return ids[0], ids[1], true, nil
}

// DropInbox deletes reader's inbox.
func (c *Cache) DropInbox(ctx context.Context, reader int64) error {
	if err := c.client.Del(ctx, c.inboxKey(reader)).Err(); err != nil {
		return fmt.Errorf("rediscache: drop inbox %d: %w", reader, err)
	}
	return nil
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
