package rediscache

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// The fan-out's write: a push onto each inbox's pending list, and the
// drains of the lists that grew long.

// drainAt is how many pending ids make a push drain an inbox's pending
// list, at most. Reads drain the lists of active readers; this bounds the
// lists of the others.
const drainAt = 64

// PushToInboxes adds id to the inbox of each reader whose inbox exists:
// one pipelined round trip of LPUSHX onto the pending lists, a plain
// command, where a script costs Redis several times as much. The few
// lists that grew to drainAt are drained into their rings in a second
// round trip.
func (c *Cache) PushToInboxes(ctx context.Context, readers []int64, id int64) error {
	if err := feed.CheckInboxIDs(id); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	if len(readers) == 0 {
		return nil
	}
	var bin any = string(appendID(nil, id)) // boxed once for every command
	keys := c.pendingKeys(readers)
	cmds := make([]*redis.IntCmd, len(keys))
	p := c.client.Pipeline()
	for i, k := range keys {
		cmds[i] = p.LPushX(ctx, k, bin)
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	var full []int64
	for i, cmd := range cmds {
		// The list holds the pending ids and the sentinel.
		if cmd.Val()-1 >= int64(min(drainAt, c.inboxMax)) {
			full = append(full, readers[i])
		}
	}
	if len(full) == 0 {
		return nil
	}
	if err := c.drainInboxes(ctx, full); err != nil {
		return fmt.Errorf("rediscache: push to %d inboxes: %w", len(readers), err)
	}
	return nil
}

// drainInboxes drains readers' pending lists, one EVALSHA per group of
// inboxes, in one pipeline.
func (c *Cache) drainInboxes(ctx context.Context, readers []int64) error {
	calls := c.drainCalls(readers)
	args := []any{c.maxArg}
	cmds, err := c.evalAll(ctx, calls, args, c.drain.EvalSha)
	if err == nil {
		return nil
	}
	// A node that lost its scripts (restart, SCRIPT FLUSH, failover)
	// answers NOSCRIPT; any other error fails the batch, which is safe to
	// redo because a drain is idempotent.
	missed, cmdErr := missedScript(cmds)
	if cmdErr != nil {
		return fmt.Errorf("drain %d inboxes: %w", len(readers), cmdErr)
	}
	missing := make([][]string, len(missed))
	for j, i := range missed {
		missing[j] = calls[i]
	}
	if len(missing) == 0 {
		return fmt.Errorf("drain %d inboxes: %w", len(readers), err)
	}
	// Load the script everywhere so that the next batches find it, then
	// redo the missed calls with EVAL, which needs no cache: even if the
	// load failed on some node, this batch completes.
	loadErr := c.loadScript(ctx, c.drain)
	if _, err := c.evalAll(ctx, missing, args, c.drain.Eval); err != nil {
		return fmt.Errorf("drain %d inboxes (%d calls without the script): %w",
			len(readers), len(missing), errors.Join(err, loadErr))
	}
	return nil
}

// evalAll runs a script once per key list in one pipeline, with EVALSHA
// or EVAL, and returns the commands in the order of calls.
func (c *Cache) evalAll(ctx context.Context, calls [][]string, args []any,
	eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd,
) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(calls))
	p := c.client.Pipeline()
	for i, keys := range calls {
		cmds[i] = eval(ctx, p, keys, args...)
	}
	_, err := p.Exec(ctx)
	return cmds, err
}

// loadScript loads script on every node that may run it. A
// ClusterClient's SCRIPT LOAD already goes to every node, replicas
// included, so that a promoted replica has it too; a Ring's goes to one
// shard, so each is asked.
func (c *Cache) loadScript(ctx context.Context, script *redis.Script) error {
	if ring, ok := c.client.(*redis.Ring); ok {
		return ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
			return script.Load(ctx, shard).Err()
		})
	}
	return script.Load(ctx, c.client).Err()
}
