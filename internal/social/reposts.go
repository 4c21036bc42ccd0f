package social

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// RepostStore is what reposts.go needs of SQL (docs/reposts.md).
type RepostStore interface {
	Post(ctx context.Context, id int64) (feed.Post, error)
	RepostOf(ctx context.Context, user, post int64) (int64, error)
	ShowReposts(ctx context.Context, user, target int64, show bool) error
}

// Repost makes user repost post id (a repost of a repost reposts its
// original) and returns the original's id. It is idempotent: a user has
// at most one live repost of a post. The repost is a post of user's,
// created through Publish's path (its outbox event fans it out to user's
// followers), whose transaction moves the original's repost_count. An
// unknown or deleted post is ENOTFOUND; a block between the two users is
// EBLOCKED.
func (s *Service) Repost(ctx context.Context, user, id int64) (int64, error) {
	original, err := s.original(ctx, id)
	if err != nil {
		return 0, err
	}
	if existing, err := s.store.RepostOf(ctx, user, original); err != nil || existing != 0 {
		return original, err
	}
	var p feed.Post
	for attempt := 0; ; attempt++ {
		rid := s.ids.NextOn(user, s.cfg.Shards)
		p, _, err = s.store.CreatePost(ctx, feed.Post{ID: rid, AuthorID: user, CreatedAt: feed.IDTime(rid), RepostOfID: original}, feed.Idempotency{})
		if feed.ErrorCode(err) != feed.ECONFLICT {
			break
		}
		// A concurrent repost of the same post won (its reposts row), or
		// another process drew the same id: the first is done, the
		// second draws again.
		if existing, rerr := s.store.RepostOf(ctx, user, original); rerr != nil || existing != 0 || attempt == 3 {
			if rerr == nil && existing == 0 {
				rerr = err
			}
			return original, rerr
		}
	}
	if err != nil {
		return 0, fmt.Errorf("social: repost %d: %w", original, err)
	}
	s.timeline.PostCreated(p)
	if s.replied != nil {
		s.replied(ctx, p.ID, original)
	}
	// A first repost: the user's pages ask which posts it reposted from
	// now on (feed.Hidden.Reposter).
	if h, err := s.timeline.Hidden(ctx, user); err != nil || !h.Reposter() {
		s.timeline.SettingsChanged(ctx, user)
	}
	// The original's author is notified where the repost's index row is
	// written on the original's shard (sqlstore/counted.go, repostIndex's
	// notice): once whatever the journal's replays, gone with an unrepost
	// or a purge.
	return original, nil
}

// Unrepost takes user's repost of post id (or of the original a repost
// id names) away, as a delete of the repost's post: it leaves the feeds
// and streams that hold it, and the original's count. Idempotent; an
// unknown or deleted post is ENOTFOUND.
func (s *Service) Unrepost(ctx context.Context, user, id int64) (int64, error) {
	original, err := s.original(ctx, id)
	if err != nil {
		return 0, err
	}
	rid, err := s.store.RepostOf(ctx, user, original)
	if err != nil || rid == 0 {
		return original, err
	}
	if err := s.DeletePost(ctx, user, rid); err != nil && feed.ErrorCode(err) != feed.ENOTFOUND {
		return 0, fmt.Errorf("social: unrepost %d: %w", original, err)
	}
	return original, nil
}

// original returns the live post a repost of id reposts: id itself, or
// the original of a repost.
func (s *Service) original(ctx context.Context, id int64) (int64, error) {
	p, err := s.store.Post(ctx, id)
	if err == nil && !p.Deleted && p.IsRepost() {
		p, err = s.store.Post(ctx, p.RepostOfID)
	}
	if err == nil && p.Deleted {
		err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	if err != nil {
		return 0, err
	}
	return p.ID, nil
}

// FollowShowing is Follow with the follower's choice of the followee's
// reposts in its home feed: nil keeps an existing follow's choice and
// shows them on a new one.
func (s *Service) FollowShowing(ctx context.Context, follower, followee int64, reposts *bool) error {
	if err := feed.CheckNotSelf("follow", follower, followee); err != nil {
		return err
	}
	changed, err := s.store.Follow(ctx, follower, followee)
	if err != nil {
		return err
	}
	s.timeline.Followed(ctx, follower, followee, changed)
	s.followsChanged(ctx, "follow", follower)
	switch {
	case reposts != nil:
		return s.showReposts(ctx, follower, followee, *reposts, true)
	case !changed:
		return nil
	}
	// A new follow shows the followee's reposts: a choice left from an
	// earlier follow is cleared, but only when the reader's set has one,
	// so that a plain follow costs no write and keeps the reader's cached
	// set (a set published again is read from SQL for a moment by every
	// process).
	return s.showReposts(ctx, follower, followee, true, false)
}

// showReposts writes follower's choice of followee's reposts and has the
// caches read the hidden set again. Unless always, it skips the write
// when the reader's hidden set (cached, maybe stale by HiddenTTL) has the
// choice already: an unfollow, which clears a choice rarely made.
func (s *Service) showReposts(ctx context.Context, follower, followee int64, show, always bool) error {
	if !always {
		if hidden, err := s.timeline.Hidden(ctx, follower); err == nil && hidden.HidesRepostsOf(followee) != show {
			return nil
		}
	}
	if err := s.store.ShowReposts(ctx, follower, followee, show); err != nil {
		return err
	}
	s.timeline.SettingsChanged(ctx, follower)
	return nil
}
