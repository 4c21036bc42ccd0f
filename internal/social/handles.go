package social

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// HandleStore is what handles.go needs of SQL: changing a profile, and
// finding people by handle and name.
type HandleStore interface {
	UpdateUser(ctx context.Context, user int64, e feed.UserEdit) (feed.User, error)
	UserByHandle(ctx context.Context, h string) (feed.User, error)
	// SearchHandles and SearchNames read ranges of an index, after a
	// position, in order (sqlstore.Store's say which).
	SearchHandles(ctx context.Context, prefix, after string, n int) ([]feed.User, error)
	SearchNames(ctx context.Context, prefix, afterKey string, afterID int64, n int) ([]feed.User, error)
	Relationship(ctx context.Context, user, other int64) (feed.Relationship, error)
}

// UpdateUser changes user's name, handle or both (a Handle of "" removes
// it); EHANDLETAKEN for a handle another user holds, and then nothing
// changes.
func (s *Service) UpdateUser(ctx context.Context, user int64, e feed.UserEdit) (feed.User, error) {
	if err := e.Check(); err != nil {
		return feed.User{}, err
	}
	u, err := s.store.UpdateUser(ctx, user, e)
	if err != nil {
		return feed.User{}, err
	}
	u.DeliveryMode = s.cfg.Policy.ModeOf(u)
	return u, nil
}

// UserByHandle returns the user whose handle is h, whatever its case;
// ENOTFOUND if none, or if a block stands between viewer and them.
func (s *Service) UserByHandle(ctx context.Context, viewer int64, h string) (feed.User, error) {
	low, err := feed.CheckHandle(h)
	if err != nil {
		return feed.User{}, err
	}
	u, err := s.store.UserByHandle(ctx, low)
	if err != nil {
		return feed.User{}, err
	}
	hidden, err := s.timeline.Hidden(ctx, viewer)
	if err != nil {
		return feed.User{}, err
	}
	if hidden.Blocked(u.ID) {
		return feed.User{}, feed.Errorf(feed.ENOTFOUND, "no user has the handle %q", low)
	}
	u.DeliveryMode = s.cfg.Policy.ModeOf(u)
	return u, nil
}

// searchRounds bounds the reads of one search's part: each reads ahead
// of the share the viewer's blocks filtered (feed.ReadAhead).
const searchRounds = 4

// SearchUsers finds up to n users for the query q (feed.ParseUserQuery)
// as viewer sees them: those whose handle starts with it first, in handle
// order, then those whose name does, in name order; users a block stands
// between, either way, are left out.
func (s *Service) SearchUsers(ctx context.Context, viewer int64, q string, n int) ([]feed.User, error) {
	uq, err := feed.ParseUserQuery(q)
	if err != nil {
		return nil, err
	}
	hidden, err := s.timeline.Hidden(ctx, viewer)
	if err != nil {
		return nil, err
	}
	found := make([]feed.User, 0, n)
	seen := map[int64]bool{}
	read := 0
	// ahead is how many users the next round reads (feed.ReadAhead).
	ahead := func() int { return feed.ReadAhead(n-len(found), read, len(found)) }
	// keep adds the users a round read that the viewer may see, and
	// reports whether the part should read on.
	keep := func(round []feed.User, asked int) bool {
		read += len(round)
		for _, u := range round {
			if len(found) < n && !seen[u.ID] && !hidden.Blocked(u.ID) {
				seen[u.ID] = true
				found = append(found, u)
			}
		}
		return len(round) == asked && len(found) < n
	}
	if uq.Handle != "" {
		after := ""
		for r := 0; r < searchRounds; r++ {
			asked := ahead()
			round, err := s.store.SearchHandles(ctx, uq.Handle, after, asked)
			if err != nil {
				return nil, err
			}
			if !keep(round, asked) {
				break
			}
			after = round[len(round)-1].Handle
		}
	}
	if uq.Name != "" && len(found) < n {
		afterKey, afterID := "", int64(0)
		for r := 0; r < searchRounds; r++ {
			// Users found by handle come again here when their name
			// matches too: read as many more.
			asked := ahead() + len(seen)
			round, err := s.store.SearchNames(ctx, uq.Name, afterKey, afterID, asked)
			if err != nil {
				return nil, err
			}
			if !keep(round, asked) {
				break
			}
			last := round[len(round)-1]
			afterKey, afterID = feed.NameKey(last.Name), last.ID
		}
	}
	return found, nil
}

// Relationship says how user stands to other: ENOTFOUND for an unknown
// other, or one who blocks user (unless user blocks them too: a user sees
// their own blocks), EINVALID for oneself.
func (s *Service) Relationship(ctx context.Context, user, other int64) (feed.Relationship, error) {
	if err := feed.CheckNotSelf("have a relationship with", user, other); err != nil {
		return feed.Relationship{}, err
	}
	if _, err := s.store.User(ctx, other); err != nil {
		return feed.Relationship{}, err
	}
	r, err := s.store.Relationship(ctx, user, other)
	if err != nil {
		return feed.Relationship{}, err
	}
	if r.BlockedBy && !r.Blocking {
		return feed.Relationship{}, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", other)
	}
	return r, nil
}
