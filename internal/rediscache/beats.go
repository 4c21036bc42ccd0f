package rediscache

import (
	"context"
	"fmt"
	"time"
)

// The heartbeats of the deployment's processes (package census) are the
// fields of one hash, beats, each value stamped with its deadline by
// lua/beat_put.lua: one key, so that listing them is one HGETALL on one
// node of a Cluster rather than a SCAN of every master.

// Beat stores body as name's heartbeat until ttl from now (by Redis's
// clock), replacing name's last one.
func (c *Cache) Beat(ctx context.Context, name string, body []byte, ttl time.Duration) error {
	if err := c.beatPut.Run(ctx, c.client, []string{c.beatsKey}, name, body, max(ms(ttl), 1)).Err(); err != nil {
		return fmt.Errorf("rediscache: beat %q: %w", name, err)
	}
	return nil
}

// Forget deletes name's heartbeat: a process that stops says so rather
// than waiting for its ttl.
func (c *Cache) Forget(ctx context.Context, name string) error {
	if err := c.client.HDel(ctx, c.beatsKey, name).Err(); err != nil {
		return fmt.Errorf("rediscache: forget beat %q: %w", name, err)
	}
	return nil
}

// Beats returns the heartbeats whose ttl has not run out, by name, and
// deletes the others.
func (c *Cache) Beats(ctx context.Context) (map[string][]byte, error) {
	flat, err := c.beatList.Run(ctx, c.client, []string{c.beatsKey}).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("rediscache: beats: %w", err)
	}
	out := make(map[string][]byte, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		out[flat[i]] = []byte(flat[i+1])
	}
	return out, nil
}
