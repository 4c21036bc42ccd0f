package httpapi

import (
	"context"
	"slices"

	"github.com/feedd/feedd/internal/feed"
)

// The fake's lists: the store's rules (sqlstore/lists.go) in memory.

// fakeList is a list with its members.
type fakeList struct {
	feed.List
	members map[int64]bool
	marker  feed.Marker
}

// listOf returns owner's list id; the caller holds the lock.
func (f *fakeService) listOf(owner, id int64) (*fakeList, error) {
	if l, ok := f.lists[id]; ok && l.OwnerID == owner {
		return l, nil
	}
	return nil, feed.Errorf(feed.ENOTFOUND, "list %d does not exist", id)
}

func (f *fakeService) CreateList(ctx context.Context, owner int64, name, replies string, exclusive bool) (feed.List, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CreateList", owner, name, replies, exclusive); err != nil {
		return feed.List{}, err
	}
	if replies == "" {
		replies = feed.ListRepliesFollowed
	}
	n := 0
	for _, l := range f.lists {
		if l.OwnerID == owner {
			n++
		}
	}
	if n >= feed.MaxLists {
		return feed.List{}, feed.Errorf(feed.ELIMIT, "a user has at most %d lists", feed.MaxLists)
	}
	f.nextID++
	l := &fakeList{List: feed.List{ID: f.nextID, OwnerID: owner, Name: name, Replies: replies, Exclusive: exclusive}, members: map[int64]bool{}}
	if f.lists == nil {
		f.lists = map[int64]*fakeList{}
	}
	f.lists[l.ID] = l
	return l.List, nil
}

func (f *fakeService) Lists(ctx context.Context, owner int64) ([]feed.List, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Lists", owner); err != nil {
		return nil, err
	}
	out := []feed.List{}
	for _, l := range f.lists {
		if l.OwnerID == owner {
			out = append(out, l.List)
		}
	}
	slices.SortFunc(out, func(a, b feed.List) int { return int(a.ID - b.ID) })
	return out, nil
}

func (f *fakeService) List(ctx context.Context, owner, id int64) (feed.List, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("List", owner, id); err != nil {
		return feed.List{}, err
	}
	l, err := f.listOf(owner, id)
	if err != nil {
		return feed.List{}, err
	}
	return l.List, nil
}

func (f *fakeService) UpdateList(ctx context.Context, owner, id int64, e feed.ListEdit) (feed.List, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("UpdateList", owner, id); err != nil {
		return feed.List{}, err
	}
	l, err := f.listOf(owner, id)
	if err != nil {
		return feed.List{}, err
	}
	if e.Name != nil {
		l.Name = *e.Name
	}
	if e.Replies != nil {
		l.Replies = *e.Replies
	}
	if e.Exclusive != nil {
		l.Exclusive = *e.Exclusive
	}
	return l.List, nil
}

func (f *fakeService) DeleteList(ctx context.Context, owner, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("DeleteList", owner, id); err != nil {
		return err
	}
	if _, err := f.listOf(owner, id); err != nil {
		return err
	}
	delete(f.lists, id)
	return nil
}

func (f *fakeService) AddListMember(ctx context.Context, owner, id, member int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("AddListMember", owner, id, member); err != nil {
		return err
	}
	if _, ok := f.users[member]; !ok {
		return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", member)
	}
	if f.blocks[[2]int64{owner, member}] || f.blocks[[2]int64{member, owner}] {
		return feed.Errorf(feed.EBLOCKED, "a block stands between you and user %d", member)
	}
	l, err := f.listOf(owner, id)
	if err != nil || l.members[member] {
		return err
	}
	if len(l.members) >= feed.MaxListMembers {
		return feed.Errorf(feed.ELIMIT, "a list has at most %d members", feed.MaxListMembers)
	}
	l.members[member] = true
	l.MemberCount++
	return nil
}

func (f *fakeService) RemoveListMember(ctx context.Context, owner, id, member int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("RemoveListMember", owner, id, member); err != nil {
		return err
	}
	l, err := f.listOf(owner, id)
	if err != nil || !l.members[member] {
		return err
	}
	delete(l.members, member)
	l.MemberCount--
	return nil
}

func (f *fakeService) ListMembers(ctx context.Context, owner, id, after int64, n int) ([]feed.User, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListMembers", owner, id, after, n); err != nil {
		return nil, false, err
	}
	l, err := f.listOf(owner, id)
	if err != nil {
		return nil, false, err
	}
	var ids []int64
	for m := range l.members {
		if m > after {
			ids = append(ids, m)
		}
	}
	slices.Sort(ids)
	more := len(ids) > n
	out := []feed.User{}
	for _, m := range ids[:min(n, len(ids))] {
		out = append(out, f.users[m])
	}
	return out, more, nil
}

func (f *fakeService) ListFeed(ctx context.Context, reader, list, before int64, n int) (feed.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListFeed", reader, list, before, n); err != nil {
		return feed.Page{}, err
	}
	l, err := f.listOf(reader, list)
	if err != nil {
		return feed.Page{}, err
	}
	return feed.PageOf(f.postPage(func(p feed.Post) bool { return l.members[p.AuthorID] }, before, n)), nil
}

func (f *fakeService) ListMarker(ctx context.Context, reader, list int64) (feed.Marker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListMarker", reader, list); err != nil {
		return feed.Marker{}, err
	}
	l, err := f.listOf(reader, list)
	if err != nil {
		return feed.Marker{}, err
	}
	return l.marker, nil
}

func (f *fakeService) SetListMarker(ctx context.Context, reader, list, lastRead int64) (feed.Marker, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("SetListMarker", reader, list, lastRead); err != nil {
		return feed.Marker{}, err
	}
	l, err := f.listOf(reader, list)
	if err != nil {
		return feed.Marker{}, err
	}
	if lastRead > l.marker.LastReadID {
		l.marker = feed.Marker{LastReadID: lastRead, UpdatedAt: f.now}
	}
	return l.marker, nil
}

// RankedListFeed is the fake's ranked list: the list's feed as it is.
func (f *fakeService) RankedListFeed(ctx context.Context, reader, list, pos int64, n int) (feed.Page, error) {
	if pos != 0 {
		return feed.Page{}, feed.Errorf(feed.ECURSOREXPIRED, "this ranked feed's snapshot expired")
	}
	pg, err := f.ListFeed(ctx, reader, list, 0, n)
	pg.Next = 0
	return pg, err
}

func (f *fakeService) ListFeedSince(ctx context.Context, reader, list, after int64, n int) ([]feed.Post, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListFeedSince", reader, list, after, n); err != nil {
		return nil, false, err
	}
	l, err := f.listOf(reader, list)
	if err != nil {
		return nil, false, err
	}
	posts, more := f.postPage(func(p feed.Post) bool { return p.ID > after && l.members[p.AuthorID] }, 0, n)
	return posts, more, nil
}

// listMembersOf is the hub's stream.Members on the fake's lists.
func (f *fakeService) listMembersOf(ctx context.Context, reader, list int64) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.listOf(reader, list)
	if err != nil {
		return nil, err
	}
	var out []int64
	for m := range l.members {
		out = append(out, m)
	}
	return out, nil
}

func (f *fakeService) ListShows(ctx context.Context, reader, list int64, p feed.Post) (bool, error) {
	return true, nil
}
