package timeline

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
)

const (
	// batchBackfillMax is how many of one reader's pairs a follow batch
	// backfills (or removes) in the reader's inbox one by one; past it the
	// inbox is dropped instead, and the next read rebuilds it from SQL with
	// one query rather than this batch making two per followee.
	batchBackfillMax = 20
	// batchWorkers is how many followees, then readers, a follow batch
	// works on at once after its commit. The work is a few round trips
	// each, so 1,000 pairs one after the other take seconds; eight at once
	// take a fraction of that while leaving most of the SQL and cache
	// pools' connections to other requests.
	batchWorkers = 8
)

// readerPairs is what a follow batch did to one reader.
type readerPairs struct {
	changed          bool    // an edge was added or removed
	backfill, remove []int64 // the authors whose posts enter or leave the inbox
}

// BatchFollowed keeps the caches in step with a follow batch committed
// in SQL (social.Service.FollowBatch, with its outcomes): as Followed and
// Unfollowed do for one pair, it re-decides the delivery mode of every
// followee whose edges changed, refreshes the pulled authors of every
// follower whose edges changed, and backfills or trims the inboxes, also
// for pairs that were already as asked.
func (s *Service) BatchFollowed(ctx context.Context, follow []feed.Edge, followed []string, unfollow []feed.Edge, unfollowed []string) {
	followees := map[int64]bool{}
	readers := map[int64]*readerPairs{}
	reader := func(id int64) *readerPairs {
		if readers[id] == nil {
			readers[id] = &readerPairs{}
		}
		return readers[id]
	}
	for i, e := range follow {
		switch followed[i] {
		case feed.EdgeCreated:
			followees[e.Followee], reader(e.Follower).changed = true, true
			fallthrough
		case feed.EdgeExists:
			r := reader(e.Follower)
			r.backfill = append(r.backfill, e.Followee)
		}
	}
	for i, e := range unfollow {
		switch unfollowed[i] {
		case feed.EdgeRemoved:
			followees[e.Followee], reader(e.Follower).changed = true, true
			fallthrough
		case feed.EdgeAbsent:
			if e.Follower != e.Followee {
				r := reader(e.Follower)
				r.remove = append(r.remove, e.Followee)
			}
		}
	}
	// The edges are committed: what follows only keeps the caches in
	// step, and its failures are logged, not returned (as for one follow).
	var g errgroup.Group
	g.SetLimit(batchWorkers)
	for followee := range followees {
		g.Go(func() error {
			if err := s.updateDelivery(ctx, followee); err != nil {
				s.logger.Warn("could not update delivery mode", "author", followee, "err", err)
			}
			return nil
		})
	}
	_ = g.Wait()
	for id, r := range readers {
		g.Go(func() error {
			if r.changed {
				s.forgetPullees(ctx, id)
				s.tellGraphChanged(ctx, id)
			}
			s.batchInbox(ctx, id, r)
			return nil
		})
	}
	_ = g.Wait()
}

// batchInbox backfills reader's inbox from the authors it now follows and
// takes out the posts of those it unfollowed, in that order (the batch's),
// so that a pair followed and unfollowed ends without its posts. A reader
// with many pairs, or whose inbox fails a step, gets its inbox dropped:
// the next read rebuilds it complete from SQL.
func (s *Service) batchInbox(ctx context.Context, reader int64, r *readerPairs) {
	if len(r.backfill)+len(r.remove) > batchBackfillMax {
		s.dropInbox(ctx, reader)
		return
	}
	for _, step := range []struct {
		what    string
		authors []int64
		do      func(ctx context.Context, reader, author int64) error
	}{{"follow batch backfill", r.backfill, s.backfill}, {"unfollow batch removal", r.remove, s.removeAuthor}} {
		for _, author := range step.authors {
			if err := step.do(ctx, reader, author); err != nil {
				s.cacheFailed(step.what, err)
				s.dropInbox(ctx, reader)
				return
			}
		}
	}
}
