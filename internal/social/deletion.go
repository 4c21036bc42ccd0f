package social

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// DeletionStore is what deletion.go needs of SQL.
type DeletionStore interface {
	DeleteUser(ctx context.Context, user int64) (feed.Purge, bool, error)
	Purge(ctx context.Context, user int64) (feed.Purge, error)
}

// Account deletion happens in two steps. DeleteUser marks the user deleted
// in SQL, in one statement with the job's row: from that commit on, every
// read of users skips them (their page and lists answer 404, their tokens
// are refused once the token caches learn of it, within TokenCheckTTL),
// and every process hides their posts within a moment (the read engine's
// set of deleted users: timeline.Service.UserDeleted). Hiding at read
// time, rather than marking each post, costs the deletion one statement
// whatever the user's post count, and reaches every copy of a post at
// once: the inboxes, the author lists, the post cache, the processes' hot
// posts.
//
// Then a Purger on a work process removes the user's data in batches
// (sqlstore.PurgeBatch) and makes the caches forget it (purge.go).

// DeleteUser deletes user: at once for the API, then in the background
// for their data. It returns the purge, also when one already runs.
// ENOTFOUND for an unknown user.
func (s *Service) DeleteUser(ctx context.Context, user int64) (feed.Purge, error) {
	p, started, err := s.store.DeleteUser(ctx, user)
	if err != nil {
		return feed.Purge{}, err
	}
	if started {
		s.logger.Info("user deleted; purge queued", "user", user)
	}
	s.timeline.UserDeleted(user)
	if err := s.tokensChanged(ctx, user); err != nil {
		s.logger.Warn("deleted user's token standing not published; other processes refuse their tokens once their copies expire", "user", user, "err", err)
	}
	s.tokensEnded(ctx, "user deleted", user)
	return p, nil
}

// Purge returns the state of user's last deletion; ENOTFOUND if none.
func (s *Service) Purge(ctx context.Context, user int64) (feed.Purge, error) {
	return s.store.Purge(ctx, user)
}
