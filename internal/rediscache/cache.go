// Package rediscache implements feed.Cache on Redis through go-redis: the
// home-timeline inboxes, the post cache and the small key-value surface
// that locks and rate gates use.
//
// It is built for Redis Cluster from the first line: every command and
// every script touches the keys of one hash tag, named in KEYS, so any
// redis.UniversalClient works — a single server, a Sentinel failover
// client, a Cluster or a Ring. Batches (a fan-out push, a page of posts to
// hydrate) are pipelines of such commands, which a ClusterClient splits
// by slot and sends to the nodes in parallel; nothing uses MGET, and the
// one multi-key DEL (an inbox's two keys) stays within one tag.
//
// Keys, under Options.Prefix:
//
//	inbox2:{g<n>}:<reader>    an inbox's ring of post ids: one string (lua/ring.lua)
//	inbox2:{g<n>}:<reader>:p  its pending list: ids pushed since the last drain
//	post:{<id>}              a cached post, in the compact encoding of post.go
//	kv:<key>                 a KV key, as the caller named it
//	likes:…                  like counters and recent sets (likes.go)
//	beats                    the processes' heartbeats: one hash (beats.go)
//
// # Inboxes
//
// An inbox is two keys of one hash tag. Its ring is one Redis string: a
// 21-byte header (format, complete or not, ring size, head, count, newest
// id) and a ring of post ids, 7 big-endian bytes of two's complement each
// (|id| < 2^53; negative before 2025), newest first from the head. lua/ring.lua defines the layout, the
// one place that does: every inbox script, FillInbox's included, is built
// on it (lua.go says how). Its pending list is a Redis list of
// the ids pushed since it was last drained, in arrival order, ending in a
// sentinel element so that the list exists while nothing is pending.
//
// A fan-out push is one plain LPUSHX onto each follower's pending list: it
// does nothing where there is no inbox, and costs Redis about what the
// ZADD of the baseline does, where any script costs several times that (a
// script call and each redis.call in it pay for a Lua context; the push
// script this replaced spent 7 µs an inbox). Every other inbox operation
// but a fill or a drop is a script that first drains the pending list into
// the ring: sorts the ids, drops repeats and adds them — as one block
// written before the head when they are all newer than the newest (the
// usual case), else one by one or by a merge. A reader's next page therefore pays once for the
// posts pushed since its last one; a push that finds a list grown to
// drainAt ids drains it at once (in one script call per group of such
// inboxes), which bounds the lists of readers who do not read. A ring
// whose list is missing (evicted alone, or written by an older version)
// may have missed pushes: it reads as absent and is rebuilt from SQL.
//
// In the ring, a late id (fan-outs finishing out of order) or a repeated
// one is found by binary search and the ids on its shorter side move one
// slot, so the inbox always holds exactly what a sorted set would. Reads
// are a script, one round trip: a first page is one GETRANGE; a later one
// finds its cursor among the newest 64 ids or by binary search. The
// inbox's ttl is set on both keys when it is filled; pushes and drains
// keep it.
//
// The hash tag is the reader's group (Options.InboxGroups, by a hash of
// the reader id), not the reader, so that the drains of a fan-out batch
// take many inboxes in one script call.
//
// Why not the sorted set this replaced (member and score the id, a
// sentinel member "0" for the state; bench_test.go keeps it for
// comparison): at InboxMax 1000 it is a skiplist of about 118 bytes an id.
// Raising zset-max-listpack-entries makes it about 20 bytes, but ZADD and
// ZREMRANGEBYRANK into a 1000-entry listpack are O(n) on parsed scores and
// pushes fell to about 15k inboxes/s. Bucket keys of at most 128 entries
// (listpacks) cost about 22 bytes an id plus a key and an index per
// bucket to keep in step. A LIST alone (LPUSH, LTRIM) costs about 10
// bytes an id but can seek neither by id nor by offset, so cursors and
// late ids would need scripts on a structure that is slow to search: it
// serves here only as the short, unsorted queue in front of the ring. A
// ring of fixed-width ids is the least memory and the cheapest search,
// and depends on no encoding threshold.
//
// Measured end to end by feedd bench (one post to 1,000,000 materialized
// inboxes, Redis 7.0, 2 shared cores): the ring's push script reached 0.33
// of the raw pipelined ZADD baseline; LPUSHX onto pending lists 1.15 of
// it (3.0 s for the million). LAYOUT.md has the micro-benchmarks.
//
// What a deployment needs: Redis 6.0 or later (SET … KEEPTTL; tested on
// 7.0) with Lua scripting, whose struct library every Redis since 2.6 has.
// No encoding setting matters — zset-max-listpack-*, list-max-listpack-size
// and the like may stay at their defaults or be anything — and any
// maxmemory-policy will do, since an evicted inbox is rebuilt from SQL.
// Replicas and the AOF get the pushes and the scripts' effects: LPUSHX,
// SETRANGEs of a few bytes, an LTRIM.
//
// Upgrading: inboxes moved from inbox:{g<n>}:<reader> (format 1, whose
// slots were unsigned and held no id below 0), before that from
// inbox:{reader} (a ring alone) and feed:{reader} (a sorted set), to the
// keys above, so that no command meets an old layout during a rolling
// deploy: a version that reads slots unsigned would take the negative id
// of a post from before 2025 for one far in the future. Every reader's
// first read after it rebuilds the inbox from SQL (author lists alike).
// The old keys are never read again and expire with their ttl; to free
// them at once (on each master of a Cluster):
//
//	redis-cli --scan --pattern 'feedd:inbox:{*' | xargs -r -n 500 redis-cli unlink
//	redis-cli --scan --pattern 'feedd:ob:inbox:{*' | xargs -r -n 500 redis-cli unlink
//	redis-cli --scan --pattern 'feedd:ob:inbox2:{*' | xargs -r -n 500 redis-cli unlink
//	redis-cli --scan --pattern 'feedd:feed:{*}' | xargs -r -n 500 redis-cli unlink
//
// The "ob:inbox2:" pattern frees the author lists' keys from before they
// moved from the prefix "ob:" to AuthorListPrefix.
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

