package shards

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// Handles across shards. A user's handle is in their row, on their shard,
// where their profile, lists and search read it; but two users of two
// shards could write one handle there at once. So a handle is first
// claimed in the handles table of its own shard (a hash of the handle):
// one row per handle, whose primary key lets one user have it. Then the
// user's row takes it, and a rename then frees the old handle's claim.
// The claim is the truth of who may hold a handle; the row says who does.
//
// A claim without its row (the row's write failed, or its process died in
// between; or a rename's old claim whose release failed) is stale: the
// next user who wants the handle takes it over, once the claim is older
// than claimGrace and its user's row does not hold the handle. A claim
// younger than that may be a write in flight, and is taken.

// claimGrace is how old a claim whose user does not hold its handle must
// be before another user may take it over: far longer than a user's
// write, which runs with the request's deadline.
const claimGrace = time.Minute

// handleKey places handle h: its shard is handleKey(h) & (N-1), as a
// user's is its id's.
func handleKey(h string) int64 {
	f := fnv.New32a()
	f.Write([]byte(h))
	return int64(f.Sum32())
}

func (s *Store) handleShard(h string) int { return s.m.Of(handleKey(h)) }

// claim claims h for user on h's shard: EHANDLETAKEN when another user
// holds it, or claimed it less than claimGrace ago.
func (s *Store) claim(ctx context.Context, h string, user int64) error {
	k := s.handleShard(h)
	var c sqlstore.HandleClaim
	err := s.write(ctx, k, func(st *sqlstore.Store) (err error) {
		c, err = st.ClaimHandle(ctx, h, user)
		return err
	})
	if err != nil || c.User == user {
		return err
	}
	held, err := s.of(c.User).HandleHeld(ctx, c.User, h)
	if err != nil {
		return err
	}
	if held || time.Since(c.At) < claimGrace {
		return feed.HandleTaken(h)
	}
	var took bool
	err = s.write(ctx, k, func(st *sqlstore.Store) (err error) {
		took, err = st.TakeOverHandle(ctx, h, c, user)
		return err
	})
	if err == nil && !took {
		err = feed.HandleTaken(h) // another user took it over first
	}
	return err
}

// release frees user's claim of h, unless user's row holds h: a create
// that failed because the user exists already, with this handle, keeps it.
func (s *Store) release(ctx context.Context, h string, user int64) error {
	held, err := s.of(user).HandleHeld(ctx, user, h)
	if err != nil || held {
		return err
	}
	return s.write(ctx, s.handleShard(h), func(st *sqlstore.Store) error { return st.ReleaseHandle(ctx, h, user) })
}

// CreateUser stores u on its shard, its handle claimed first.
func (s *Store) CreateUser(ctx context.Context, u feed.User) (out feed.User, err error) {
	if u.Handle != "" {
		if err := s.claim(ctx, u.Handle, u.ID); err != nil {
			return feed.User{}, err
		}
	}
	err = s.write(ctx, s.m.Of(u.ID), func(st *sqlstore.Store) (err error) {
		out, err = st.CreateUser(ctx, u)
		return err
	})
	if err != nil && u.Handle != "" {
		// Best effort: a claim left behind is stale, taken over later.
		_ = s.release(context.WithoutCancel(ctx), u.Handle, u.ID)
	}
	return out, err
}

// UpdateUser changes user's name or handle on their shard; a new handle
// is claimed first, and the old one's claim released after.
func (s *Store) UpdateUser(ctx context.Context, user int64, e feed.UserEdit) (out feed.User, err error) {
	var old string
	if e.Handle != nil {
		if old, err = s.of(user).HandleOf(ctx, user); err != nil {
			return feed.User{}, err
		}
	}
	renamed := e.Handle != nil && *e.Handle != old
	if renamed && *e.Handle != "" {
		if err := s.claim(ctx, *e.Handle, user); err != nil {
			return feed.User{}, err
		}
	}
	err = s.write(ctx, s.m.Of(user), func(st *sqlstore.Store) (err error) {
		out, err = st.UpdateUser(ctx, user, e)
		return err
	})
	switch {
	case err != nil && renamed && *e.Handle != "":
		_ = s.release(context.WithoutCancel(ctx), *e.Handle, user)
	case err == nil && renamed && old != "":
		// The rename stands even if this fails: the old claim is then
		// stale, and the next user who wants the handle takes it over.
		_ = s.release(context.WithoutCancel(ctx), old, user)
	}
	return out, err
}

