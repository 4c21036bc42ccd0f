package social

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// ListStore is what lists.go needs of SQL: a user's lists and their
// members, always the owner's (sqlstore/lists.go).
type ListStore interface {
	CreateList(ctx context.Context, l feed.List) (feed.List, error)
	Lists(ctx context.Context, owner int64) ([]feed.List, error)
	List(ctx context.Context, owner, id int64) (feed.List, error)
	UpdateList(ctx context.Context, owner, id int64, e feed.ListEdit) (feed.List, error)
	DeleteList(ctx context.Context, owner, id int64) error
	AddListMember(ctx context.Context, owner, id, member int64) (bool, error)
	RemoveListMember(ctx context.Context, owner, id, member int64) (bool, error)
	ListMembers(ctx context.Context, owner, id, after int64, n int) ([]int64, error)
	RemoveFromLists(ctx context.Context, owner, member int64) (int, error)
}

// CreateList makes a list of owner's: no members yet. replies "" is the
// default, ListRepliesFollowed. ELIMIT past feed.MaxLists lists.
func (s *Service) CreateList(ctx context.Context, owner int64, name, replies string, exclusive bool) (feed.List, error) {
	if replies == "" {
		replies = feed.ListRepliesFollowed
	}
	if err := feed.CheckListName(name); err != nil {
		return feed.List{}, err
	}
	if err := feed.CheckListReplies(replies); err != nil {
		return feed.List{}, err
	}
	var (
		l   feed.List
		err error
	)
	for attempt := 0; attempt < 4; attempt++ {
		l, err = s.store.CreateList(ctx, feed.List{ID: s.ids.NextOn(owner, s.cfg.Shards), OwnerID: owner, Name: name, Replies: replies, Exclusive: exclusive})
		// Another process drew the same id in the same millisecond.
		if feed.ErrorCode(err) != feed.ECONFLICT {
			break
		}
	}
	if err != nil {
		return feed.List{}, fmt.Errorf("social: create list: %w", err)
	}
	return l, nil
}

// Lists returns owner's lists, oldest first.
func (s *Service) Lists(ctx context.Context, owner int64) ([]feed.List, error) {
	return s.store.Lists(ctx, owner)
}

// List returns owner's list id; ENOTFOUND for another user's list, as for
// one that does not exist.
func (s *Service) List(ctx context.Context, owner, id int64) (feed.List, error) {
	return s.store.List(ctx, owner, id)
}

// UpdateList changes owner's list id. A change of Exclusive changes what
// the owner's home feed holds at once, one of Replies the list's own pages.
func (s *Service) UpdateList(ctx context.Context, owner, id int64, e feed.ListEdit) (feed.List, error) {
	if e.Name != nil {
		if err := feed.CheckListName(*e.Name); err != nil {
			return feed.List{}, err
		}
	}
	if e.Replies != nil {
		if err := feed.CheckListReplies(*e.Replies); err != nil {
			return feed.List{}, err
		}
	}
	before, err := s.store.List(ctx, owner, id)
	if err != nil {
		return feed.List{}, err
	}
	l, err := s.store.UpdateList(ctx, owner, id, e)
	if err != nil {
		return feed.List{}, err
	}
	if l.Replies != before.Replies {
		// The list's pages read its rule for replies with its members.
		s.timeline.ListChanged(owner, id)
	}
	if l.Exclusive != before.Exclusive {
		s.homeChanged(ctx, owner)
	}
	return l, nil
}

// DeleteList deletes owner's list id and its members.
func (s *Service) DeleteList(ctx context.Context, owner, id int64) error {
	l, err := s.store.List(ctx, owner, id)
	if err != nil {
		return err
	}
	if err := s.store.DeleteList(ctx, owner, id); err != nil {
		return err
	}
	s.timeline.ListChanged(owner, id)
	if l.Exclusive {
		s.homeChanged(ctx, owner)
	} else {
		s.followsChanged(ctx, "list deleted", owner) // its streams end
	}
	return nil
}

// AddListMember makes member a member of owner's list id, idempotently:
// any user the owner may see (EBLOCKED when a block stands between them,
// ENOTFOUND for an unknown user). ELIMIT past feed.MaxListMembers.
func (s *Service) AddListMember(ctx context.Context, owner, id, member int64) error {
	if _, err := s.store.User(ctx, member); err != nil {
		return err
	}
	h, err := s.timeline.Hidden(ctx, owner)
	if err != nil {
		return err
	}
	if h.Blocked(member) {
		return feed.Errorf(feed.EBLOCKED, "a block stands between you and user %d", member)
	}
	added, err := s.store.AddListMember(ctx, owner, id, member)
	if err != nil {
		return err
	}
	if added {
		s.memberChanged(ctx, owner, id)
	}
	return nil
}

// RemoveListMember takes member out of owner's list id, idempotently.
func (s *Service) RemoveListMember(ctx context.Context, owner, id, member int64) error {
	removed, err := s.store.RemoveListMember(ctx, owner, id, member)
	if err != nil {
		return err
	}
	if removed {
		s.memberChanged(ctx, owner, id)
	}
	return nil
}

// ListMembers lists the members of owner's list id with ids above after,
// ascending.
func (s *Service) ListMembers(ctx context.Context, owner, id, after int64, n int) ([]feed.User, bool, error) {
	return s.listUsers(ctx, owner, after, n, func(ctx context.Context, owner, after int64, n int) ([]int64, error) {
		return s.store.ListMembers(ctx, owner, id, after, n)
	})
}

// memberChanged follows a change of list id's members: the owner's
// streams of the list listen to the new members (announced on the owner's
// channel), and when the list is exclusive, the owner's home feed holds
// other posts now.
func (s *Service) memberChanged(ctx context.Context, owner, id int64) {
	s.timeline.ListChanged(owner, id)
	l, err := s.store.List(ctx, owner, id)
	if err != nil || l.Exclusive {
		// Unknown (the list was deleted meanwhile, or SQL failed): as if
		// it were exclusive, which costs a reload of the owner's set.
		s.homeChanged(ctx, owner)
		return
	}
	s.followsChanged(ctx, "list members", owner)
}

// homeChanged tells the read engine and the owner's live streams that the
// members of the owner's exclusive lists changed.
func (s *Service) homeChanged(ctx context.Context, owner int64) {
	s.timeline.ExclusiveChanged(ctx, owner)
	s.followsChanged(ctx, "exclusive list", owner)
}

// dropFromLists follows a block: each of the two leaves the other's lists.
func (s *Service) dropFromLists(ctx context.Context, blocker, blocked int64) error {
	for _, e := range [][2]int64{{blocker, blocked}, {blocked, blocker}} {
		if _, err := s.store.RemoveFromLists(ctx, e[0], e[1]); err != nil {
			return err
		}
	}
	return nil
}
