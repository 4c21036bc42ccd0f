package rediscache

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

func likeSuite(t *testing.T, newClient func() redis.UniversalClient) {
	admin := newClient()
	t.Cleanup(func() { admin.Close() })
	feedtest.TestLikeCache(t, func(t *testing.T) feedtest.LikeCache { return freshCache(t, admin, newClient) })
}

func TestLikeCache(t *testing.T) { likeSuite(t, testServer(t)) }

func TestLikeCacheCluster(t *testing.T) { likeSuite(t, testCluster(t)) }