// UserByHandle finds h's claim on h's shard, then its user, who must hold
// it: a claim whose user's write is in flight, or failed, is no user.
func (s *Store) UserByHandle(ctx context.Context, h string) (feed.User, error) {
	notFound := feed.Errorf(feed.ENOTFOUND, "no user has the handle %q", h)
	c, ok, err := s.Shard(s.handleShard(h)).HandleClaimOf(ctx, h)
	if err != nil {
		return feed.User{}, err
	}
	if !ok {
		return feed.User{}, notFound
	}
	u, err := s.of(c.User).User(ctx, c.User)
	if feed.ErrorCode(err) == feed.ENOTFOUND || err == nil && u.Handle != h {
		return feed.User{}, notFound
	}
	return u, err
}

// SearchHandles asks every shard and merges their answers in handle order.
func (s *Store) SearchHandles(ctx context.Context, prefix, after string, n int) ([]feed.User, error) {
	return s.search(ctx, n, func(ctx context.Context, st *sqlstore.Store) ([]feed.User, error) {
		return st.SearchHandles(ctx, prefix, after, n)
	}, func(a, b feed.User) int { return cmp.Compare(a.Handle, b.Handle) })
}

// SearchNames asks every shard and merges their answers in (name key, id)
// order.
func (s *Store) SearchNames(ctx context.Context, prefix, afterKey string, afterID int64, n int) ([]feed.User, error) {
	return s.search(ctx, n, func(ctx context.Context, st *sqlstore.Store) ([]feed.User, error) {
		return st.SearchNames(ctx, prefix, afterKey, afterID, n)
	}, func(a, b feed.User) int {
		return cmp.Or(cmp.Compare(feed.NameKey(a.Name), feed.NameKey(b.Name)), cmp.Compare(a.ID, b.ID))
	})
}

// search runs one search on every shard at once, and keeps the first n
// of their answers in order.
func (s *Store) search(ctx context.Context, n int, one func(context.Context, *sqlstore.Store) ([]feed.User, error), order func(a, b feed.User) int) ([]feed.User, error) {
	var mu sync.Mutex
	var all []feed.User
	err := s.each(ctx, func(ctx context.Context, _ int, st *sqlstore.Store) error {
		users, err := one(ctx, st)
		mu.Lock()
		defer mu.Unlock()
		all = append(all, users...)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, order)
	return all[:min(n, len(all))], nil
}

// Relationship reads user's shard, where the follows and blocks of
// others towards user are mirrored.
func (s *Store) Relationship(ctx context.Context, user, other int64) (feed.Relationship, error) {
	return s.of(user).Relationship(ctx, user, other)
}

// ImportUsers claims the handles the users bring, one at a time, then
// stores each user on its shard (outcomes[i] is users[i]'s); a user whose
// handle is taken is HandleInUse, and a claim whose user was not stored
// (and does not hold it from before) is released.
func (s *Store) ImportUsers(ctx context.Context, users []feed.User) ([]feed.ImportOutcome, error) {
	out := make([]feed.ImportOutcome, len(users))
	var claimed []feed.User
	var at []int
	for i, u := range users {
		if u.Handle != "" {
			err := s.claim(ctx, u.Handle, u.ID)
			if feed.ErrorCode(err) == feed.EHANDLETAKEN {
				out[i] = feed.HandleInUse
				continue
			}
			if err != nil {
				return nil, err
			}
		}
		claimed, at = append(claimed, u), append(at, i)
	}
	res, err := scatter(ctx, s, claimed, func(u feed.User) int64 { return u.ID }, (*sqlstore.Store).ImportUsers)
	if err != nil {
		return nil, err
	}
	for j, o := range res {
		out[at[j]] = o
		if u := claimed[j]; u.Handle != "" && o != feed.Imported {
			if err := s.release(ctx, u.Handle, u.ID); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// BulkLoadUsers stores users on their shards, and their handles' claims
// on the handles' shards.
func (s *Store) BulkLoadUsers(ctx context.Context, users []feed.User) error {
	if err := bulk(ctx, s, users, func(u feed.User) int64 { return u.ID }, (*sqlstore.Store).BulkLoadUsers); err != nil {
		return err
	}
	return s.bulkLoadHandles(ctx, users)
}

func (s *Store) bulkLoadHandles(ctx context.Context, users []feed.User) error {
	return bulk(ctx, s, users, func(u feed.User) int64 { return handleKey(u.Handle) }, (*sqlstore.Store).BulkLoadHandles)
}

// releaseDeleted frees the claim of a purged user's handle h, once the
// purge removed their row.
func (s *Store) releaseDeleted(ctx context.Context, h string, user int64) error {
	return s.write(ctx, s.handleShard(h), func(st *sqlstore.Store) error { return st.ReleaseHandle(ctx, h, user) })
}
