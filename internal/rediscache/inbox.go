package rediscache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// The calls on one inbox, each one script call (lua/inbox_*.lua) on its
// two keys but DropInbox, a DEL. A fill replaces both keys; every other
// script drains the pending list into the ring first. The layout is
// lua/ring.lua's; keys.go names the keys.

// InboxPage returns up to n ids of reader's inbox strictly below before (0:
// from the newest), newest first, in one round trip. An inbox that holds
// ids gets Options.InboxTTL again (lua/inbox_page.lua says when).
func (c *Cache) InboxPage(ctx context.Context, reader, before int64, n int) (feed.InboxPage, error) {
	page, err := parsePage(c.page.Run(ctx, c.client, c.keys(reader), before, max(n, 0), c.maxArg, c.ttlArg).Text())
	if err != nil {
		return feed.InboxPage{}, fmt.Errorf("rediscache: page inbox %d: %w", reader, err)
	}
	return page, nil
}

// InboxPages reads the first n ids of each of readers' inboxes in one
// pipeline (inbox_page.lua by its hash; a server that lost the script
// gets the calls again one by one, which load it).
func (c *Cache) InboxPages(ctx context.Context, readers []int64, n int) (map[int64]feed.InboxPage, error) {
	out := make(map[int64]feed.InboxPage, len(readers))
	if len(readers) == 0 {
		return out, nil
	}
	pipe := c.client.Pipeline()
	cmds := make([]*redis.Cmd, len(readers))
	for i, r := range readers {
		cmds[i] = c.page.EvalSha(ctx, pipe, c.keys(r), 0, max(n, 0), c.maxArg, c.ttlArg)
	}
	_, _ = pipe.Exec(ctx) // each command's error is its own, below
	for i, r := range readers {
		reply, err := cmds[i].Text()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			pg, err := c.InboxPage(ctx, r, 0, n)
			if err != nil {
				return nil, err
			}
			out[r] = pg
			continue
		}
		pg, err := parsePage(reply, err)
		if err != nil {
			return nil, fmt.Errorf("rediscache: page inbox %d: %w", r, err)
		}
		out[r] = pg
	}
	return out, nil
}

// parsePage reads inbox_page.lua's reply.
func parsePage(reply string, err error) (feed.InboxPage, error) {
	switch {
	case errors.Is(err, redis.Nil):
		return feed.InboxPage{}, nil
	case err != nil:
		return feed.InboxPage{}, err
	case len(reply) == 0:
		return feed.InboxPage{}, errors.New("empty reply")
	}
	// The reply starts with inbox_page.lua's mark: 'c' complete, 'i' not.
	page := feed.InboxPage{Exists: true, Complete: reply[0] == 'c'}
	if len(reply) > 1 {
		if page.IDs, err = parseIDs(reply[1:]); err != nil {
			return feed.InboxPage{}, err
		}
	}
	return page, nil
}

// FillInbox creates or replaces reader's inbox with the newest InboxMax of
// ids, and empties its pending list, in one script call; it is complete
// only if complete is set and nothing was trimmed.
func (c *Cache) FillInbox(ctx context.Context, reader int64, ids []int64, complete bool, ttl time.Duration) error {
	if err := feed.CheckInboxIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: fill inbox %d: %w", reader, err)
	}
	packed := packIDs(ids)
	if len(packed) > c.inboxMax*idLen {
		packed = packed[:c.inboxMax*idLen]
		complete = false
	}
	err := c.fill.Run(ctx, c.client, c.keys(reader), packed, boolArg(complete), c.maxArg, ms(ttl)).Err()
	if err != nil {
		return fmt.Errorf("rediscache: fill inbox %d with %d ids: %w", reader, len(packed)/idLen, err)
	}
	return nil
}

// AddToInbox adds ids to reader's inbox if it exists, trims it, and marks
// it incomplete if markIncomplete is set.
func (c *Cache) AddToInbox(ctx context.Context, reader int64, ids []int64, markIncomplete bool) error {
	if err := feed.CheckInboxIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: add to inbox %d: %w", reader, err)
	}
	if len(ids) == 0 && !markIncomplete {
		return nil
	}
	err := c.add.Run(ctx, c.client, c.keys(reader), packIDs(ids), c.maxArg, boolArg(markIncomplete)).Err()
	if err != nil && !errors.Is(err, redis.Nil) { // nil: no inbox to add to
		return fmt.Errorf("rediscache: add %d ids to inbox %d: %w", len(ids), reader, err)
	}
	return nil
}

// RemoveFromInbox removes ids from reader's inbox.
func (c *Cache) RemoveFromInbox(ctx context.Context, reader int64, ids []int64) error {
	if err := feed.CheckInboxIDs(ids...); err != nil {
		return fmt.Errorf("rediscache: remove from inbox %d: %w", reader, err)
	}
	if len(ids) == 0 {
		return nil
	}
	err := c.remove.Run(ctx, c.client, c.keys(reader), packIDs(ids), c.maxArg).Err()
	if err != nil && !errors.Is(err, redis.Nil) { // nil: no inbox to remove from
		return fmt.Errorf("rediscache: remove %d ids from inbox %d: %w", len(ids), reader, err)
	}
	return nil
}

// InboxBounds returns the newest and oldest id in reader's inbox, in one
// round trip.
func (c *Cache) InboxBounds(ctx context.Context, reader int64) (newest, oldest int64, exists bool, err error) {
	b, err := c.bounds.Run(ctx, c.client, c.keys(reader), c.maxArg).Int64Slice()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, fmt.Errorf("rediscache: bounds of inbox %d: %w", reader, err)
	case len(b) == 0:
		return 0, 0, true, nil
	case len(b) != 2:
		return 0, 0, false, fmt.Errorf("rediscache: bounds of inbox %d: reply %v is not two ids", reader, b)
	}
	return b[0], b[1], true, nil
}

// DropInboxes deletes the inboxes of readers in one pipeline, a DEL each,
// and returns the readers whose DEL failed: an import drops the inboxes
// of every follower of the authors it gave posts, which a round trip per
// reader made most of its time.
func (c *Cache) DropInboxes(ctx context.Context, readers []int64) ([]int64, error) {
	if len(readers) == 0 {
		return nil, nil
	}
	p := c.client.Pipeline()
	cmds := make([]*redis.IntCmd, len(readers))
	for i, reader := range readers {
		cmds[i] = p.Del(ctx, c.keys(reader)...)
	}
	_, err := p.Exec(ctx)
	if err == nil {
		return nil, nil
	}
	var failed []int64
	for i, cmd := range cmds {
		if cmd.Err() != nil {
			failed = append(failed, readers[i])
		}
	}
	return failed, fmt.Errorf("rediscache: drop %d of %d inboxes: %w", len(failed), len(readers), err)
}

// DropInbox deletes reader's inbox.
func (c *Cache) DropInbox(ctx context.Context, reader int64) error {
	// One DEL of two keys of one hash tag: a single slot.
	if err := c.client.Del(ctx, c.keys(reader)...).Err(); err != nil {
		return fmt.Errorf("rediscache: drop inbox %d: %w", reader, err)
	}
	return nil
}
