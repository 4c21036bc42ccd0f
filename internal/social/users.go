package social

import (
	"context"
	"strconv"

	"github.com/feedd/feedd/internal/feed"
)

// UserStore is what users.go needs of SQL.
type UserStore interface {
	CreateUser(ctx context.Context, u feed.User) (feed.User, error)
	User(ctx context.Context, id int64) (feed.User, error)
	Users(ctx context.Context, ids []int64) (map[int64]feed.User, error)
}

// CreateUser stores a user, with handle unless "" (feed.CheckHandle: a
// handle with capitals is folded to lower case). id 0 means feedd picks
// one.
func (s *Service) CreateUser(ctx context.Context, id int64, name, handle string) (feed.User, error) {
	if err := feed.CheckName(name); err != nil {
		return feed.User{}, err
	}
	if handle != "" {
		h, err := feed.CheckHandle(handle)
		if err != nil {
			return feed.User{}, err
		}
		handle = h
	}
	if id < 0 {
		return feed.User{}, feed.Errorf(feed.EINVALID, "id must be a positive integer")
	}
	generated := id == 0
	for attempt := 0; ; attempt++ {
		if generated {
			id = s.ids.Next()
		}
		u, err := s.store.CreateUser(ctx, feed.User{ID: id, Name: name, Handle: handle})
		if err == nil {
			// Another process may remember that no such user exists
			// (tokens of an earlier user of the id): tell them at once. The
			// user is created either way; only a cache outage fails this.
			if err := s.tokensChanged(ctx, u.ID); err != nil {
				s.logger.Warn("new user's token standing not published; processes that read an older answer from the cache may refuse their tokens until it expires", "user", u.ID, "err", err)
			}
			return u, nil
		}
		if !generated || feed.ErrorCode(err) != feed.ECONFLICT || attempt == 3 {
			return u, err
		}
	}
}

// User returns a user, with its current delivery mode.
//
// Concurrent reads of one user (a celebrity's profile and counts, during
// the hot event) collapse into one SQL query.
func (s *Service) User(ctx context.Context, id int64) (feed.User, error) {
	v, err, _ := s.users.Do(strconv.FormatInt(id, 10), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		return s.store.User(ctx, id)
	})
	if err != nil {
		return feed.User{}, err
	}
	u := v.(feed.User)
	u.DeliveryMode = s.cfg.Policy.ModeOf(u)
	return u, nil
}

// Followers lists user's followers with ids above after, ascending, and
// whether more exist.
func (s *Service) Followers(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error) {
	return s.listUsers(ctx, user, after, n, s.store.Followers)
}

// Following lists whom user follows with ids above after, ascending.
func (s *Service) Following(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error) {
	return s.listUsers(ctx, user, after, n, s.store.Following)
}

func (s *Service) listUsers(ctx context.Context, user, after int64, n int,
	list func(ctx context.Context, user, after int64, n int) ([]int64, error)) ([]feed.User, bool, error) {
	if _, err := s.store.User(ctx, user); err != nil {
		return nil, false, err
	}
	ids, err := list(ctx, user, after, n+1)
	if err != nil {
		return nil, false, err
	}
	more := len(ids) > n
	if more {
		ids = ids[:n]
	}
	byID, err := s.store.Users(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	out := make([]feed.User, 0, len(ids))
	for _, id := range ids {
		if u, ok := byID[id]; ok {
			out = append(out, u)
		}
	}
	return out, more, nil
}
