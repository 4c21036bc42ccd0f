package timeline

import (
	"context"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Mutes and blocks (social.Service makes them). SQL holds them; each reader's whole set (feed.Hidden)
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

// Muted keeps the caches in step with a mute committed in SQL
// (social.Service.Mute): the user's set is published (hiddenChanged), its
// pulled authors read again, and target's posts taken out of its inbox at
// once, which spares the next pages the work (the feed filters target out
// from now on anyway).
func (s *Service) Muted(ctx context.Context, user, target int64) {
	s.hiddenChanged(ctx, user)
	s.forgetPullees(ctx, user)
	if err := s.removeAuthor(ctx, user, target); err != nil {
		s.cacheFailed("mute removal", err)
		s.dropInbox(ctx, user)
	}
}

// Unmuted keeps the caches in step with an unmute. The user's inbox lost
// the target's posts (Muted and the feed's filter took them out), so it is
// dropped and rebuilt complete on the next read.
func (s *Service) Unmuted(ctx context.Context, user int64) {
	s.hiddenChanged(ctx, user)
	s.forgetPullees(ctx, user)
	s.dropInbox(ctx, user)
}

// Blocked keeps the caches in step with a block, which removed the
// follow edges both ways in SQL: both sets are published, and each one's
// inbox loses the other's posts, as after an unfollow.
func (s *Service) Blocked(ctx context.Context, blocker, blocked int64) {
	s.hiddenChanged(ctx, blocker, blocked)
	for _, e := range [][2]int64{{blocker, blocked}, {blocked, blocker}} {
		s.afterGraphChange(ctx, e[0], e[1])
		if err := s.removeAuthor(ctx, e[0], e[1]); err != nil {
			s.cacheFailed("block removal", err)
			s.dropInbox(ctx, e[0])
		}
	}
}

// ExclusiveChanged keeps the caches in step with a change of the members
// of owner's exclusive lists, which owner's home feed leaves out: owner's
// set is published again.
func (s *Service) ExclusiveChanged(ctx context.Context, owner int64) {
	s.hiddenChanged(ctx, owner)
}

// Unblocked keeps the caches in step with an unblock: both sets are
// published. (The follow edges the block removed stay removed.)
func (s *Service) Unblocked(ctx context.Context, blocker, blocked int64) {
	s.hiddenChanged(ctx, blocker, blocked)
}

// Hidden returns what viewer must not see (0, the admin: nothing): one
// cache lookup, or on a miss one SQL read whose result is cached.
func (s *Service) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	if viewer == 0 {
		return feed.Hidden{}, nil
	}
	// A viewer who wrote within HiddenTTL (a mute, a block, through
	// another process maybe) may be newer than this process's copy; as
	// much again covers the two hosts' clocks.
	if h, ok := s.hidden.Get(viewer); ok && !s.wroteSince(ctx, 2*s.cfg.HiddenTTL) {
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

// ForgetHidden drops user's shared mute and block set from kv, for the
// purge of a deleted user (social.Purger): a user created later with the
// id starts with none.
func ForgetHidden(ctx context.Context, kv feed.KV, user int64) error {
	v, ok, err := kv.Get(ctx, hiddenKey(user))
	if err != nil || !ok {
		return nil // a failed read leaves the set to expire, as a failed delete does
	}
	_, err = kv.CompareAndDelete(ctx, hiddenKey(user), v)
	return err
}

// wroteSince reports whether the user ctx reads for wrote within the last
// d (feed.WithLastWrite): a copy this process took up to d ago may miss it.
func (s *Service) wroteSince(ctx context.Context, d time.Duration) bool {
	t, ok := feed.LastWrite(ctx)
	return ok && s.now().Sub(t) <= d
}
