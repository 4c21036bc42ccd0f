package inmemcache

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"
)

// beats are the heartbeats of the processes (package census): on the
// embedded default there is one process, so a small map under one lock.
type beats struct {
	mu sync.Mutex
	m  map[string]beatEntry
}

type beatEntry struct {
	body    []byte
	expires int64 // unix ns
}

// Beat stores body as name's heartbeat until ttl from now, replacing
// name's last one.
func (c *Cache) Beat(ctx context.Context, name string, body []byte, ttl time.Duration) error {
	if c.closed.Load() {
		return fmt.Errorf("inmemcache: beat %q: %w", name, errClosed)
	}
	c.beats.mu.Lock()
	defer c.beats.mu.Unlock()
	if c.beats.m == nil {
		c.beats.m = map[string]beatEntry{}
	}
	c.beats.m[name] = beatEntry{body: append([]byte(nil), body...), expires: deadline(c.now(), max(ttl, 1))}
	return nil
}

// Forget deletes name's heartbeat.
func (c *Cache) Forget(ctx context.Context, name string) error {
	if c.closed.Load() {
		return fmt.Errorf("inmemcache: forget beat %q: %w", name, errClosed)
	}
	c.beats.mu.Lock()
	defer c.beats.mu.Unlock()
	delete(c.beats.m, name)
	return nil
}

// Beats returns the heartbeats whose ttl has not run out, by name, and
// deletes the others.
func (c *Cache) Beats(ctx context.Context) (map[string][]byte, error) {
	if c.closed.Load() {
		return nil, fmt.Errorf("inmemcache: beats: %w", errClosed)
	}
	now := c.now().UnixNano()
	c.beats.mu.Lock()
	defer c.beats.mu.Unlock()
	maps.DeleteFunc(c.beats.m, func(_ string, e beatEntry) bool { return expired(e.expires, now) })
	out := make(map[string][]byte, len(c.beats.m))
	for name, e := range c.beats.m {
		out[name] = e.body
	}
	return out, nil
}
