package inmemcache

import (
	"testing"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
)

func TestLikeCache(t *testing.T) {
	feedtest.TestLikeCache(t, func(t *testing.T) feed.LikeCache {
		c := New(Options{})
		t.Cleanup(func() { c.Close() })
		return c
	})
}
