package timeline

import (
	"context"
	"time"
)

// Feeds whose cache missed a change. A write that must change what the
// cache holds for a reader (an unfollow takes the author's posts out of
// the inbox, a follow backfills them, a mute or block takes them out, an
// unmute drops the inbox; a mute, block or follow also replaces the
// reader's cached mute and block set and pulled followees) commits in SQL
// first. If the cache then fails, the write drops the inbox instead, and
// if the cache is unreachable for that too (a Redis outage), it marks the
// reader in SQL. Without the mark, the inbox would show the unfollowed
// author's posts, or miss the followed one's, until it expires: reads
// renew its ttl, so for an active reader never. The sweeper below resets
// the marked readers' cached state once the cache answers again; the next
// read rebuilds it from SQL.

// staleSweepBatch is how many marked readers one sweep step resets.
const staleSweepBatch = 500

// dropInbox drops reader's inbox after a write failed to update it. If
// the cache fails that too, the reader is marked stale.
func (s *Service) dropInbox(ctx context.Context, reader int64) {
	if err := s.cache.DropInbox(ctx, reader); err != nil {
		s.cacheFailed("drop inbox", err)
		s.markStale(ctx, reader)
	}
}

// markStale records in SQL that reader's cached state missed a change.
func (s *Service) markStale(ctx context.Context, reader int64) {
	ctx, cancel := detached(ctx)
	defer cancel()
	if err := s.store.MarkFeedStale(ctx, reader); err != nil {
		s.logger.Error("a reader's cached feed missed a change and could not be marked for a reset: it may show the change late, until its inbox expires",
			"reader", reader, "err", err)
		return
	}
	s.metrics.staleMarked.Inc()
}

// resetFeed forgets what the cache holds for reader that a write may have
// left stale: the inbox, the shared copy of its mute and block set (held
// out for a moment, as after a change; each process's own copy is at most
// HiddenTTL old) and its pulled followees. Each is read again from SQL on
// the next read.
func (s *Service) resetFeed(ctx context.Context, reader int64) error {
	if err := s.cache.DropInbox(ctx, reader); err != nil {
		return err
	}
	if err := s.cache.Set(ctx, hiddenKey(reader), "changed", changedMarkTTL); err != nil {
		return err
	}
	if s.merges() {
		// Not a list: the next read loads it again.
		return s.cache.Set(ctx, pulleesKey(reader), "changed", changedMarkTTL)
	}
	return nil
}

// SweepStale resets the cached state of the readers marked stale, up to
// staleSweepBatch of them, and clears their marks; it returns how many it
// reset. It stops at the first cache failure: the cache is still away.
func (s *Service) SweepStale(ctx context.Context) (int, error) {
	marked, err := s.store.StaleFeeds(ctx, staleSweepBatch)
	if err != nil || len(marked) == 0 {
		return 0, err
	}
	done := marked[:0:0]
	var resetErr error
	for _, f := range marked {
		if resetErr = s.resetFeed(ctx, f.User); resetErr != nil {
			break
		}
		done = append(done, f)
	}
	if len(done) > 0 {
		if err := s.store.ClearStaleFeeds(ctx, done); err != nil {
			return 0, err
		}
		s.metrics.staleReset.Add(float64(len(done)))
	}
	return len(done), resetErr
}

// RunStaleSweeper sweeps every interval until ctx is done, and again at
// once while a sweep found a full batch. Every process serving the API
// runs one: the marks are in SQL, so a reader marked by a process that
// died is reset by another, and two sweepers resetting one reader only
// make its next read rebuild once more.
func (s *Service) RunStaleSweeper(ctx context.Context, every time.Duration) {
	failing := false
	for ctx.Err() == nil {
		n, err := s.SweepStale(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				s.logger.Warn("could not reset the cached feeds that missed changes; retrying", "err", err)
			}
			failing = true
		case n > 0:
			s.logger.Info("reset the cached feeds that missed changes while the cache was unreachable", "readers", n)
			failing = false
		default:
			failing = false
		}
		if n == staleSweepBatch && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
}
