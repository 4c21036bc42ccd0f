// Package inmemcache implements feed.Cache inside the process: the embedded
// default that feedd runs with when no Redis is configured. It behaves as
// package rediscache does (both pass the suite in package feedtest) but
// lives and dies with the process, which the contract allows: everything in
// a cache is rebuilt from SQL.
package inmemcache

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

const (
	// shards splits every map so that a fan-out pushing into thousands of
	// inboxes does not serialize readers behind one lock.
	shards = 64
	// sweepEvery is how often the janitor frees expired entries that
	// nobody touched again (touched ones expire lazily, at once).
	sweepEvery = time.Minute
)

// Options configure a Cache.
type Options struct {
	// InboxMax is how many ids an inbox keeps (feed.DefaultInboxMax if <= 0).
	InboxMax int
	// InboxTTL is the ttl a read gives back to an inbox that holds ids,
	// once a 32nd of it has passed, so that only an inbox nobody reads for
	// this long expires (0: reads leave ttls alone). As rediscache's.
	InboxTTL time.Duration
	// Now reads the clock for ttls (time.Now if nil).
	Now func() time.Time
}

// Cache is an in-process feed.Cache, safe for concurrent use. New starts a
// janitor goroutine; Close stops it.
type Cache struct {
	inboxMax int
	inboxTTL time.Duration
	now      func() time.Time
	seed     maphash.Seed

	inboxes [shards]inboxShard
	posts   [shards]postShard
	kv      [shards]kvShard
	likes   [shards]likeShard
	hub     notifyHub
	beats   beats

	closed    atomic.Bool
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

var _ feed.Cache = (*Cache)(nil)

// errClosed is what every call returns after Close, as a closed Redis
// client does, so that a use-after-close bug shows up on the embedded
// default too.
var errClosed = errors.New("inmemcache: cache is closed")

type inboxShard struct {
	mu sync.Mutex
	m  map[int64]*inbox
}

// inbox holds ids in ascending order, unlike the pages it serves: the
// common write is a new post, the newest id, and appending it is cheap.
type inbox struct {
	ids      []int64
	complete bool
	expires  int64 // unix nanoseconds; 0: never
}

type postShard struct {
	mu sync.Mutex
	m  map[int64]postEntry
}

type postEntry struct {
	post    feed.Post
	expires int64
}

type kvShard struct {
	mu sync.Mutex
	m  map[string]kvEntry
}

type kvEntry struct {
	value   string
	expires int64
}

// New returns an empty cache and starts its janitor.
func New(opts Options) *Cache {
	if opts.InboxMax <= 0 {
		opts.InboxMax = feed.DefaultInboxMax
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Cache{
		inboxMax: opts.InboxMax,
		inboxTTL: opts.InboxTTL,
		now:      opts.Now,
		seed:     maphash.MakeSeed(),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	for i := range shards {
		c.inboxes[i].m = make(map[int64]*inbox)
		c.posts[i].m = make(map[int64]postEntry)
		c.kv[i].m = make(map[string]kvEntry)
		c.likes[i].reset()
	}
	go c.janitor()
	return c
}

// Ping reports whether the cache is open.
func (c *Cache) Ping(ctx context.Context) error {
	if c.closed.Load() {
		return errClosed
	}
	return nil
}

// Close stops the janitor and frees every entry. Calls after Close fail.
func (c *Cache) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.stop)
		<-c.done
		for i := range shards {
			// Fresh maps, not clear: a cleared map keeps its buckets.
			lockAnd(&c.inboxes[i].mu, func() { c.inboxes[i].m = map[int64]*inbox{} })
			lockAnd(&c.posts[i].mu, func() { c.posts[i].m = map[int64]postEntry{} })
			lockAnd(&c.kv[i].mu, func() { c.kv[i].m = map[string]kvEntry{} })
			lockAnd(&c.likes[i].mu, func() { c.likes[i].reset() })
		}
	})
	return nil
}

func lockAnd(mu *sync.Mutex, f func()) {
	mu.Lock()
	defer mu.Unlock()
	f()
}

// janitor frees expired entries that no call touches any more, so that a
// reader who never comes back does not hold memory for ever.
func (c *Cache) janitor() {
	defer close(c.done)
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			c.sweep()
		}
	}
}

