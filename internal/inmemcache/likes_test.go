package inmemcache

import (
	"testing"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

func TestLikeCache(t *testing.T) {
	feedtest.TestLikeCache(t, func(t *testing.T) feedtest.LikeCache {
		c := New(Options{})
		t.Cleanup(func() { c.Close() })
		return c
	})
}
