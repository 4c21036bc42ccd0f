package httpapi

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/feedd/feedd/internal/feed"
)

// The fake's handles, search and relationships: the rules the real
// service keeps, in memory.

// handleHolder is the user holding h, 0 for none; f.mu is held.
func (f *fakeService) handleHolder(h string) int64 {
	if h == "" {
		return 0
	}
	for id, u := range f.users {
		if u.Handle == h {
			return id
		}
	}
	return 0
}

func (f *fakeService) UpdateUser(ctx context.Context, user int64, e feed.UserEdit) (feed.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("UpdateUser", user, e.Name, e.Handle); err != nil {
		return feed.User{}, err
	}
	if err := e.Check(); err != nil {
		return feed.User{}, err
	}
	u, ok := f.users[user]
	if !ok {
		return feed.User{}, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	if e.Handle != nil {
		if h := f.handleHolder(*e.Handle); h != 0 && h != user {
			return feed.User{}, feed.HandleTaken(*e.Handle)
		}
		u.Handle = *e.Handle
	}
	if e.Name != nil {
		u.Name = *e.Name
	}
	f.users[user] = u
	return f.withCounts(u), nil
}

func (f *fakeService) blockedEitherWay(a, b int64) bool {
	return f.blocks[[2]int64{a, b}] || f.blocks[[2]int64{b, a}]
}

func (f *fakeService) UserByHandle(ctx context.Context, viewer int64, h string) (feed.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("UserByHandle", viewer, h); err != nil {
		return feed.User{}, err
	}
	low, err := feed.CheckHandle(h)
	if err != nil {
		return feed.User{}, err
	}
	id := f.handleHolder(low)
	if id == 0 || f.blockedEitherWay(viewer, id) {
		return feed.User{}, feed.Errorf(feed.ENOTFOUND, "no user has the handle %q", low)
	}
	return f.withCounts(f.users[id]), nil
}

func (f *fakeService) SearchUsers(ctx context.Context, viewer int64, q string, n int) ([]feed.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("SearchUsers", viewer, q, n); err != nil {
		return nil, err
	}
	uq, err := feed.ParseUserQuery(q)
	if err != nil {
		return nil, err
	}
	var byHandle, byName []feed.User
	for id, u := range f.users {
		switch {
		case f.blockedEitherWay(viewer, id):
		case uq.Handle != "" && u.Handle != "" && strings.HasPrefix(u.Handle, uq.Handle):
			byHandle = append(byHandle, u)
		case uq.Name != "" && strings.HasPrefix(feed.NameKey(u.Name), uq.Name):
			byName = append(byName, u)
		}
	}
	slices.SortFunc(byHandle, func(a, b feed.User) int { return cmp.Compare(a.Handle, b.Handle) })
	slices.SortFunc(byName, func(a, b feed.User) int {
		return cmp.Or(cmp.Compare(feed.NameKey(a.Name), feed.NameKey(b.Name)), cmp.Compare(a.ID, b.ID))
	})
	all := append(byHandle, byName...)
	return all[:min(n, len(all))], nil
}

func (f *fakeService) Relationship(ctx context.Context, user, other int64) (feed.Relationship, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Relationship", user, other); err != nil {
		return feed.Relationship{}, err
	}
	if err := feed.CheckNotSelf("have a relationship with", user, other); err != nil {
		return feed.Relationship{}, err
	}
	if _, ok := f.users[other]; !ok || f.blocks[[2]int64{other, user}] && !f.blocks[[2]int64{user, other}] {
		return feed.Relationship{}, feed.Errorf(feed.ENOTFOUND, "user %d does not exist", other)
	}
	r := feed.Relationship{
		Following:  f.follows[user][other],
		FollowedBy: f.follows[other][user],
		Muting:     f.mutes[[2]int64{user, other}],
		Blocking:   f.blocks[[2]int64{user, other}],
	}
	r.Reposts = r.Following
	return r, nil
}
