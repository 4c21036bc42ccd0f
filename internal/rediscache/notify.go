package rediscache

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// Channels of feed.Notifier, under Options.Prefix:
//
//	st:{s<n>}:<author>   an author's channel; n = author mod notifyGroups
//
// On a single server they are classic pub/sub channels. On a Cluster they
// are sharded channels (SPUBLISH, SSUBSCRIBE, Redis 7): a message goes to
// the one shard that owns its slot, not to every node as a classic PUBLISH
// does, so the cluster's cost of a post's message does not grow with its
// size. A sharded subscription's connection talks to one shard, and go-redis
// picks it by the slot of the first channel, so the channels share
// notifyGroups hash tags and a subscription holds one connection per tag
// it uses: at most notifyGroups connections per serve process.
const notifyGroups = 16

// notifyBuffer is how many received messages wait for the subscription's
// reader before the forwarding goroutine blocks (and go-redis buffers,
// then drops).
const notifyBuffer = 4096

var _ feed.Notifier = (*Cache)(nil)

func (c *Cache) notifyChannel(author int64) string {
	return c.notifyKey + "{s" + strconv.FormatInt(author%notifyGroups, 10) + "}:" + strconv.FormatInt(author, 10)
}

func notifyGroup(author int64) int { return int(author % notifyGroups) }

// Notify publishes msg on author's channel: one command, whatever the
// number of subscribers.
func (c *Cache) Notify(ctx context.Context, author int64, msg []byte) error {
	ch := c.notifyChannel(author)
	var err error
	if cc, ok := c.client.(*redis.ClusterClient); ok {
		err = cc.SPublish(ctx, ch, msg).Err()
	} else {
		err = c.client.Publish(ctx, ch, msg).Err()
	}
	if err != nil {
		return fmt.Errorf("rediscache: notify %s: %w", ch, err)
	}
	return nil
}

// Subscribe returns a subscription; its connections open on first Add.
func (c *Cache) Subscribe() feed.Subscription {
	return &subscription{
		c: c, pubsubs: map[int]*redis.PubSub{}, chans: map[int]map[string]bool{},
		out: make(chan feed.Notification, notifyBuffer), done: make(chan struct{}),
	}
}

type subscription struct {
	c       *Cache
	mu      sync.Mutex
	pubsubs map[int]*redis.PubSub   // by group; one, group 0, off a Cluster
	chans   map[int]map[string]bool // by group, the channels listened to (on a Cluster)
	closed  bool
	out     chan feed.Notification
	done    chan struct{}
	wg      sync.WaitGroup
}

func (s *subscription) cluster() (*redis.ClusterClient, bool) {
	cc, ok := s.c.client.(*redis.ClusterClient)
	return cc, ok
}

// byGroup splits authors' channels by the connection that listens to them.
func (s *subscription) byGroup(authors []int64) map[int][]string {
	_, sharded := s.cluster()
	groups := map[int][]string{}
	for _, a := range authors {
		g := 0
		if sharded {
			g = notifyGroup(a)
		}
		groups[g] = append(groups[g], s.c.notifyChannel(a))
	}
	return groups
}

func (s *subscription) Add(ctx context.Context, authors ...int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("rediscache: subscribe: %w", redis.ErrClosed)
	}
	cc, sharded := s.cluster()
	for g, chans := range s.byGroup(authors) {
		ps, ok := s.pubsubs[g]
		if !ok {
			// Created without channels, so that its connection opens
			// with the first SSUBSCRIBE below and goes to the shard of
			// the group's slot.
			if sharded {
				ps = cc.SSubscribe(ctx)
			} else {
				ps = s.c.client.Subscribe(ctx)
			}
		}
		var err error
		if sharded {
			err = ps.SSubscribe(ctx, chans...)
		} else {
			err = ps.Subscribe(ctx, chans...)
		}
		if err != nil {
			if !ok {
				_ = ps.Close()
			}
			return fmt.Errorf("rediscache: subscribe to %d channels: %w", len(chans), err)
		}
		if !ok {
			s.pubsubs[g] = ps
			ch := ps.Channel()
			s.wg.Go(func() { s.forward(ch) })
		}
		if sharded {
			if s.chans[g] == nil {
				s.chans[g] = map[string]bool{}
			}
			for _, c := range chans {
				s.chans[g][c] = true
			}
		}
	}
	return nil
}

func (s *subscription) Remove(ctx context.Context, authors ...int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	_, sharded := s.cluster()
	for g, chans := range s.byGroup(authors) {
		ps, ok := s.pubsubs[g]
		if !ok {
			continue
		}
		var err error
		if sharded {
			err = ps.SUnsubscribe(ctx, chans...)
		} else {
			err = ps.Unsubscribe(ctx, chans...)
		}
		if sharded {
			for _, c := range chans {
				delete(s.chans[g], c)
			}
			if len(s.chans[g]) == 0 {
				// A sharded connection left with no channels is closed:
				// reconnecting with none (its node failed over), go-redis
				// would open it on a random node, and the next SSUBSCRIBE
				// on it would go to a shard that does not own the slot,
				// whose MOVED the receiver drops: the channels would stay
				// silent for good. The next Add opens one on the slot's
				// master.
				delete(s.pubsubs, g)
				delete(s.chans, g)
				if cerr := ps.Close(); cerr != nil && err == nil {
					err = cerr
				}
			}
		}
		if err != nil {
			return fmt.Errorf("rediscache: unsubscribe from %d channels: %w", len(chans), err)
		}
	}
	return nil
}

// forward moves one connection's messages to out until it closes.
func (s *subscription) forward(ch <-chan *redis.Message) {
	for m := range ch {
		i := strings.LastIndexByte(m.Channel, ':')
		author, err := strconv.ParseInt(m.Channel[i+1:], 10, 64)
		if err != nil {
			continue
		}
		select {
		case s.out <- feed.Notification{Author: author, Msg: []byte(m.Payload)}:
		case <-s.done:
			// Drain what go-redis still hands over, so it can stop.
		}
	}
}

func (s *subscription) C() <-chan feed.Notification { return s.out }

func (s *subscription) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	var first error
	for _, ps := range s.pubsubs {
		if err := ps.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	close(s.out)
	return first
}