// DefaultInboxGroups is the number of inbox hash tags when
// Options.InboxGroups is not set.
const DefaultInboxGroups = 256

// AuthorListPrefix follows the deployment's prefix on the keys of the
// author lists, a second Cache of inboxes beside the readers' (hybrid
// fan-out): "<prefix>al:inbox2:{g<group>}:<author>". It was once "ob:"
// (the lists were called outboxes); an upgraded process does
// not read the old keys, and rebuilds each list from SQL on its first
// read, as after any miss. The old keys expire with their ttl, or free
// them at once as "Upgrading" says.
const AuthorListPrefix = "al:"

// Options configure a Cache.
type Options struct {
	// Prefix starts every key, e.g. "feedd:", so that tenants and tests
	// can share a server. It should not contain '{': a hash tag in the
	// prefix would put every key in one Cluster slot.
	Prefix string
	// InboxMax is how many post ids an inbox keeps (feed.DefaultInboxMax
	// if <= 0).
	InboxMax int
	// InboxGroups is how many hash tags inboxes are spread over
	// (DefaultInboxGroups if <= 0). A fan-out pushes into the inboxes of
	// one group with one script call, so fewer groups make pushes cheaper
	// and more groups spread inboxes over more Cluster slots. Changing it
	// renames every inbox: each is rebuilt from SQL at its reader's next
	// read.
	InboxGroups int
	// InboxTTL is the ttl a read gives back to an inbox that holds ids, so
	// that only an inbox nobody reads for this long expires (0: reads leave
	// ttls alone, and an inbox lives as long as its fill said).
	InboxTTL time.Duration
}

