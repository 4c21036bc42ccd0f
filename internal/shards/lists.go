package shards

import (
	"context"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// A list and its members live on its owner's shard, and every list call is
// its owner's: each is routed by the owner, and waits out a move of the
// owner's shard as every write does.

func (s *Store) CreateList(ctx context.Context, l feed.List) (out feed.List, err error) {
	err = s.write(ctx, s.m.Of(l.OwnerID), func(st *sqlstore.Store) (err error) {
		out, err = st.CreateList(ctx, l)
		return err
	})
	return out, err
}

func (s *Store) Lists(ctx context.Context, owner int64) ([]feed.List, error) {
	return s.of(owner).Lists(ctx, owner)
}

func (s *Store) List(ctx context.Context, owner, id int64) (feed.List, error) {
	return s.of(owner).List(ctx, owner, id)
}

func (s *Store) UpdateList(ctx context.Context, owner, id int64, e feed.ListEdit) (out feed.List, err error) {
	err = s.write(ctx, s.m.Of(owner), func(st *sqlstore.Store) (err error) {
		out, err = st.UpdateList(ctx, owner, id, e)
		return err
	})
	return out, err
}

func (s *Store) DeleteList(ctx context.Context, owner, id int64) error {
	return s.write(ctx, s.m.Of(owner), func(st *sqlstore.Store) error { return st.DeleteList(ctx, owner, id) })
}

func (s *Store) AddListMember(ctx context.Context, owner, id, member int64) (added bool, err error) {
	err = s.write(ctx, s.m.Of(owner), func(st *sqlstore.Store) (err error) {
		added, err = st.AddListMember(ctx, owner, id, member)
		return err
	})
	return added, err
}

func (s *Store) RemoveListMember(ctx context.Context, owner, id, member int64) (removed bool, err error) {
	err = s.write(ctx, s.m.Of(owner), func(st *sqlstore.Store) (err error) {
		removed, err = st.RemoveListMember(ctx, owner, id, member)
		return err
	})
	return removed, err
}

func (s *Store) ListMembers(ctx context.Context, owner, id, after int64, n int) ([]int64, error) {
	return s.of(owner).ListMembers(ctx, owner, id, after, n)
}

func (s *Store) RemoveFromLists(ctx context.Context, owner, member int64) (n int, err error) {
	err = s.write(ctx, s.m.Of(owner), func(st *sqlstore.Store) (err error) {
		n, err = st.RemoveFromLists(ctx, owner, member)
		return err
	})
	return n, err
}

func (s *Store) ListMarker(ctx context.Context, owner, id int64) (feed.Marker, error) {
	return s.of(owner).ListMarker(ctx, owner, id)
}

func (s *Store) SetListMarker(ctx context.Context, owner, id, lastRead int64, at time.Time) (out feed.Marker, err error) {
	err = s.write(ctx, s.m.Of(owner), func(st *sqlstore.Store) (err error) {
		out, err = st.SetListMarker(ctx, owner, id, lastRead, at)
		return err
	})
	return out, err
}