// sweep deletes every expired entry, one shard at a time so that no lock
// is held for long.
func (c *Cache) sweep() {
	now := c.now().UnixNano()
	for i := range shards {
		lockAnd(&c.inboxes[i].mu, func() {
			maps := c.inboxes[i].m
			for k, b := range maps {
				if expired(b.expires, now) {
					delete(maps, k)
				}
			}
		})
		lockAnd(&c.posts[i].mu, func() {
			maps := c.posts[i].m
			for k, e := range maps {
				if expired(e.expires, now) {
					delete(maps, k)
				}
			}
		})
		lockAnd(&c.kv[i].mu, func() {
			maps := c.kv[i].m
			for k, e := range maps {
				if expired(e.expires, now) {
					delete(maps, k)
				}
			}
		})
		lockAnd(&c.likes[i].mu, func() { c.likes[i].sweep(now) })
	}
}

// count counts live and not yet swept entries, for tests.
func (c *Cache) count() (inboxes, posts, kv int) {
	for i := range shards {
		lockAnd(&c.inboxes[i].mu, func() { inboxes += len(c.inboxes[i].m) })
		lockAnd(&c.posts[i].mu, func() { posts += len(c.posts[i].m) })
		lockAnd(&c.kv[i].mu, func() { kv += len(c.kv[i].m) })
	}
	return inboxes, posts, kv
}

func expired(expires, now int64) bool { return expires != 0 && now >= expires }

// deadline turns a ttl into an expiry time; a ttl <= 0 never expires, as
// with go-redis.
func deadline(now time.Time, ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return now.Add(ttl).UnixNano()
}

// shardOf spreads sequential ids over the shards (Fibonacci hashing).
func shardOf(id int64) int { return int(uint64(id) * 0x9E3779B97F4A7C15 >> 58) }

func (c *Cache) kvShard(key string) *kvShard {
	return &c.kv[maphash.String(c.seed, key)%shards]
}

// live returns reader's inbox, deleting it if it has expired. The caller
// holds the shard's lock.
func (s *inboxShard) live(reader, now int64) *inbox {
	b := s.m[reader]
	if b != nil && expired(b.expires, now) {
		delete(s.m, reader)
		return nil
	}
	return b
}

// InboxPage returns up to n ids of reader's inbox strictly below before (0:
// from the newest), newest first.
// InboxPages is InboxPage of the first n ids of each of readers.
func (c *Cache) InboxPages(ctx context.Context, readers []int64, n int) (map[int64]feed.InboxPage, error) {
	out := make(map[int64]feed.InboxPage, len(readers))
	for _, r := range readers {
		pg, err := c.InboxPage(ctx, r, 0, n)
		if err != nil {
			return nil, err
		}
		out[r] = pg
	}
	return out, nil
}

func (c *Cache) InboxPage(ctx context.Context, reader, before int64, n int) (feed.InboxPage, error) {
	if c.closed.Load() {
		return feed.InboxPage{}, errClosed
	}
	now := c.now().UnixNano()
	s := &c.inboxes[shardOf(reader)]
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.live(reader, now)
	if b == nil {
		return feed.InboxPage{}, nil
	}
	if ttl := int64(c.inboxTTL); ttl > 0 && len(b.ids) > 0 && b.expires != 0 && b.expires-now < ttl-ttl/32 {
		b.expires = now + ttl
	}
	end := len(b.ids)
	if before != 0 { // 0: from the newest; a post from before 2025 is below 0
		end, _ = slices.BinarySearch(b.ids, before)
	}
	n = max(min(n, end), 0)
	page := feed.InboxPage{IDs: make([]int64, n), Exists: true, Complete: b.complete}
	for i := range page.IDs {
		page.IDs[i] = b.ids[end-1-i]
	}
	return page, nil
}