// Cache is a feed.Cache on Redis, safe for concurrent use.
type Cache struct {
	client      redis.UniversalClient
	inboxMax    int
	inboxGroups int
	// maxArg is InboxMax formatted and boxed once, because every push of
	// a fan-out passes it.
	maxArg any
	// ttlArg is InboxTTL in ms, formatted once, for every read.
	ttlArg any

	// Key prefixes, built once.
	inboxPrefix, postKey, kvKey string
	likesKey                    string
	notifyKey                   string

	fill, drain, add, remove, page, bounds *redis.Script
	compareAndDelete, compareAndExpire     *redis.Script
	postSet                                *redis.Script
	beatsKey                               string
	beatPut, beatList                      *redis.Script
}

var _ feed.Cache = (*Cache)(nil)

// New returns a Cache on client. It does no I/O; Close closes client.
func New(client redis.UniversalClient, opts Options) *Cache {
	if opts.InboxMax <= 0 {
		opts.InboxMax = feed.DefaultInboxMax
	}
	if opts.InboxGroups <= 0 {
		opts.InboxGroups = DefaultInboxGroups
	}
	return &Cache{
		client:           client,
		inboxMax:         opts.InboxMax,
		inboxGroups:      opts.InboxGroups,
		maxArg:           strconv.Itoa(opts.InboxMax),
		ttlArg:           strconv.FormatInt(max(opts.InboxTTL.Milliseconds(), 0), 10),
		inboxPrefix:      opts.Prefix + "inbox2:", // the layout's version: see "Upgrading"
		postKey:          opts.Prefix + "post:",
		kvKey:            opts.Prefix + "kv:",
		likesKey:         opts.Prefix + "likes:",
		notifyKey:        opts.Prefix + "st:",
		fill:             redis.NewScript(fillScript),
		drain:            redis.NewScript(drainScript),
		add:              redis.NewScript(addScript),
		remove:           redis.NewScript(removeScript),
		page:             redis.NewScript(pageScript),
		bounds:           redis.NewScript(boundsScript),
		compareAndDelete: redis.NewScript(compareAndDeleteScript),
		compareAndExpire: redis.NewScript(compareAndExpireScript),
		postSet:          redis.NewScript(postSetScript),
		beatsKey:         opts.Prefix + "beats",
		beatPut:          redis.NewScript(beatPutScript),
		beatList:         redis.NewScript(beatListScript),
	}
}

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

// isNoScript reports whether err says that the node had no script for an
// EVALSHA: after a restart, a SCRIPT FLUSH or a failover.
func isNoScript(err error) bool {
	return errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT")
}

// missedScript returns the indexes of a pipeline's script calls that
// failed only because their node lacked the script, to be redone with
// EVAL, or the first other error.
func missedScript(cmds []*redis.Cmd) ([]int, error) {
	var missed []int
	for i, cmd := range cmds {
		switch err := cmd.Err(); {
		case err == nil:
		case isNoScript(err):
			missed = append(missed, i)
		default:
			return nil, err
		}
	}
	return missed, nil
}

// scriptCall is one run of a script: its keys and arguments.
type scriptCall struct {
	keys []string
	args []any
}

// runEach runs script once per call in one pipeline, each call on its own
// keys' slot. Calls whose node lacked the script (after a restart, a
// SCRIPT FLUSH or a failover) are run again with EVAL once the script is
// loaded; any other error fails the whole, so the calls must be safe to
// repeat.
func (c *Cache) runEach(ctx context.Context, script *redis.Script, calls []scriptCall) error {
	cmds := make([]*redis.Cmd, len(calls))
	p := c.client.Pipeline()
	for i, call := range calls {
		cmds[i] = script.EvalSha(ctx, p, call.keys, call.args...)
	}
	if _, err := p.Exec(ctx); err == nil {
		return nil
	}
	missed, err := missedScript(cmds)
	if err != nil {
		return err
	}
	loadErr := c.loadScript(ctx, script)
	p = c.client.Pipeline()
	for _, i := range missed {
		script.Eval(ctx, p, calls[i].keys, calls[i].args...)
	}
	if _, err := p.Exec(ctx); err != nil {
		return errors.Join(err, loadErr)
	}
	return nil
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
