package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Lists live on their owner's shard, keyed by the owner first: every call
// is the owner's (another user's list is unknown to them), so each is one
// primary-key range (migration 0018).

const listColumns = "owner_id, id, name, replies, exclusive, member_count, created_at"

func scanList(r scanner) (feed.List, error) {
	var l feed.List
	var created int64
	if err := r.Scan(&l.OwnerID, &l.ID, &l.Name, &l.Replies, &l.Exclusive, &l.MemberCount, &created); err != nil {
		return feed.List{}, err
	}
	l.CreatedAt = fromMillis(created)
	return l, nil
}

func noList(id int64) error {
	return feed.Errorf(feed.ENOTFOUND, "list %d does not exist", id)
}

// CreateList stores l (ID, OwnerID, Name, Replies, Exclusive chosen by the
// caller) with no members. ELIMIT when the owner has feed.MaxLists lists:
// the owner's row is locked while they are counted, so concurrent creates
// cannot pass the bound together.
func (s *Store) CreateList(ctx context.Context, l feed.List) (feed.List, error) {
	l.MemberCount = 0
	if l.CreatedAt.IsZero() {
		l.CreatedAt = time.Now()
	}
	l.CreatedAt = fromMillis(millis(l.CreatedAt))
	err := s.write(ctx, func(tx *sql.Tx) error {
		found, err := s.lockUsers(ctx, tx, l.OwnerID, l.OwnerID)
		if err != nil {
			return err
		}
		if !found[l.OwnerID] {
			return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", l.OwnerID)
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM lists WHERE owner_id = ?", l.OwnerID).Scan(&n); err != nil {
			return err
		}
		if n >= feed.MaxLists {
			return feed.Errorf(feed.ELIMIT, "a user has at most %d lists", feed.MaxLists)
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO lists ("+listColumns+") VALUES (?, ?, ?, ?, ?, 0, ?)",
			l.OwnerID, l.ID, l.Name, l.Replies, l.Exclusive, millis(l.CreatedAt))
		if s.d.duplicate(err) {
			return feed.Errorf(feed.ECONFLICT, "list id %d is taken", l.ID)
		}
		return err
	})
	if err != nil {
		return feed.List{}, fmt.Errorf("sqlstore: create list of %d: %w", l.OwnerID, err)
	}
	return l, nil
}

// Lists returns owner's lists, oldest first.
func (s *Store) Lists(ctx context.Context, owner int64) ([]feed.List, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+listColumns+" FROM lists WHERE owner_id = ? ORDER BY id", owner)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: lists of %d: %w", owner, err)
	}
	defer rows.Close()
	out := []feed.List{}
	for rows.Next() {
		l, err := scanList(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: lists of %d: %w", owner, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: lists of %d: %w", owner, err)
	}
	return out, nil
}

// List returns owner's list id; ENOTFOUND if owner has none of that id.
func (s *Store) List(ctx context.Context, owner, id int64) (feed.List, error) {
	l, err := scanList(s.db.QueryRowContext(ctx, "SELECT "+listColumns+" FROM lists WHERE owner_id = ? AND id = ?", owner, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = noList(id)
	}
	if err != nil {
		return feed.List{}, fmt.Errorf("sqlstore: list %d of %d: %w", id, owner, err)
	}
	return l, nil
}

// UpdateList applies e to owner's list id and returns the list as it now
// is; ENOTFOUND if owner has no such list.
func (s *Store) UpdateList(ctx context.Context, owner, id int64, e feed.ListEdit) (feed.List, error) {
	var set []string
	var args []any
	if e.Name != nil {
		set, args = append(set, "name = ?"), append(args, *e.Name)
	}
	if e.Replies != nil {
		set, args = append(set, "replies = ?"), append(args, *e.Replies)
	}
	if e.Exclusive != nil {
		set, args = append(set, "exclusive = ?"), append(args, *e.Exclusive)
	}
	var l feed.List
	err := s.write(ctx, func(tx *sql.Tx) error {
		if len(set) > 0 {
			if _, err := tx.ExecContext(ctx, "UPDATE lists SET "+strings.Join(set, ", ")+" WHERE owner_id = ? AND id = ?",
				append(args, owner, id)...); err != nil {
				return err
			}
		}
		var err error
		l, err = scanList(tx.QueryRowContext(ctx, "SELECT "+listColumns+" FROM lists WHERE owner_id = ? AND id = ?", owner, id))
		if errors.Is(err, sql.ErrNoRows) {
			return noList(id)
		}
		return err
	})
	if err != nil {
		return feed.List{}, fmt.Errorf("sqlstore: update list %d of %d: %w", id, owner, err)
	}
	return l, nil
}

// DeleteList deletes owner's list id and its members; ENOTFOUND if owner
// has no such list.
func (s *Store) DeleteList(ctx context.Context, owner, id int64) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		gone, err := insertedRow(tx.ExecContext(ctx, "DELETE FROM lists WHERE owner_id = ? AND id = ?", owner, id))
		if err != nil {
			return err
		}
		if !gone {
			return noList(id)
		}
		_, err = tx.ExecContext(ctx, "DELETE FROM list_members WHERE owner_id = ? AND list_id = ?", owner, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: delete list %d of %d: %w", id, owner, err)
	}
	return nil
}

