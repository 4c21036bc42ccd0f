package httpapi

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// The fake's reposts: only the API's shape is tested here; the feeds'
// behaviour is cmd/feedd's TestReposts.

func (f *fakeService) FollowShowing(ctx context.Context, follower, followee int64, reposts *bool) error {
	return f.Follow(ctx, follower, followee)
}

func (f *fakeService) Repost(ctx context.Context, user, id int64) (int64, error) {
	if _, err := f.Post(ctx, id); err != nil {
		return 0, err
	}
	return id, nil
}

func (f *fakeService) Unrepost(ctx context.Context, user, id int64) (int64, error) {
	return f.Repost(ctx, user, id)
}

func (f *fakeService) Counts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	return map[int64]feed.Counts{}, nil
}