// FillInbox creates or replaces reader's inbox with the newest InboxMax of
// ids; it is complete only if complete is set and nothing was trimmed.
func (c *Cache) FillInbox(ctx context.Context, reader int64, ids []int64, complete bool, ttl time.Duration) error {
	if c.closed.Load() {
		return errClosed
	}
	if err := feed.CheckInboxIDs(ids...); err != nil {
		return fmt.Errorf("inmemcache: fill inbox %d: %w", reader, err)
	}
	b := &inbox{ids: slices.Compact(slices.Sorted(slices.Values(ids))), complete: complete, expires: deadline(c.now(), ttl)}
	if over := len(b.ids) - c.inboxMax; over > 0 {
		// Copy rather than reslice: the trimmed head would stay allocated.
		b.ids = slices.Clone(b.ids[over:])
		b.complete = false
	}

	s := &c.inboxes[shardOf(reader)]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[reader] = b
	return nil
}

// AddToInbox adds ids to reader's inbox if it exists, trims it, and marks
// it incomplete if markIncomplete is set.
func (c *Cache) AddToInbox(ctx context.Context, reader int64, ids []int64, markIncomplete bool) error {
	return c.changeInbox("add to", reader, ids, func(b *inbox) {
		// A merge by sorting: adds are follow backfills of a few hundred ids,
		// rare next to pushes.
		b.ids = append(b.ids, ids...)
		slices.Sort(b.ids)
		b.ids = slices.Compact(b.ids)
		b.trim(c.inboxMax)
		if markIncomplete {
			b.complete = false
		}
	})
}

// PushToInboxes adds id to the inbox of each reader whose inbox exists.
func (c *Cache) PushToInboxes(ctx context.Context, readers []int64, id int64) error {
	if c.closed.Load() {
		return errClosed
	}
	if err := feed.CheckInboxIDs(id); err != nil {
		return fmt.Errorf("inmemcache: push to %d inboxes: %w", len(readers), err)
	}
	if len(readers) == 0 {
		return nil
	}
	now := c.now().UnixNano()
	for _, r := range readers {
		s := &c.inboxes[shardOf(r)]
		s.mu.Lock()
		if b := s.live(r, now); b != nil {
			b.insert(id, c.inboxMax)
		}
		s.mu.Unlock()
	}
	return nil
}

// insert adds id in order unless present, then trims.
func (b *inbox) insert(id int64, max int) {
	if n := len(b.ids); n == 0 || id > b.ids[n-1] {
		b.ids = append(b.ids, id) // the common case: a new post
	} else {
		i, found := slices.BinarySearch(b.ids, id)
		if found {
			return
		}
		b.ids = slices.Insert(b.ids, i, id)
	}
	b.trim(max)
}

// trim keeps the newest max ids; an inbox that lost ids is incomplete.
func (b *inbox) trim(max int) {
	if over := len(b.ids) - max; over > 0 {
		// Shift rather than reslice, so the backing array is reused
		// instead of creeping forward and reallocating.
		b.ids = b.ids[:copy(b.ids, b.ids[over:])]
		b.complete = false
	}
}

// RemoveFromInbox removes ids from reader's inbox.
func (c *Cache) RemoveFromInbox(ctx context.Context, reader int64, ids []int64) error {
	return c.changeInbox("remove from", reader, ids, func(b *inbox) {
		for _, id := range ids {
			if i, found := slices.BinarySearch(b.ids, id); found {
				b.ids = slices.Delete(b.ids, i, i+1)
			}
		}
	})
}

// changeInbox checks ids, then runs change on reader's inbox under its
// shard's lock if the inbox exists (an absent one is left absent: it is
// rebuilt on read). what names the change in errors.
func (c *Cache) changeInbox(what string, reader int64, ids []int64, change func(b *inbox)) error {
	if c.closed.Load() {
		return errClosed
	}
	if err := feed.CheckInboxIDs(ids...); err != nil {
		return fmt.Errorf("inmemcache: %s inbox %d: %w", what, reader, err)
	}
	now := c.now().UnixNano()
	s := &c.inboxes[shardOf(reader)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.live(reader, now); b != nil {
		change(b)
	}
	return nil
}

// InboxBounds returns the newest and oldest id in reader's inbox.
func (c *Cache) InboxBounds(ctx context.Context, reader int64) (newest, oldest int64, exists bool, err error) {
	if c.closed.Load() {
		return 0, 0, false, errClosed
	}
	now := c.now().UnixNano()
	s := &c.inboxes[shardOf(reader)]
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.live(reader, now)
	switch {
	case b == nil:
		return 0, 0, false, nil
	case len(b.ids) == 0:
		return 0, 0, true, nil
	}
	return b.ids[len(b.ids)-1], b.ids[0], true, nil
}

// DropInbox deletes reader's inbox.
func (c *Cache) DropInbox(ctx context.Context, reader int64) error {
	if c.closed.Load() {
		return errClosed
	}
	s := &c.inboxes[shardOf(reader)]
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, reader)
	return nil
}

