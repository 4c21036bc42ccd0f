package timeline

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// Follow makes follower follow followee. It is idempotent; the edge's
// followee's recent posts are copied into the follower's inbox, if it has
// one (an absent inbox is rebuilt from SQL on the next read anyway).
//
// The copy runs on a repeated follow too: a process that dies between the
// SQL commit and the copy leaves an inbox with a gap, and the client's
// retry of the idempotent PUT is what repairs it (the chaos test found
// this). The copy is idempotent, so a repeat costs two reads and no harm.
func (s *Service) Follow(ctx context.Context, follower, followee int64) error {
	if err := feed.CheckNotSelf("follow", follower, followee); err != nil {
		return err
	}
	changed, err := s.store.Follow(ctx, follower, followee)
	if err != nil {
		return err
	}
	if changed {
		s.afterGraphChange(ctx, follower, followee)
	}
	if err := s.backfill(ctx, follower, followee); err != nil {
		// The edge is in SQL: a failed backfill only costs freshness, and
		// dropping the inbox makes the next read rebuild it complete.
		s.cacheFailed("follow backfill", err)
		s.dropInbox(ctx, follower)
	}
	s.followsChanged(ctx, "follow", follower)
	return nil
}

// backfill copies into follower's inbox every post of followee newer than
// the inbox's oldest entry (so paging the inbox shows no gap), and at
// least the followee's newest BackfillPosts. Older posts are reached by
// paging past the inbox's end into SQL, so the inbox is marked incomplete.
func (s *Service) backfill(ctx context.Context, follower, followee int64) error {
	_, oldest, exists, err := s.cache.InboxBounds(ctx, follower)
	if err != nil || !exists {
		return err
	}
	if s.merges() {
		// A pulled followee's posts are merged from its author list at read
		// time, not kept in inboxes.
		u, err := s.store.User(ctx, followee)
		if err != nil {
			return fmt.Errorf("timeline: backfill from %d: %w", followee, err)
		}
		if s.cfg.Policy.Pulls(u) {
			return nil
		}
	}
	ids, err := s.store.AuthorPostIDs(ctx, followee, oldest, 0, s.cfg.InboxMax)
	if err != nil {
		return fmt.Errorf("timeline: backfill from %d: %w", followee, err)
	}
	if len(ids) < s.cfg.BackfillPosts {
		if ids, err = s.store.AuthorPostIDs(ctx, followee, 0, 0, s.cfg.BackfillPosts); err != nil {
			return fmt.Errorf("timeline: backfill from %d: %w", followee, err)
		}
	}
	return s.cache.AddToInbox(ctx, follower, ids, true)
}

// Unfollow removes the edge and the followee's posts from the follower's
// inbox. It is idempotent, and like Follow it redoes the inbox part on a
// repeat, so that a retry repairs what a crash after the commit left.
// Unfollowing oneself succeeds: the edge can never exist, so the outcome
// asked for already holds, as after any other repeated unfollow.
func (s *Service) Unfollow(ctx context.Context, follower, followee int64) error {
	if follower == followee {
		s.followsChanged(ctx, "unfollow", follower)
		return nil
	}
	if _, err := s.store.User(ctx, followee); err != nil {
		return err
	}
	changed, err := s.store.Unfollow(ctx, follower, followee)
	if err != nil {
		return err
	}
	if changed {
		s.afterGraphChange(ctx, follower, followee)
	}
	if err := s.removeAuthor(ctx, follower, followee); err != nil {
		s.cacheFailed("unfollow removal", err)
		s.dropInbox(ctx, follower)
	}
	s.followsChanged(ctx, "unfollow", follower)
	return nil
}

// removeAuthor removes author's posts from reader's inbox. Only posts not
// older than the inbox's oldest entry can be in it, which bounds the query.
func (s *Service) removeAuthor(ctx context.Context, reader, author int64) error {
	_, oldest, exists, err := s.cache.InboxBounds(ctx, reader)
	if err != nil || !exists || oldest == 0 {
		return err
	}
	ids, err := s.store.AuthorPostIDs(ctx, author, oldest-1, 0, s.cfg.InboxMax)
	if err != nil {
		return fmt.Errorf("timeline: posts of %d to remove: %w", author, err)
	}
	if len(ids) == 0 {
		return nil
	}
	return s.cache.RemoveFromInbox(ctx, reader, ids)
}

// afterGraphChange re-decides the followee's delivery mode and refreshes
// the follower's cached list of pulled authors. The edge is committed;
// failures here only delay a mode switch to the next follow, so they are
// logged, not returned.
func (s *Service) afterGraphChange(ctx context.Context, follower, followee int64) {
	if err := s.updateDelivery(ctx, followee); err != nil {
		s.logger.Warn("could not update delivery mode", "author", followee, "err", err)
	}
	s.forgetPullees(ctx, follower)
}
