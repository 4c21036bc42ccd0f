// Package lru is a small in-process cache with a bound on its entries and
// a time to live per entry. feedd keeps the hottest post bodies in one, in
// front of Redis: when a celebrity's post key expires in Redis, or Redis
// stumbles, the thousands of readers of that post in this process keep
// being served from memory instead of stampeding to SQL together.
package lru

import (
	"container/list"
	"sync"
	"time"
)

// Cache is safe for concurrent use. A nil *Cache holds nothing.
type Cache[K comparable, V any] struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	items map[K]*list.Element // guarded by mu
	order *list.List          // most recently used at the front; guarded by mu
}

type entry[K comparable, V any] struct {
	key     K
	val     V
	expires time.Time
}

// New returns a cache of at most max entries, each living ttl; now nil
// means time.Now. max <= 0 returns nil: no cache.
func New[K comparable, V any](max int, ttl time.Duration, now func() time.Time) *Cache[K, V] {
	if max <= 0 || ttl <= 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Cache[K, V]{max: max, ttl: ttl, now: now, items: map[K]*list.Element{}, order: list.New()}
}

// Get returns k's value if present and not expired.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return zero, false
	}
	e := el.Value.(*entry[K, V])
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.items, k)
		return zero, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

// Put stores v under k for the cache's ttl, evicting the least recently
// used entry when full.
func (c *Cache[K, V]) Put(k K, v V) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.put(k, v)
}

// Update calls f with k's value (ok false when absent or expired) and
// stores what f returns if f says so, all under one lock: for a writer
// that must not overwrite a newer value.
func (c *Cache[K, V]) Update(k K, f func(old V, ok bool) (V, bool)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var old V
	el, ok := c.items[k]
	if ok {
		e := el.Value.(*entry[K, V])
		if ok = c.now().Before(e.expires); ok {
			old = e.val
		}
	}
	if v, put := f(old, ok); put {
		c.put(k, v)
	}
}

// GetEach calls f with the index and value of each of keys present and
// not expired, under one lock and one reading of the clock: for a caller
// that looks up hundreds of keys at once.
func (c *Cache[K, V]) GetEach(keys []K, f func(i int, v V)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for i, k := range keys {
		el, ok := c.items[k]
		if !ok {
			continue
		}
		e := el.Value.(*entry[K, V])
		if !now.Before(e.expires) {
			c.order.Remove(el)
			delete(c.items, k)
			continue
		}
		c.order.MoveToFront(el)
		f(i, e.val)
	}
}

// Delete drops k's entry, if any.
func (c *Cache[K, V]) Delete(k K) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.Remove(el)
		delete(c.items, k)
	}
}

// put stores v under k; c.mu is held.
func (c *Cache[K, V]) put(k K, v V) {
	exp := c.now().Add(c.ttl)
	if el, ok := c.items[k]; ok {
		e := el.Value.(*entry[K, V])
		e.val, e.expires = v, exp
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*entry[K, V]).key)
	}
	c.items[k] = c.order.PushFront(&entry[K, V]{key: k, val: v, expires: exp})
}

// Len returns how many entries are held (expired ones included until
// they are met or evicted).
func (c *Cache[K, V]) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
