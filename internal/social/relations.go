package social

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// RelationStore is what relations.go needs of SQL: mutes and blocks.
// (Each reader's whole set, feed.Hidden, is the read engine's:
// timeline.Service.Hidden.)
type RelationStore interface {
	Mute(ctx context.Context, user, target int64) (bool, error)
	Unmute(ctx context.Context, user, target int64) (bool, error)
	Block(ctx context.Context, blocker, blocked int64) (bool, error)
	Unblock(ctx context.Context, blocker, blocked int64) (bool, error)
	Mutes(ctx context.Context, user, after int64, n int) ([]int64, error)
	Blocks(ctx context.Context, user, after int64, n int) ([]int64, error)
}

// Mute hides target's posts from user's home feed. It is idempotent;
// user still follows target, and target notices nothing.
func (s *Service) Mute(ctx context.Context, user, target int64) error {
	if err := feed.CheckNotSelf("mute", user, target); err != nil {
		return err
	}
	if _, err := s.store.Mute(ctx, user, target); err != nil {
		return err
	}
	s.timeline.Muted(ctx, user, target)
	s.followsChanged(ctx, "mute", user)
	return nil
}

// Unmute undoes Mute, idempotently.
func (s *Service) Unmute(ctx context.Context, user, target int64) error {
	if err := feed.CheckNotSelf("mute", user, target); err != nil {
		return err
	}
	if _, err := s.store.User(ctx, target); err != nil {
		return err
	}
	if _, err := s.store.Unmute(ctx, user, target); err != nil {
		return err
	}
	s.timeline.Unmuted(ctx, user)
	s.followsChanged(ctx, "unmute", user)
	return nil
}

// Block makes blocker block blocked: the follow edges between them go
// both ways (in SQL, with the counts; in the read engine, with each one's
// inbox), and while it stands neither can follow the other nor sees the
// other's posts or likes. It is idempotent, and redoes the cache part on
// a repeat, as Unfollow does.
func (s *Service) Block(ctx context.Context, blocker, blocked int64) error {
	if err := feed.CheckNotSelf("block", blocker, blocked); err != nil {
		return err
	}
	if _, err := s.store.Block(ctx, blocker, blocked); err != nil {
		return err
	}
	// Each leaves the other's lists (on a repeat too, which repairs what a
	// crash between the two left).
	if err := s.dropFromLists(ctx, blocker, blocked); err != nil {
		return err
	}
	s.timeline.Blocked(ctx, blocker, blocked)
	// A block hides each from the other's feed: both readers' streams
	// read their hidden authors again.
	s.followsChanged(ctx, "block", blocked, blocker)
	return nil
}

// Unblock lifts blocker's block of blocked, idempotently. The follow
// edges it removed stay removed.
func (s *Service) Unblock(ctx context.Context, blocker, blocked int64) error {
	if err := feed.CheckNotSelf("block", blocker, blocked); err != nil {
		return err
	}
	if _, err := s.store.User(ctx, blocked); err != nil {
		return err
	}
	if _, err := s.store.Unblock(ctx, blocker, blocked); err != nil {
		return err
	}
	s.timeline.Unblocked(ctx, blocker, blocked)
	s.followsChanged(ctx, "unblock", blocked, blocker)
	return nil
}

// Mutes lists the users user mutes with ids above after, ascending.
func (s *Service) Mutes(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error) {
	return s.listUsers(ctx, user, after, n, s.store.Mutes)
}

// Blocks lists the users user blocks with ids above after, ascending.
func (s *Service) Blocks(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error) {
	return s.listUsers(ctx, user, after, n, s.store.Blocks)
}
