package timeline

import (
	"context"
	"errors"
	"strconv"

	"github.com/feedd/feedd/internal/feed"
)

// CreateUser stores a user. id 0 means feedd picks one.
func (s *Service) CreateUser(ctx context.Context, id int64, name string) (feed.User, error) {
	if err := feed.CheckName(name); err != nil {
		return feed.User{}, err
	}
	if id < 0 {
		return feed.User{}, feed.Errorf(feed.EINVALID, "id must be a positive integer")
	}
	generated := id == 0
	for attempt := 0; ; attempt++ {
		if generated {
			id = s.ids.Next()
		}
		u, err := s.store.CreateUser(ctx, feed.User{ID: id, Name: name})
		if err == nil || !generated || feed.ErrorCode(err) != feed.ECONFLICT || attempt == 3 {
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

// errIs reports whether err carries the domain code.
func errIs(err error, code string) bool {
	var e *feed.Error
	return errors.As(err, &e) && e.Code == code
}
