package shards

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// The calls about one user or one post: each goes to the shard that holds
// it, and means there what it means on one database. A post's id carries
// its author's shard, so a post's calls need no lookup. A write goes
// through s.write, which follows a shard that moved (moved.go).

func (s *Store) User(ctx context.Context, id int64) (feed.User, error) {
	return s.of(id).User(ctx, id)
}

func (s *Store) TokenGeneration(ctx context.Context, user int64) (int64, error) {
	return s.of(user).TokenGeneration(ctx, user)
}

func (s *Store) RevokeTokens(ctx context.Context, user int64) error {
	return s.write(ctx, s.m.Of(user), func(st *sqlstore.Store) error { return st.RevokeTokens(ctx, user) })
}

func (s *Store) Marker(ctx context.Context, user int64) (feed.Marker, error) {
	return s.of(user).Marker(ctx, user)
}

func (s *Store) SetMarker(ctx context.Context, user, lastRead int64, at time.Time) (out feed.Marker, err error) {
	err = s.write(ctx, s.m.Of(user), func(st *sqlstore.Store) (err error) {
		out, err = st.SetMarker(ctx, user, lastRead, at)
		return err
	})
	return out, err
}

// Hidden reads user's mutes and blocks either way: the blocks by others
// are mirrored onto user's shard (mirror.go).
func (s *Store) Hidden(ctx context.Context, user int64) (feed.Hidden, error) {
	return s.of(user).Hidden(ctx, user)
}

func (s *Store) MarkFeedStale(ctx context.Context, user int64) error {
	return s.write(ctx, s.m.Of(user), func(st *sqlstore.Store) error { return st.MarkFeedStale(ctx, user) })
}

func (s *Store) SetPullMode(ctx context.Context, author int64, pull bool, refan int) (changed bool, err error) {
	err = s.write(ctx, s.m.Of(author), func(st *sqlstore.Store) (err error) {
		changed, err = st.SetPullMode(ctx, author, pull, refan)
		return err
	})
	return changed, err
}

// Following lists whom user follows: the truth of user's follows, on
// user's shard.
func (s *Store) Following(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return s.of(user).Following(ctx, user, after, n)
}

// Followers lists who follows user: on user's shard, the follows of its
// own users and the mirrors of the others' (mirror.go). So do the
// fan-out's follower ranges.
// EachFollower calls fn with every follower of each of authors
// (sqlstore.Store.EachFollower), read on the authors' shards, which hold
// every follower's edge (truth or mirror), one shard after the other.
func (s *Store) EachFollower(ctx context.Context, authors []int64, fn func(follower int64)) error {
	groups := s.byShard(authors)
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		if err := s.Shard(k).EachFollower(ctx, groups[k], fn); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) Followers(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return s.of(user).Followers(ctx, user, after, n)
}

func (s *Store) FollowersInRange(ctx context.Context, user, after, upto int64) ([]int64, error) {
	return s.of(user).FollowersInRange(ctx, user, after, upto)
}

func (s *Store) FollowerRangeEnd(ctx context.Context, user, after int64, n int) (int64, int, error) {
	return s.of(user).FollowerRangeEnd(ctx, user, after, n)
}

func (s *Store) Mutes(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return s.of(user).Mutes(ctx, user, after, n)
}

func (s *Store) Blocks(ctx context.Context, user, after int64, n int) ([]int64, error) {
	return s.of(user).Blocks(ctx, user, after, n)
}

// CreatePost stores p on its author's shard, with its idempotency key and
// its outbox event: a publish touches one shard. p.ID must carry the
// author's shard (feed.IDGen.NextOn). A reply to a post of another shard
// reads its parent there first (ENOTFOUND if gone), and the parent's index
// and count follow through the journal (replies.go).
func (s *Store) CreatePost(ctx context.Context, p feed.Post, idem feed.Idempotency) (out feed.Post, created bool, err error) {
	if s.m.Of(p.ID) != s.m.Of(p.AuthorID) {
		return feed.Post{}, false, feed.Errorf(feed.EINVALID, "post id %d does not carry its author %d's shard (%d of %d)", p.ID, p.AuthorID, s.m.Of(p.AuthorID), s.m.N)
	}
	k := s.m.Of(p.AuthorID)
	if p.IsReply() && s.m.Of(p.InReplyToID) != k {
		if p.InReplyToAuthorID, err = s.replyParent(ctx, p.InReplyToID); err != nil {
			return feed.Post{}, false, err
		}
	}
	if p.IsRepost() && s.m.Of(p.RepostOfID) != k {
		if p.RepostOfAuthorID, err = s.repostOriginal(ctx, p.RepostOfID); err != nil {
			return feed.Post{}, false, err
		}
	}
	s.wrote[k].Store(true)
	var syncs []sqlstore.Sync
	err = s.write(ctx, k, func(st *sqlstore.Store) (err error) {
		out, created, syncs, err = st.CreatePostOn(ctx, s.home(k), p, idem)
		return err
	})
	if err == nil {
		// A failed sync is the repairer's (RunSyncs): the reply is
		// written; only its parent's count and index lag.
		_ = s.settle(ctx, k, syncs)
	}
	return out, created, err
}

