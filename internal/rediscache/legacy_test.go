package rediscache

import (
	"context"
	_ "embed"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// zsetLayout is the inbox layout this package used before the ring, kept
// for the benchmarks only, to measure the ring against it in the same
// run: one ZSET per inbox, member and score both the post id, a sentinel
// member "0" whose score says complete (0) or not (-1), and a script per
// push that adds and trims with ZREMRANGEBYRANK.
type zsetLayout struct {
	client  redis.UniversalClient
	prefix  string
	trimArg string // -(InboxMax+1)
	push    *redis.Script
}

func newZSetLayout(client redis.UniversalClient, prefix string, inboxMax int) *zsetLayout {
	return &zsetLayout{
		client:  client,
		prefix:  prefix + "feed:",
		trimArg: strconv.Itoa(-(inboxMax + 1)),
		push:    redis.NewScript(zsetPushScript),
	}
}

// zsetPushScript is the old layout's push.
//
//go:embed testdata/zset_push.lua
var zsetPushScript string

func (z *zsetLayout) key(reader int64) string {
	return z.prefix + "{" + strconv.FormatInt(reader, 10) + "}"
}

// fill writes the inbox as the old FillInbox did: DEL, ZADD, in MULTI.
func (z *zsetLayout) fill(ctx context.Context, reader int64, ids []int64) error {
	members := make([]redis.Z, 0, len(ids)+1)
	members = append(members, redis.Z{Score: -1, Member: "0"})
	for _, id := range ids {
		members = append(members, redis.Z{Score: float64(id), Member: strconv.FormatInt(id, 10)})
	}
	key := z.key(reader)
	_, err := z.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.ZAdd(ctx, key, members...)
		return nil
	})
	return err
}

// pushAll is the old PushToInboxes: one EVALSHA per reader, pipelined.
func (z *zsetLayout) pushAll(ctx context.Context, readers []int64, id int64) error {
	args := []any{strconv.FormatInt(id, 10), z.trimArg}
	p := z.client.Pipeline()
	for _, r := range readers {
		z.push.EvalSha(ctx, p, []string{z.key(r)}, args...)
	}
	_, err := p.Exec(ctx)
	if isNoScript(err) {
		if err := z.push.Load(ctx, z.client).Err(); err != nil {
			return err
		}
		return z.pushAll(ctx, readers, id)
	}
	return err
}

// page is the old InboxPage: ZSCORE of the sentinel and a ZRANGE by
// score, in MULTI.
func (z *zsetLayout) page(ctx context.Context, reader, before int64, n int) (int, error) {
	key := z.key(reader)
	start := "+inf"
	if before > 0 {
		start = "(" + strconv.FormatInt(before, 10)
	}
	var ids *redis.StringSliceCmd
	_, err := z.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZScore(ctx, key, "0")
		ids = p.ZRangeArgs(ctx, redis.ZRangeArgs{
			Key: key, Start: start, Stop: "(0", ByScore: true, Rev: true, Count: int64(n),
		})
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	return len(ids.Val()), nil
}
