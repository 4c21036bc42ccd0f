package social

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// GraphStore is what follows.go and followbatch.go need of SQL.
type GraphStore interface {
	Follow(ctx context.Context, follower, followee int64) (bool, error)
	Unfollow(ctx context.Context, follower, followee int64) (bool, error)
	FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) ([]string, []string, error)
	Followers(ctx context.Context, user, after int64, n int) ([]int64, error)
	Following(ctx context.Context, user, after int64, n int) ([]int64, error)
}

// Follow makes follower follow followee. It is idempotent; the
// followee's recent posts are copied into the follower's inbox
// (timeline.Service.Followed).
//
// The copy runs on a repeated follow too: a process that dies between the
// SQL commit and the copy leaves an inbox with a gap, and the client's
// retry of the idempotent PUT is what repairs it (the chaos test found
// this). The copy is idempotent, so a repeat costs two reads and no harm.
func (s *Service) Follow(ctx context.Context, follower, followee int64) error {
	return s.FollowShowing(ctx, follower, followee, nil)
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
	s.timeline.Unfollowed(ctx, follower, followee, changed)
	s.followsChanged(ctx, "unfollow", follower)
	// The choice of the followee's reposts goes with the follow.
	return s.showReposts(ctx, follower, followee, true, false)
}
