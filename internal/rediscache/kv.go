package rediscache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// The feed.KV surface that locks and rate gates use: kv:<key>, one key a
// call.

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

// GetEx returns key's value and whether it exists, and resets its ttl
// (Redis's GETEX, one step).
func (c *Cache) GetEx(ctx context.Context, key string, ttl time.Duration) (string, bool, error) {
	v, err := c.client.GetEx(ctx, c.kvKey+key, max(ttl, 0)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("rediscache: getex %q: %w", key, err)
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
