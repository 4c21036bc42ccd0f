package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// BulkLoadLikes stores the likes of post (author's) by each of likers at
// time at, with the post's like count and author's notifications of them,
// as the likes writer leaves them when the likes come within one window:
// one group of every liker. It is bench graph's post liked by a million
// (the notifications scenario); like the other BulkLoad methods it trusts
// its caller: likers are distinct users other than author who do not like
// the post yet, and the post has no like yet. Sharded, the caller sends it
// to the post's shard, where a like's truth and its notification live;
// the likers' shards get no mirror (their lists of likes do not show it).
func (s *Store) BulkLoadLikes(ctx context.Context, post, author int64, likers []int64, at time.Time) error {
	if len(likers) == 0 {
		return nil
	}
	version := at.UnixMicro()
	err := s.bulkInsert(ctx, "likes", []string{"user_id", "post_id", "liked", "version"}, len(likers),
		func(i int, args []any) []any { return append(args, likers[i], post, 1, version) })
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load %d likes of %d: %w", len(likers), post, err)
	}
	ids := make([]int64, len(likers))
	for i, l := range likers {
		ids[i] = feed.Notice{Recipient: author, Actor: l, Kind: feed.NoticeLike, Post: post, At: at}.ID()
	}
	gid, newest := slices.Min(ids), slices.Max(ids)
	err = s.bulkInsert(ctx, "notice_actors", []string{"recipient_id", "kind", "post_id", "actor_id", "gid", "id"}, len(likers),
		func(i int, args []any) []any {
			return append(args, author, string(feed.NoticeLike), post, likers[i], gid, ids[i])
		})
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load the notifications of %d likes of %d: %w", len(likers), post, err)
	}
	err = s.bulkInsert(ctx, "notice_groups", []string{"recipient_id", "gid", "id", "kind", "post_id", "first_at", "latest_at", "actor_count"}, 1,
		func(_ int, args []any) []any {
			return append(args, author, gid, newest, string(feed.NoticeLike), post, millis(at), millis(at), int64(len(likers)))
		})
	if err == nil {
		err = s.bulkInsert(ctx, "post_stats", []string{"post_id", "like_count", "like_seq", "updated_at"}, 1,
			func(_ int, args []any) []any { return append(args, post, int64(len(likers)), int64(1), millis(at)) })
	}
	if err != nil {
		return fmt.Errorf("sqlstore: bulk load the like count of %d: %w", post, err)
	}
	return nil
}
