package social

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// FollowBatch makes a batch of follows and unfollows (sqlstore's
// FollowBatch says in what order and with which outcomes) and then, as
// Follow and Unfollow do for one pair, tells the read engine
// (timeline.Service.BatchFollowed) and the streams of every follower
// whose pair holds as asked. Like a single follow it redoes the inbox
// work for pairs that were already as asked, so that a retry repairs
// what a crash after the commit left.
func (s *Service) FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) (followed, unfollowed []string, err error) {
	if followed, unfollowed, err = s.store.FollowBatch(ctx, follow, unfollow); err != nil {
		return nil, nil, err
	}
	s.timeline.BatchFollowed(ctx, follow, followed, unfollow, unfollowed)
	s.followsChanged(ctx, "follow batch", touched(follow, followed, unfollow, unfollowed)...)
	return followed, unfollowed, nil
}

// touched is every follower a batch asked about whose pair holds as asked
// now (made, or already so), once each: as a single follow does, each is
// told to read whom it follows again.
func touched(follow []feed.Edge, followed []string, unfollow []feed.Edge, unfollowed []string) []int64 {
	seen := map[int64]bool{}
	var out []int64
	add := func(id int64) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for i, e := range follow {
		if followed[i] == feed.EdgeCreated || followed[i] == feed.EdgeExists {
			add(e.Follower)
		}
	}
	for i, e := range unfollow {
		if unfollowed[i] == feed.EdgeRemoved || unfollowed[i] == feed.EdgeAbsent {
			add(e.Follower)
		}
	}
	return out
}
