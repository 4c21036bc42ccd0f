package rediscache

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

func likeSuite(t *testing.T, newClient func() redis.UniversalClient) {
	admin := newClient()
	t.Cleanup(func() { admin.Close() })
	feedtest.TestLikeCache(t, func(t *testing.T) feedtest.LikeCache {
		prefix := randomPrefix()
		c := New(newClient(), Options{Prefix: prefix})
		t.Cleanup(func() {
			c.Close()
			deleteKeys(t, admin, prefix)
		})
		return c
	})
}

func TestLikeCache(t *testing.T) { likeSuite(t, testServer(t)) }

func TestLikeCacheCluster(t *testing.T) { likeSuite(t, testCluster(t)) }
