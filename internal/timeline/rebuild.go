package timeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// inboxFeedIDs returns up to n ids newer than after of what reader's inbox
// holds: the whole feed, or in hybrid mode the pushed authors' part of it.
// Pulled authors' posts are merged from their author lists at read time;
// copying them into each reader's inbox on every rebuild and refresh would
// spend the memory hybrid exists to save. (Paging past an inbox's end reads
// every followee: the merge drops the duplicates.)
func (s *Service) inboxFeedIDs(ctx context.Context, reader, after int64, n int) ([]int64, error) {
	if !s.merges() {
		return s.store.FeedPostIDs(ctx, reader, after, 0, n)
	}
	low, high := s.cfg.Policy.Band()
	return s.store.PushedFeedPostIDs(ctx, reader, high, low, after, 0, n)
}

// rebuild fills reader's inbox from SQL. Concurrent rebuilds of one inbox
// in this process collapse into one query.
func (s *Service) rebuild(ctx context.Context, reader int64) ([]int64, bool, error) {
	type result struct {
		ids      []int64
		complete bool
	}
	v, err, _ := s.rebuilds.Do(strconv.FormatInt(reader, 10), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		ids, err := s.inboxFeedIDs(ctx, reader, 0, s.cfg.InboxMax)
		if err != nil {
			return nil, fmt.Errorf("timeline: rebuild inbox of %d: %w", reader, err)
		}
		s.metrics.rebuilds.Inc()
		if feed.GapsOf(ctx).Any() {
			// A shard did not answer: serve what the others gave, and
			// keep no inbox that would lack its posts once it is back.
			return result{ids, false}, nil
		}
		complete := len(ids) < s.cfg.InboxMax
		ttl := s.cfg.InboxTTL
		if len(ids) == 0 {
			ttl = s.cfg.EmptyTTL
		}
		if err := s.cache.FillInbox(ctx, reader, ids, complete, ttl); err != nil {
			s.cacheFailed("fill inbox", err)
			return result{ids, complete}, nil
		}
		// A fan-out that ran between the query and the fill skipped this
		// (then absent) inbox: catch its posts now. Fan-outs after the
		// fill see the inbox and push.
		var newest int64
		if len(ids) > 0 {
			newest = ids[0]
		}
		// From the primary: a read replica behind by its lag would miss
		// the newest posts, whose fan-outs skipped the absent inbox too.
		late, err := s.inboxFeedIDs(feed.WithLastWrite(ctx, time.Now()), reader, newest, s.cfg.InboxMax)
		if err == nil && len(late) > 0 {
			if err := s.cache.AddToInbox(ctx, reader, late, false); err != nil {
				s.cacheFailed("fill inbox", err)
			}
			ids = mergeDesc(late, ids, s.cfg.InboxMax)
		}
		// The inbox is as fresh as SQL: no refresh needed for a while.
		_ = s.gateRefresh(ctx, reader)
		return result{ids, complete}, nil
	})
	if err != nil {
		return nil, false, err
	}
	res := v.(result)
	return res.ids, res.complete, nil
}
