package feedtest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// ErrCacheDown is what a FailingCache's calls return while it is down.
var ErrCacheDown = errors.New("cache: connection refused")

// FailingCache is a cache whose key-value calls (Get, Set, SetNX) fail
// with ErrCacheDown while Down is set: a shared cache lost under a
// service. It counts the Gets.
type FailingCache struct {
	feed.Cache
	Down atomic.Bool
	Gets atomic.Int64
}

func (c *FailingCache) Get(ctx context.Context, key string) (string, bool, error) {
	c.Gets.Add(1)
	if c.Down.Load() {
		return "", false, ErrCacheDown
	}
	return c.Cache.Get(ctx, key)
}

func (c *FailingCache) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	if c.Down.Load() {
		return ErrCacheDown
	}
	return c.Cache.Set(ctx, key, value, ttl)
}

func (c *FailingCache) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if c.Down.Load() {
		return false, ErrCacheDown
	}
	return c.Cache.SetNX(ctx, key, value, ttl)
}
