package timeline

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// batchBackfillMax is how many of one reader's pairs a follow batch
// backfills (or removes) in the reader's inbox one by one; past it the
// inbox is dropped instead, and the next read rebuilds it from SQL with
// one query rather than this batch making two per followee.
const batchBackfillMax = 20

// FollowBatch makes a batch of follows and unfollows (sqlstore's
// FollowBatch says in what order and with which outcomes) and then, as
// Follow and Unfollow do for one pair, re-decides the delivery mode of
// every followee whose edges changed, refreshes the pulled authors of
// every follower whose edges changed, and backfills or trims the inboxes.
// Like a single follow it redoes the inbox work for pairs that were
// already as asked, so that a retry repairs what a crash after the commit
// left.
func (s *Service) FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) (followed, unfollowed []string, err error) {
	if followed, unfollowed, err = s.store.FollowBatch(ctx, follow, unfollow); err != nil {
		return nil, nil, err
	}
	changedFollowees := map[int64]bool{}
	changedFollowers := map[int64]bool{}
	perReader := map[int64]int{}
	var backfills, removals []feed.Edge
	for i, e := range follow {
		switch followed[i] {
		case feed.EdgeCreated:
			changedFollowees[e.Followee], changedFollowers[e.Follower] = true, true
			fallthrough
		case feed.EdgeExists:
			backfills = append(backfills, e)
			perReader[e.Follower]++
		}
	}
	for i, e := range unfollow {
		switch unfollowed[i] {
		case feed.EdgeRemoved:
			changedFollowees[e.Followee], changedFollowers[e.Follower] = true, true
			fallthrough
		case feed.EdgeAbsent:
			if e.Follower != e.Followee {
				removals = append(removals, e)
				perReader[e.Follower]++
			}
		}
	}
	for followee := range changedFollowees {
		if err := s.updateDelivery(ctx, followee); err != nil {
			s.logger.Warn("could not update delivery mode", "author", followee, "err", err)
		}
	}
	for follower := range changedFollowers {
		s.forgetPullees(ctx, follower)
	}
	dropped := map[int64]bool{}
	drop := func(reader int64) {
		if !dropped[reader] {
			dropped[reader] = true
			_ = s.cache.DropInbox(ctx, reader)
		}
	}
	for reader, n := range perReader {
		if n > batchBackfillMax {
			drop(reader)
		}
	}
	// Follows first, then unfollows, the order the batch was made in, so
	// that a pair followed and unfollowed ends without its posts.
	for _, step := range []struct {
		what  string
		pairs []feed.Edge
		do    func(ctx context.Context, reader, author int64) error
	}{{"follow batch backfill", backfills, s.backfill}, {"unfollow batch removal", removals, s.removeAuthor}} {
		for _, e := range step.pairs {
			if dropped[e.Follower] {
				continue
			}
			if err := step.do(ctx, e.Follower, e.Followee); err != nil {
				// The edges are in SQL: a failure costs only freshness,
				// and the next read rebuilds a dropped inbox complete.
				s.cacheFailed(step.what, err)
				drop(e.Follower)
			}
		}
	}
	return followed, unfollowed, nil
}
