package timeline

import (
	"context"
	"fmt"
)

// Followed keeps the caches in step with a follow committed in SQL
// (social.Service.Follow; changed: the edge is new): the followee's
// delivery mode and the follower's pulled authors are decided again, and
// the followee's recent posts are copied into the follower's inbox, if it
// has one (an absent inbox is rebuilt from SQL on the next read anyway).
// The copy runs on a repeated follow too, so that the client's retry
// repairs what a crash after the commit left; it is idempotent.
func (s *Service) Followed(ctx context.Context, follower, followee int64, changed bool) {
	if changed {
		s.afterGraphChange(ctx, follower, followee)
	}
	if err := s.backfill(ctx, follower, followee); err != nil {
		// The edge is in SQL: a failed backfill only costs freshness, and
		// dropping the inbox makes the next read rebuild it complete.
		s.cacheFailed("follow backfill", err)
		s.dropInbox(ctx, follower)
	}
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

// Unfollowed keeps the caches in step with an unfollow committed in SQL
// (social.Service.Unfollow): as Followed, and the followee's posts leave
// the follower's inbox, on a repeat too.
func (s *Service) Unfollowed(ctx context.Context, follower, followee int64, changed bool) {
	if changed {
		s.afterGraphChange(ctx, follower, followee)
	}
	if err := s.removeAuthor(ctx, follower, followee); err != nil {
		s.cacheFailed("unfollow removal", err)
		s.dropInbox(ctx, follower)
	}
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
	s.tellGraphChanged(ctx, follower)
}

// tellGraphChanged tells the graph hook (WithGraphHook) that reader's
// follows changed.
func (s *Service) tellGraphChanged(ctx context.Context, reader int64) {
	if s.graphChanged != nil {
		s.graphChanged(ctx, reader)
	}
}
