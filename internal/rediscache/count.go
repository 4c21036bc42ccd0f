package rediscache

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// CommandCounter counts the commands a client sends, by name (a pipeline's
// commands one by one, a script as its EVALSHA), so that the cost of an
// API call in Redis operations is measured (docs/capacity.md) and visible
// in production (feedd_redis_commands_total). On a Cluster a command
// counts once however often go-redis redirects or retries it.
type CommandCounter struct {
	names sync.Map // name -> *atomic.Int64
}

// CountCommands installs a CommandCounter on client.
func CountCommands(client redis.UniversalClient) *CommandCounter {
	c := &CommandCounter{}
	client.AddHook(c)
	return c
}

func (c *CommandCounter) add(name string) {
	v, ok := c.names.Load(name)
	if !ok {
		v, _ = c.names.LoadOrStore(name, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// Counts returns the commands sent so far, by lower-case name.
func (c *CommandCounter) Counts() map[string]int64 {
	out := map[string]int64{}
	c.names.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

func (c *CommandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *CommandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd.Name())
		return next(ctx, cmd)
	}
}

func (c *CommandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.add(cmd.Name())
		}
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*CommandCounter)(nil)
