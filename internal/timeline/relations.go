package timeline

import (
	"context"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Mutes and blocks. SQL holds them; each reader's whole set (feed.Hidden)
// is looked up once per page, so that filtering costs one map lookup per
// post, whatever the size of the set. The set is kept in the process for
// HiddenTTL (1 s), and in the shared cache under one key for hiddenTTL;
// a miss of both reads it from SQL (one statement) and caches it.
//
// A change puts the fresh set, read from SQL after its commit, in the
// process, so it shows there at once, and replaces the shared copy with a
// short-lived marker no reader can decode: until it expires, readers on
// other processes read the set from SQL (and see the change within
// HiddenTTL), and none can cache a set read before the change (a reader
// caches with SET NX, which the marker blocks). Writing the fresh set
// itself would let two changes racing on one user leave the older one
// cached for an hour.

// hiddenTTL is how long a shared cached set lives.
const hiddenTTL = time.Hour

// changedMarkTTL is how long a change's marker holds a set out of the
// shared cache: longer than a reader takes between its SQL read and its
// SET NX.
const changedMarkTTL = 2 * time.Second

// hiddenSets bounds the sets a process keeps in memory.
const hiddenSets = 100_000

func hiddenKey(user int64) string { return "hidden:{" + strconv.FormatInt(user, 10) + "}" }

// Mute hides target's posts from user's home feed. It is idempotent;
// user still follows target, and target notices nothing.
func (s *Service) Mute(ctx context.Context, user, target int64) error {
	if err := feed.CheckNotSelf("mute", user, target); err != nil {
		return err
	}
	if _, err := s.store.Mute(ctx, user, target); err != nil {
		return err
	}
	s.hiddenChanged(ctx, user)
	s.forgetPullees(ctx, user)
	// The feed filters target out from now on; taking its posts out of the
	// inbox at once spares the next pages the work.
	if err := s.removeAuthor(ctx, user, target); err != nil {
		s.cacheFailed("mute removal", err)
		s.dropInbox(ctx, user)
	}
	s.followsChanged(ctx, "mute", user)
	return nil
}

// Unmute undoes Mute, idempotently. The reader's inbox lost target's
// posts (Mute and the feed's filter took them out), so it is dropped and
// rebuilt complete on the next read.
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
	s.hiddenChanged(ctx, user)
	s.forgetPullees(ctx, user)
	s.dropInbox(ctx, user)
	s.followsChanged(ctx, "unmute", user)
	return nil
}

// Block makes blocker block blocked: the follow edges between them go
// both ways (in SQL, with the counts; here, with each one's inbox), and
// while it stands neither can follow the other nor sees the other's posts
// or likes. It is idempotent, and redoes the cache part on a repeat, as
// Unfollow does.
func (s *Service) Block(ctx context.Context, blocker, blocked int64) error {
	if err := feed.CheckNotSelf("block", blocker, blocked); err != nil {
		return err
	}
	if _, err := s.store.Block(ctx, blocker, blocked); err != nil {
		return err
	}
	s.hiddenChanged(ctx, blocker, blocked)
	for _, e := range [][2]int64{{blocker, blocked}, {blocked, blocker}} {
		s.afterGraphChange(ctx, e[0], e[1])
		if err := s.removeAuthor(ctx, e[0], e[1]); err != nil {
			s.cacheFailed("block removal", err)
			s.dropInbox(ctx, e[0])
		}
	}
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
	s.hiddenChanged(ctx, blocker, blocked)
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

// Hidden returns what viewer must not see (0, the admin: nothing): one
// cache lookup, or on a miss one SQL read whose result is cached.
func (s *Service) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	if viewer == 0 {
		return feed.Hidden{}, nil
	}
	if h, ok := s.hidden.Get(viewer); ok {
		return h, nil
	}
	if h, ok := s.cachedHidden(ctx, viewer); ok {
		s.hidden.Put(viewer, h)
		return h, nil
	}
	h, err := s.store.Hidden(ctx, viewer)
	if err != nil {
		return feed.Hidden{}, err
	}
	// SetNX, not Set: a change that committed after this read has written
	// the newer set, which must not be overwritten with this one.
	if _, err := s.cache.SetNX(ctx, hiddenKey(viewer), h.Encode(), hiddenTTL); err != nil {
		s.cacheFailed("cache hidden set", err)
	}
	s.hidden.Put(viewer, h)
	return h, nil
}

// cachedHidden is viewer's set as the cache has it, if it does.
func (s *Service) cachedHidden(ctx context.Context, viewer int64) (feed.Hidden, bool) {
	v, ok, err := s.cache.Get(ctx, hiddenKey(viewer))
	if err != nil {
		s.cacheFailed("hidden set", err)
		return feed.Hidden{}, false
	}
	if !ok {
		return feed.Hidden{}, false
	}
	return feed.DecodeHidden(v)
}

// hiddenChanged publishes each user's changed set (see above). The change
// is committed: a failure here is logged.
func (s *Service) hiddenChanged(ctx context.Context, users ...int64) {
	ctx, cancel := detached(ctx)
	defer cancel()
	for _, u := range users {
		if err := s.cache.Set(ctx, hiddenKey(u), "changed", changedMarkTTL); err != nil {
			// The shared copy may be the old set for up to hiddenTTL.
			s.cacheFailed("mark hidden set changed", err)
			s.markStale(ctx, u)
		}
		h, err := s.store.Hidden(ctx, u)
		if err != nil {
			s.logger.Warn("could not reload a changed mute and block set; this process shows the change within its lifetime", "user", u, "err", err)
			continue
		}
		s.hidden.Put(u, h)
	}
}
