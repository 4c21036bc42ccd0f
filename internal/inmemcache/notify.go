package inmemcache

import (
	"context"
	"slices"
	"sync"

	"github.com/feedd/feedd/internal/feed"
)

// subscriptionBuffer is how many messages a subscription holds for its
// reader; past it, messages are dropped, as Redis drops them for a client
// that does not read (feed.Notifier is best effort).
const subscriptionBuffer = 4096

// notifyHub is the in-process feed.Notifier: channels are a map from
// author to the subscriptions listening to it.
type notifyHub struct {
	mu   sync.RWMutex
	subs map[int64]map[*subscription]struct{}
}

var _ feed.Notifier = (*Cache)(nil)

// Notify hands msg to every subscription listening to author's channel,
// without waiting for any: a full one misses it.
func (c *Cache) Notify(ctx context.Context, author int64, msg []byte) error {
	if c.closed.Load() {
		return errClosed
	}
	h := &c.hub
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.subs[author] {
		// Each subscriber gets its own copy: the caller may reuse msg.
		s.offer(feed.Notification{Author: author, Msg: slices.Clone(msg)})
	}
	return nil
}

// Subscribe returns a subscription to this cache's channels.
func (c *Cache) Subscribe() feed.Subscription {
	return &subscription{hub: &c.hub, ch: make(chan feed.Notification, subscriptionBuffer), authors: map[int64]struct{}{}}
}

type subscription struct {
	hub     *notifyHub
	mu      sync.Mutex // guards ch's closing against offer, and authors
	ch      chan feed.Notification
	closed  bool
	authors map[int64]struct{}
}

func (s *subscription) offer(n feed.Notification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.ch <- n:
	default:
	}
}

func (s *subscription) Add(ctx context.Context, authors ...int64) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	for _, a := range authors {
		s.authors[a] = struct{}{}
	}
	s.mu.Unlock()
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[int64]map[*subscription]struct{}{}
	}
	for _, a := range authors {
		m := h.subs[a]
		if m == nil {
			m = map[*subscription]struct{}{}
			h.subs[a] = m
		}
		m[s] = struct{}{}
	}
	return nil
}

func (s *subscription) Remove(ctx context.Context, authors ...int64) error {
	s.mu.Lock()
	for _, a := range authors {
		delete(s.authors, a)
	}
	s.mu.Unlock()
	s.hub.remove(s, authors)
	return nil
}

func (h *notifyHub) remove(s *subscription, authors []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range authors {
		if m := h.subs[a]; m != nil {
			delete(m, s)
			if len(m) == 0 {
				delete(h.subs, a)
			}
		}
	}
}

func (s *subscription) C() <-chan feed.Notification { return s.ch }

func (s *subscription) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	authors := make([]int64, 0, len(s.authors))
	for a := range s.authors {
		authors = append(authors, a)
	}
	close(s.ch)
	s.mu.Unlock()
	s.hub.remove(s, authors)
	return nil
}
