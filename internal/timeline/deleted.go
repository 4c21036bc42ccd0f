package timeline

import (
	"context"
	"time"
)

// Deleted users (social.Service.DeleteUser marks them in SQL; its
// Purger removes their data later): every process hides their posts
// within goneRefresh of the deletion. The reads' hydrate drops posts
// whose author is in the process's set of deleted users, which it reads
// from SQL at most that old.
const (
	// goneRefresh is how old a process's set of deleted users may be.
	goneRefresh = 500 * time.Millisecond
	// goneKeep is how long after its purge finished a user stays in the
	// set: their posts are gone from SQL, but a cache whose tombstone
	// write failed may still hold one until its TTL (the post cache's is
	// an hour by default).
	goneKeep = 24 * time.Hour
)

// goneAuthors is a process's copy of the deleted users.
type goneAuthors struct {
	ids  map[int64]struct{}
	read time.Time
}

// UserDeleted hides user's posts on this process at once, after the
// deletion committed (social.Service.DeleteUser).
func (s *Service) UserDeleted(user int64) { s.markGone(user) }

// markGone adds user to this process's set at once.
func (s *Service) markGone(user int64) {
	for {
		old := s.gone.Load()
		next := &goneAuthors{ids: map[int64]struct{}{user: {}}}
		if old != nil {
			next.read = old.read
			for id := range old.ids {
				next.ids[id] = struct{}{}
			}
		}
		if s.gone.CompareAndSwap(old, next) {
			return
		}
	}
}

// goneSet returns the deleted users, read from SQL if the process's copy
// is older than goneRefresh and sql is set. When SQL fails, the last copy
// serves: a deletion is an SQL write, so none was made since it stopped
// answering.
func (s *Service) goneSet(ctx context.Context, sql bool) map[int64]struct{} {
	cur := s.gone.Load()
	if !sql || (cur != nil && s.now().Sub(cur.read) < goneRefresh) {
		if cur == nil {
			return nil
		}
		return cur.ids
	}
	v, _, _ := s.goneLoads.Do("", func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		start := s.now()
		ids, err := s.store.DeletedUsers(ctx, start.Add(-goneKeep))
		if err != nil {
			// Asked again after goneRefresh, not by every read meanwhile.
			s.logger.Warn("could not read the deleted users; hiding those known", "err", err)
			kept := &goneAuthors{read: start}
			if cur != nil {
				kept.ids = cur.ids
			}
			s.gone.Store(kept)
			return kept, nil
		}
		next := &goneAuthors{ids: make(map[int64]struct{}, len(ids)), read: start}
		for _, id := range ids {
			next.ids[id] = struct{}{}
		}
		s.gone.Store(next)
		return next, nil
	})
	if g, _ := v.(*goneAuthors); g != nil {
		return g.ids
	}
	return nil
}

// DeletedUserIDs returns the users deleted lately (their purge runs or
// ended within a day), as the reads hide them: the notifications leave
// their actions out until the purge has taken their rows (package
// notices).
func (s *Service) DeletedUserIDs(ctx context.Context) []int64 {
	gone := s.goneSet(ctx, true)
	out := make([]int64, 0, len(gone))
	for id := range gone {
		out = append(out, id)
	}
	return out
}