func (s *Store) Post(ctx context.Context, id int64) (feed.Post, error) {
	return s.of(id).Post(ctx, id)
}

func (s *Store) EditPost(ctx context.Context, id, author int64, e feed.PostEdit) (out feed.Post, err error) {
	err = s.write(ctx, s.m.Of(id), func(st *sqlstore.Store) (err error) {
		out, err = st.EditPost(ctx, id, author, e)
		return err
	})
	return out, err
}

// DeletePost soft-deletes a post on its shard; a reply's parent on
// another shard loses it from its index and count through the journal.
func (s *Store) DeletePost(ctx context.Context, id, author int64) error {
	k := s.m.Of(id)
	var syncs []sqlstore.Sync
	err := s.write(ctx, k, func(st *sqlstore.Store) (err error) {
		syncs, err = st.DeletePostOn(ctx, s.home(k), id, author)
		return err
	})
	if err == nil {
		_ = s.settle(ctx, k, syncs)
	}
	return err
}

func (s *Store) PostByExternalID(ctx context.Context, author int64, ext string) (feed.Post, error) {
	return s.of(author).PostByExternalID(ctx, author, ext)
}

func (s *Store) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, error) {
	return s.of(author).AuthorPosts(ctx, author, before, n)
}

func (s *Store) AuthorPostIDs(ctx context.Context, author, after, before int64, n int) ([]int64, error) {
	return s.of(author).AuthorPostIDs(ctx, author, after, before, n)
}

func (s *Store) PostLikers(ctx context.Context, post, version, user int64, n int) ([]int64, []int64, error) {
	return s.of(post).PostLikers(ctx, post, version, user, n)
}

func (s *Store) PostLikedBy(ctx context.Context, post int64, users []int64) (map[int64]bool, error) {
	return s.of(post).PostLikedBy(ctx, post, users)
}

// UserLikes and UserLikeEntries read user's likes on user's shard, where
// the likes of posts on other shards are mirrored (mirror.go).
func (s *Store) UserLikes(ctx context.Context, user, before int64, n int) ([]feed.LikeEntry, error) {
	return s.of(user).UserLikes(ctx, user, before, n)
}

func (s *Store) UserLikeEntries(ctx context.Context, user int64, recentN int, posts []int64) ([]feed.LikeEntry, bool, map[int64]feed.LikeEntry, error) {
	return s.of(user).UserLikeEntries(ctx, user, recentN, posts)
}

// Settings, SetSettings: on the user's shard, with the users row.
func (s *Store) Settings(ctx context.Context, user int64) (feed.Settings, error) {
	return s.of(user).Settings(ctx, user)
}

func (s *Store) SetSettings(ctx context.Context, user int64, st feed.Settings) error {
	return s.write(ctx, s.m.Of(user), func(st2 *sqlstore.Store) error { return st2.SetSettings(ctx, user, st) })
}

// FollowingAmong: the truth of user's follows is on user's shard.
func (s *Store) FollowingAmong(ctx context.Context, user int64, ids []int64) ([]int64, error) {
	return s.of(user).FollowingAmong(ctx, user, ids)
}

// A user's notifications live on the user's shard (sqlstore/notices.go).

func (s *Store) NoticePage(ctx context.Context, recipient int64, q feed.NoticeQuery) ([]feed.NoticeGroup, bool, error) {
	return s.of(recipient).NoticePage(ctx, recipient, q)
}

func (s *Store) UnreadNotices(ctx context.Context, recipient, after int64, hide []int64, limit int) (int, bool, error) {
	return s.of(recipient).UnreadNotices(ctx, recipient, after, hide, limit)
}

func (s *Store) NoticeMarker(ctx context.Context, user int64) (feed.Marker, error) {
	return s.of(user).NoticeMarker(ctx, user)
}

func (s *Store) SetNoticeMarker(ctx context.Context, user, lastRead int64, at time.Time) (out feed.Marker, err error) {
	err = s.write(ctx, s.m.Of(user), func(st *sqlstore.Store) (err error) {
		out, err = st.SetNoticeMarker(ctx, user, lastRead, at)
		return err
	})
	return out, err
}

// AddNotice and RemoveNotice run on the recipient's shard.
func (s *Store) AddNotice(ctx context.Context, n feed.Notice) error {
	return s.write(ctx, s.m.Of(n.Recipient), func(st *sqlstore.Store) error { return st.AddNotice(ctx, n) })
}

func (s *Store) RemoveNotice(ctx context.Context, n feed.Notice) error {
	return s.write(ctx, s.m.Of(n.Recipient), func(st *sqlstore.Store) error { return st.RemoveNotice(ctx, n) })
}

// SetNoticeWindow sets every shard's (sqlstore.Store.SetNoticeWindow).
func (s *Store) SetNoticeWindow(d time.Duration) {
	for k := range s.N() {
		s.Shard(k).SetNoticeWindow(d)
	}
}