// CachedPosts returns the cached posts among ids.
func (c *Cache) CachedPosts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	if c.closed.Load() {
		return nil, errClosed
	}
	now := c.now().UnixNano()
	got := make(map[int64]feed.Post, len(ids))
	for _, id := range ids {
		s := &c.posts[shardOf(id)]
		s.mu.Lock()
		e, ok := s.m[id]
		if ok && expired(e.expires, now) {
			delete(s.m, id)
			ok = false
		}
		s.mu.Unlock()
		if ok {
			got[id] = e.post
		}
	}
	return got, nil
}

// CachePosts stores posts for ttl, each unless a newer version of it is
// cached (feed.Post.Supersedes).
func (c *Cache) CachePosts(ctx context.Context, posts []feed.Post, ttl time.Duration) error {
	if c.closed.Load() {
		return errClosed
	}
	now := c.now()
	expires := deadline(now, ttl)
	for _, p := range posts {
		s := &c.posts[shardOf(p.ID)]
		s.mu.Lock()
		if e, ok := s.m[p.ID]; !ok || expired(e.expires, now.UnixNano()) || p.Supersedes(e.post) {
			s.m[p.ID] = postEntry{post: p, expires: expires}
		}
		s.mu.Unlock()
	}
	return nil
}

// liveKV returns key's entry, deleting it if it has expired. The caller
// holds the shard's lock.
func (s *kvShard) live(key string, now int64) (kvEntry, bool) {
	e, ok := s.m[key]
	if ok && expired(e.expires, now) {
		delete(s.m, key)
		return kvEntry{}, false
	}
	return e, ok
}

// SetNX sets key to value for ttl if key is absent.
func (c *Cache) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if c.closed.Load() {
		return false, errClosed
	}
	now := c.now()
	s := c.kvShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.live(key, now.UnixNano()); ok {
		return false, nil
	}
	s.m[key] = kvEntry{value: value, expires: deadline(now, ttl)}
	return true, nil
}

// Get returns key's value and whether it exists.
func (c *Cache) Get(ctx context.Context, key string) (string, bool, error) {
	if c.closed.Load() {
		return "", false, errClosed
	}
	now := c.now().UnixNano()
	s := c.kvShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key, now)
	return e.value, ok, nil
}

// GetEx returns key's value and whether it exists, and resets its ttl.
func (c *Cache) GetEx(ctx context.Context, key string, ttl time.Duration) (string, bool, error) {
	if c.closed.Load() {
		return "", false, errClosed
	}
	now := c.now()
	s := c.kvShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key, now.UnixNano())
	if ok {
		e.expires = deadline(now, ttl)
		s.m[key] = e
	}
	return e.value, ok, nil
}

// Set sets key to value for ttl.
func (c *Cache) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	if c.closed.Load() {
		return errClosed
	}
	expires := deadline(c.now(), ttl)
	s := c.kvShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = kvEntry{value: value, expires: expires}
	return nil
}

// CompareAndDelete deletes key if its value is value.
func (c *Cache) CompareAndDelete(ctx context.Context, key, value string) (bool, error) {
	if c.closed.Load() {
		return false, errClosed
	}
	now := c.now().UnixNano()
	s := c.kvShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.live(key, now); !ok || e.value != value {
		return false, nil
	}
	delete(s.m, key)
	return true, nil
}

// CompareAndExpire resets key's ttl if its value is value; a ttl <= 0
// makes it never expire.
func (c *Cache) CompareAndExpire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if c.closed.Load() {
		return false, errClosed
	}
	now := c.now()
	s := c.kvShard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.live(key, now.UnixNano())
	if !ok || e.value != value {
		return false, nil
	}
	e.expires = deadline(now, ttl)
	s.m[key] = e
	return true, nil
}