// AddListMember adds member to owner's list id and reports whether it was
// not a member yet; the list's member count follows. ENOTFOUND for no such
// list, ELIMIT when it has feed.MaxListMembers members. The list's row is
// locked while its members are counted. The caller has checked that member
// exists and that no block stands between the two.
func (s *Store) AddListMember(ctx context.Context, owner, id, member int64) (bool, error) {
	var added bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		n, err := s.lockList(ctx, tx, owner, id)
		if err != nil {
			return err
		}
		var already int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM list_members WHERE owner_id = ? AND list_id = ? AND member_id = ?",
			owner, id, member).Scan(&already); err != nil || already > 0 {
			return err
		}
		if n >= feed.MaxListMembers {
			return feed.Errorf(feed.ELIMIT, "a list has at most %d members", feed.MaxListMembers)
		}
		if added, err = insertedRow(tx.ExecContext(ctx, "INSERT INTO list_members (owner_id, list_id, member_id, created_at) VALUES (?, ?, ?, ?)"+s.d.keepExisting,
			owner, id, member, millis(time.Now()))); err != nil || !added {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE lists SET member_count = member_count + 1 WHERE owner_id = ? AND id = ?", owner, id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: add %d to list %d of %d: %w", member, id, owner, err)
	}
	return added, nil
}

// lockList locks owner's list id in tx and returns its member count;
// ENOTFOUND for no such list.
func (s *Store) lockList(ctx context.Context, tx *sql.Tx, owner, id int64) (int64, error) {
	var n int64
	err := tx.QueryRowContext(ctx, "SELECT member_count FROM lists WHERE owner_id = ? AND id = ?"+s.d.forUpdate, owner, id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, noList(id)
	}
	return n, err
}

// RemoveListMember removes member from owner's list id and reports whether
// it was a member; ENOTFOUND for no such list.
func (s *Store) RemoveListMember(ctx context.Context, owner, id, member int64) (bool, error) {
	var removed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := s.lockList(ctx, tx, owner, id); err != nil {
			return err
		}
		var err error
		if removed, err = insertedRow(tx.ExecContext(ctx, "DELETE FROM list_members WHERE owner_id = ? AND list_id = ? AND member_id = ?",
			owner, id, member)); err != nil || !removed {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE lists SET member_count = member_count - 1 WHERE owner_id = ? AND id = ?", owner, id)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: remove %d from list %d of %d: %w", member, id, owner, err)
	}
	return removed, nil
}

// ListMembers returns up to n member ids of owner's list id above after,
// ascending; ENOTFOUND for no such list.
func (s *Store) ListMembers(ctx context.Context, owner, id, after int64, n int) ([]int64, error) {
	if _, err := s.List(ctx, owner, id); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, "SELECT member_id FROM list_members WHERE owner_id = ? AND list_id = ? AND member_id > ? ORDER BY member_id LIMIT ?",
		owner, id, after, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: members of list %d of %d: %w", id, owner, err)
	}
	ids, err := scanIDs(rows, n)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: members of list %d of %d: %w", id, owner, err)
	}
	return ids, nil
}

// RemoveFromLists removes member from every list of owner's (a block
// between the two) and reports how many lists lost them.
func (s *Store) RemoveFromLists(ctx context.Context, owner, member int64) (int, error) {
	var removed int
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT list_id FROM list_members WHERE owner_id = ? AND member_id = ?"+s.d.forUpdate, owner, member)
		if err != nil {
			return err
		}
		lists, err := scanIDs(rows, 0)
		if err != nil || len(lists) == 0 {
			return err
		}
		removed = len(lists)
		args := append([]any{owner, member}, chunkArgs(lists)...)
		if _, err := tx.ExecContext(ctx, "DELETE FROM list_members WHERE owner_id = ? AND member_id = ? AND list_id IN ("+placeholders(len(lists))+")", args...); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "UPDATE lists SET member_count = member_count - 1 WHERE owner_id = ? AND id IN ("+placeholders(len(lists))+")",
			append([]any{owner}, chunkArgs(lists)...)...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: remove %d from the lists of %d: %w", member, owner, err)
	}
	return removed, nil
}

func chunkArgs(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// ListMarker returns owner's marker of list id (LastReadID 0: never set);
// ENOTFOUND for no such list.
func (s *Store) ListMarker(ctx context.Context, owner, id int64) (feed.Marker, error) {
	var last, at int64
	err := s.db.QueryRowContext(ctx, "SELECT last_read_id, marker_at FROM lists WHERE owner_id = ? AND id = ?", owner, id).Scan(&last, &at)
	if errors.Is(err, sql.ErrNoRows) {
		err = noList(id)
	}
	if err != nil {
		return feed.Marker{}, fmt.Errorf("sqlstore: marker of list %d of %d: %w", id, owner, err)
	}
	m := feed.Marker{LastReadID: last}
	if last != 0 {
		m.UpdatedAt = fromMillis(at)
	}
	return m, nil
}

// SetListMarker moves owner's marker of list id forward to lastRead (never
// back: a racing device's older position changes nothing) and returns it.
func (s *Store) SetListMarker(ctx context.Context, owner, id, lastRead int64, at time.Time) (feed.Marker, error) {
	if _, err := s.db.ExecContext(ctx, "UPDATE lists SET last_read_id = ?, marker_at = ? WHERE owner_id = ? AND id = ? AND (last_read_id = 0 OR last_read_id < ?)",
		lastRead, millis(at), owner, id, lastRead); err != nil {
		return feed.Marker{}, fmt.Errorf("sqlstore: set marker of list %d of %d: %w", id, owner, err)
	}
	return s.ListMarker(ctx, owner, id)
}
