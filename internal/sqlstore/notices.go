package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Grouped notifications (docs/notifications.md). A recipient's rows live
// on the recipient's shard, and are written in the transaction of the
// change they tell of wherever that change has a half on that shard: a
// like's batch on the post's shard (the post's author is the recipient),
// a follow on one database or the follow's mirror sync on the followee's
// shard. A crash then loses no notification and makes none twice: the
// outbox, the broker or the journal redoes the half, and the half changes
// the notification rows exactly when it changes its own.
//
// notice_groups holds a group's exact actor count; notice_actors one row
// per (recipient, kind, post, actor), so an actor is in at most one group
// of a key and an undo finds it by key.

// SetNoticeWindow sets how far apart a group's first and newest
// notifications may be (feed.DefaultNoticeWindow unless set); it is read
// by every write of a notification.
func (s *Store) SetNoticeWindow(d time.Duration) { s.noticeWindow.Store(int64(d)) }

func (s *Store) window() time.Duration {
	if d := time.Duration(s.noticeWindow.Load()); d > 0 {
		return d
	}
	return feed.DefaultNoticeWindow
}

// AddNotice tells n.Recipient of n in a transaction of its own, on the
// recipient's database: the entry point of a source whose write has no
// half there (a reply's or a repost's, whose truth lives on the actor's
// shard). It is idempotent: an actor already notified for n's key is not
// counted again. Nobody is told of their own action.
func (s *Store) AddNotice(ctx context.Context, n feed.Notice) error {
	if err := s.write(ctx, func(tx *sql.Tx) error { return s.addNotices(ctx, tx, []feed.Notice{n}) }); err != nil {
		return fmt.Errorf("sqlstore: notify %d of %s by %d: %w", n.Recipient, n.Kind, n.Actor, err)
	}
	return nil
}

// RemoveNotice takes n's actor out of its group (n.At is not read): an
// undo. The group leaves with its last actor. Idempotent.
func (s *Store) RemoveNotice(ctx context.Context, n feed.Notice) error {
	if err := s.write(ctx, func(tx *sql.Tx) error { return s.removeNotices(ctx, tx, []feed.Notice{n}) }); err != nil {
		return fmt.Errorf("sqlstore: unnotify %d of %s by %d: %w", n.Recipient, n.Kind, n.Actor, err)
	}
	return nil
}

// noticeKey is what groups notifications: a recipient, a kind, a post.
type noticeKey struct {
	recipient int64
	kind      feed.NoticeKind
	post      int64
}

// addNotices writes ns in tx: per key, a read of which actors are there
// already, one of the newest group, one multi-row insert of actor rows,
// and a write per group touched, whatever the number of actors.
func (s *Store) addNotices(ctx context.Context, tx *sql.Tx, ns []feed.Notice) error {
	byKey := map[noticeKey][]feed.Notice{}
	for _, n := range ns {
		if n.Recipient == n.Actor || n.Recipient == 0 || n.Actor == 0 || !n.Kind.Valid() {
			continue
		}
		k := noticeKey{n.Recipient, n.Kind, n.Post}
		byKey[k] = append(byKey[k], n)
	}
	keys := make([]noticeKey, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	// One lock order for every writer.
	slices.SortFunc(keys, func(a, b noticeKey) int {
		return cmp.Or(cmp.Compare(a.recipient, b.recipient), cmp.Compare(a.kind, b.kind), cmp.Compare(a.post, b.post))
	})
	for _, k := range keys {
		if err := s.addToKey(ctx, tx, k, byKey[k]); err != nil {
			return fmt.Errorf("notify %d of %d %s: %w", k.recipient, len(byKey[k]), k.kind, err)
		}
	}
	return nil
}

// gidProbe is how far above a notification's id freeGID looks for a free
// group id.
const gidProbe = 64

// freeGID returns a group id for a new group of recipient's that starts
// with notification id: id itself unless another group of recipient's
// has it, in SQL or among fresh (this write's groups, not inserted yet),
// else the next free one above it. Notification ids are a millisecond and
// a 12-bit hash: a burst of likes of two posts in one millisecond would
// otherwise give the two groups one id, and a batch that makes both would
// fail on the key.
func (s *Store) freeGID(ctx context.Context, tx *sql.Tx, recipient, id int64, fresh []*noticeGroupRow) (int64, error) {
	taken := map[int64]bool{}
	for _, g := range fresh {
		taken[g.gid] = true
	}
	rows, err := tx.QueryContext(ctx, "SELECT gid FROM notice_groups WHERE recipient_id = ? AND gid >= ? AND gid < ?", recipient, id, id+gidProbe)
	if err != nil {
		return 0, err
	}
	used, err := scanIDs(rows, 0)
	if err != nil {
		return 0, err
	}
	for _, g := range used {
		taken[g] = true
	}
	for gid := id; gid < id+gidProbe; gid++ {
		if !taken[gid] {
			return gid, nil
		}
	}
	return 0, fmt.Errorf("no free group id in [%d, %d) for user %d", id, id+gidProbe, recipient)
}

// noticeGroupRow is a group as a write sees it.
type noticeGroupRow struct {
	gid, id, first int64
	added          int64
	fresh          bool
}

func (s *Store) addToKey(ctx context.Context, tx *sql.Tx, k noticeKey, ns []feed.Notice) error {
	actors := make([]int64, 0, len(ns))
	for _, n := range ns {
		actors = append(actors, n.Actor)
	}
	there := map[int64]bool{}
	for _, chunk := range idChunks(actors) {
		rows, err := tx.QueryContext(ctx, "SELECT actor_id FROM notice_actors WHERE recipient_id = ? AND kind = ? AND post_id = ? AND actor_id IN ("+
			placeholders(len(chunk))+")"+s.d.forUpdate, append([]any{k.recipient, string(k.kind), k.post}, chunk...)...)
		if err != nil {
			return err
		}
		ids, err := scanIDs(rows, len(chunk))
		if err != nil {
			return err
		}
		for _, id := range ids {
			there[id] = true
		}
	}
	slices.SortFunc(ns, func(a, b feed.Notice) int { return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Actor, b.Actor)) })
	var open *noticeGroupRow
	if k.kind.Grouped() {
		var g noticeGroupRow
		err := tx.QueryRowContext(ctx, "SELECT gid, id, first_at FROM notice_groups WHERE recipient_id = ? AND kind = ? AND post_id = ? ORDER BY gid DESC LIMIT 1"+s.d.forUpdate,
			k.recipient, string(k.kind), k.post).Scan(&g.gid, &g.id, &g.first)
		switch {
		case err == nil:
			open = &g
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	window := s.window().Milliseconds()
	var groups []*noticeGroupRow
	var rows []any
	for _, n := range ns {
		if there[n.Actor] {
			continue // notified already: a write done again
		}
		there[n.Actor] = true
		id, at := n.ID(), millis(n.At)
		if open == nil || !k.kind.Grouped() || at-open.first >= window {
			gid, err := s.freeGID(ctx, tx, k.recipient, id, groups)
			if err != nil {
				return err
			}
			open = &noticeGroupRow{gid: gid, id: max(id, gid), first: at, fresh: true}
			groups = append(groups, open)
		} else if len(groups) == 0 || groups[len(groups)-1] != open {
			groups = append(groups, open)
		}
		open.added++
		open.id = max(open.id, id)
		rows = append(rows, k.recipient, string(k.kind), k.post, n.Actor, open.gid, id)
	}
	for chunk := range slices.Chunk(rows, 6*chunkSize) {
		if _, err := tx.ExecContext(ctx, "INSERT INTO notice_actors (recipient_id, kind, post_id, actor_id, gid, id) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?), ", len(chunk)/6), ", "), chunk...); err != nil {
			return err
		}
	}
	for _, g := range groups {
		latest := millis(feed.IDTime(g.id))
		var err error
		if g.fresh {
			_, err = tx.ExecContext(ctx, "INSERT INTO notice_groups (recipient_id, gid, id, kind, post_id, first_at, latest_at, actor_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
				k.recipient, g.gid, g.id, string(k.kind), k.post, g.first, latest, g.added)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE notice_groups SET actor_count = actor_count + ?,
				latest_at = CASE WHEN id < ? THEN ? ELSE latest_at END, id = CASE WHEN id < ? THEN ? ELSE id END
				WHERE recipient_id = ? AND gid = ?`, g.added, g.id, latest, g.id, g.id, k.recipient, g.gid)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removeNotices takes each of ns's actors out of its group, in tx. A
// group whose newest actor leaves takes its next newest's id: one indexed
// read. Its last actor takes the group with it.
func (s *Store) removeNotices(ctx context.Context, tx *sql.Tx, ns []feed.Notice) error {
	for _, n := range ns {
		var gid, id int64
		err := tx.QueryRowContext(ctx, "SELECT gid, id FROM notice_actors WHERE recipient_id = ? AND kind = ? AND post_id = ? AND actor_id = ?"+s.d.forUpdate,
			n.Recipient, string(n.Kind), n.Post, n.Actor).Scan(&gid, &id)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("unnotify %d of %s by %d: %w", n.Recipient, n.Kind, n.Actor, err)
		}
		if err := s.dropNoticeActor(ctx, tx, n.Recipient, n.Kind, n.Post, n.Actor, gid, id); err != nil {
			return fmt.Errorf("unnotify %d of %s by %d: %w", n.Recipient, n.Kind, n.Actor, err)
		}
	}
	return nil
}

// dropNoticeActor deletes one actor row, found locked, and moves its group.
func (s *Store) dropNoticeActor(ctx context.Context, tx *sql.Tx, recipient int64, kind feed.NoticeKind, post, actor, gid, id int64) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM notice_actors WHERE recipient_id = ? AND kind = ? AND post_id = ? AND actor_id = ?",
		recipient, string(kind), post, actor); err != nil {
		return err
	}
	var count, newest int64
	err := tx.QueryRowContext(ctx, "SELECT actor_count, id FROM notice_groups WHERE recipient_id = ? AND gid = ?"+s.d.forUpdate,
		recipient, gid).Scan(&count, &newest)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if count <= 1 {
		_, err = tx.ExecContext(ctx, "DELETE FROM notice_groups WHERE recipient_id = ? AND gid = ?", recipient, gid)
		return err
	}
	if id == newest {
		err := tx.QueryRowContext(ctx, "SELECT id FROM notice_actors WHERE recipient_id = ? AND gid = ? ORDER BY id DESC LIMIT 1",
			recipient, gid).Scan(&newest)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	_, err = tx.ExecContext(ctx, "UPDATE notice_groups SET actor_count = actor_count - 1, id = ?, latest_at = ? WHERE recipient_id = ? AND gid = ?",
		newest, millis(feed.IDTime(newest)), recipient, gid)
	return err
}

// noticeGroupsPerRead is how many groups a page's read asks for beyond
// the page, for those its hidden actors empty.
const noticeGroupsPerRead = 10

// NoticePage returns up to q.N of recipient's notification groups below
// q.Before, newest first, with each group's newest actors and its count,
// both without q.Hide's actors (a group left with none is skipped), and
// whether more follow. Its cost is the page's: a read of the groups by
// (recipient, id), one of the hidden actors' rows among them, and one of
// each group's newest actors, whatever the groups' counts.
func (s *Store) NoticePage(ctx context.Context, recipient int64, q feed.NoticeQuery) ([]feed.NoticeGroup, bool, error) {
	out, more, err := s.noticeGroups(ctx, recipient, 0, q, true)
	if err != nil {
		return nil, false, fmt.Errorf("sqlstore: notifications of %d: %w", recipient, err)
	}
	return out, more, nil
}

// UnreadNotices counts recipient's groups above after, of every kind and
// without those only hidden actors make, up to limit; capped when more
// exist.
func (s *Store) UnreadNotices(ctx context.Context, recipient, after int64, hide []int64, limit int) (int, bool, error) {
	out, more, err := s.noticeGroups(ctx, recipient, after, feed.NoticeQuery{Hide: hide, N: limit}, false)
	if err != nil {
		return 0, false, fmt.Errorf("sqlstore: unread notifications of %d: %w", recipient, err)
	}
	return len(out), more, nil
}

func (s *Store) noticeGroups(ctx context.Context, recipient, after int64, q feed.NoticeQuery, withActors bool) ([]feed.NoticeGroup, bool, error) {
	before := q.Before
	if before == 0 {
		before = feed.MaxID + 1
	}
	var out []feed.NoticeGroup
	for len(out) <= q.N {
		ask := q.N + 1 - len(out) + noticeGroupsPerRead
		where, args := "recipient_id = ? AND id < ? AND id > ?", []any{recipient, before, after}
		if len(q.Kinds) > 0 {
			where += " AND kind IN (" + placeholders(len(q.Kinds)) + ")"
			for _, k := range q.Kinds {
				args = append(args, string(k))
			}
		}
		rows, err := s.rdb.QueryContext(ctx, "SELECT gid, id, kind, post_id, actor_count FROM notice_groups WHERE "+where+
			" ORDER BY id DESC LIMIT ?", append(args, ask)...)
		if err != nil {
			return nil, false, err
		}
		var got []feed.NoticeGroup
		for rows.Next() {
			var g feed.NoticeGroup
			var gid int64
			var kind string
			if err := rows.Scan(&gid, &g.ID, &kind, &g.Post, &g.ActorCount); err != nil {
				rows.Close()
				return nil, false, err
			}
			g.Kind, g.LatestAt = feed.NoticeKind(kind), feed.IDTime(g.ID)
			// Actors carries the gid until the actors are read.
			g.Actors = []int64{gid}
			got = append(got, g)
		}
		if err := closeRows(rows); err != nil {
			return nil, false, err
		}
		hidden, err := s.hiddenActors(ctx, recipient, got, q.Hide)
		if err != nil {
			return nil, false, err
		}
		var kept []feed.NoticeGroup
		for _, g := range got {
			g.ActorCount -= hidden[g.Actors[0]]
			if g.ActorCount > 0 {
				kept = append(kept, g)
			}
		}
		if withActors {
			if err := s.newestActors(ctx, recipient, kept, hidden, q.Hide); err != nil {
				return nil, false, err
			}
		}
		out = append(out, kept...)
		if len(got) < ask {
			break
		}
		before = got[len(got)-1].ID
	}
	if len(out) > q.N {
		return out[:q.N], true, nil
	}
	return out, false, nil
}

// hiddenActors counts, per group of groups (whose Actors hold their
// gids), the rows of hide's actors: one statement of primary-key lookups,
// (recipient, kind, post, actor) for each group and hidden actor, so that
// no planner walks a big group's rows to find them. A hidden actor's row
// of the key in another group (an older one) is not counted here.
func (s *Store) hiddenActors(ctx context.Context, recipient int64, groups []feed.NoticeGroup, hide []int64) (map[int64]int64, error) {
	out := map[int64]int64{}
	if len(groups) == 0 || len(hide) == 0 {
		return out, nil
	}
	want := map[int64]bool{}
	keys := map[noticeKey]bool{}
	for _, g := range groups {
		want[g.Actors[0]] = true
		keys[noticeKey{recipient, g.Kind, g.Post}] = true
	}
	for _, chunk := range idChunks(hide) {
		var parts []string
		var args []any
		for k := range keys {
			parts = append(parts, "SELECT gid FROM notice_actors WHERE recipient_id = ? AND kind = ? AND post_id = ? AND actor_id IN ("+placeholders(len(chunk))+")")
			args = append(append(args, recipient, string(k.kind), k.post), chunk...)
		}
		rows, err := s.rdb.QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
		if err != nil {
			return nil, err
		}
		gids, err := scanIDs(rows, 0)
		if err != nil {
			return nil, err
		}
		for _, gid := range gids {
			if want[gid] {
				out[gid]++
			}
		}
	}
	return out, nil
}

// newestActors replaces each group's Actors (its gid) with its newest
// shown actors, in one statement: a UNION of one indexed read per group,
// each as long as the shown actors and the group's hidden ones.
func (s *Store) newestActors(ctx context.Context, recipient int64, groups []feed.NoticeGroup, hidden map[int64]int64, hide []int64) error {
	if len(groups) == 0 {
		return nil
	}
	var parts []string
	var args []any
	for i, g := range groups {
		gid := g.Actors[0]
		parts = append(parts, fmt.Sprintf("SELECT gid, actor_id, id FROM (SELECT gid, actor_id, id FROM notice_actors WHERE recipient_id = ? AND gid = ? ORDER BY id DESC LIMIT ?) g%d", i))
		args = append(args, recipient, gid, int64(feed.NoticeShownActors)+hidden[gid])
	}
	rows, err := s.rdb.QueryContext(ctx, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return err
	}
	type actorRow struct{ actor, id int64 }
	byGroup := map[int64][]actorRow{}
	for rows.Next() {
		var gid int64
		var a actorRow
		if err := rows.Scan(&gid, &a.actor, &a.id); err != nil {
			rows.Close()
			return err
		}
		if !slices.Contains(hide, a.actor) {
			byGroup[gid] = append(byGroup[gid], a)
		}
	}
	if err := closeRows(rows); err != nil {
		return err
	}
	for i := range groups {
		as := byGroup[groups[i].Actors[0]]
		// The union's order does not survive it.
		slices.SortFunc(as, func(a, b actorRow) int { return cmp.Compare(b.id, a.id) })
		groups[i].Actors = make([]int64, 0, feed.NoticeShownActors)
		for _, a := range as[:min(len(as), feed.NoticeShownActors)] {
			groups[i].Actors = append(groups[i].Actors, a.actor)
		}
	}
	return nil
}

// NoticeMarker returns user's notifications read marker (the zero Marker
// if never set), from the primary as Marker does.
func (s *Store) NoticeMarker(ctx context.Context, user int64) (feed.Marker, error) {
	var last, at int64
	err := s.db.QueryRowContext(ctx, "SELECT last_read_id, updated_at FROM notice_markers WHERE user_id = ?", user).Scan(&last, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return feed.Marker{}, nil
	}
	if err != nil {
		return feed.Marker{}, fmt.Errorf("sqlstore: notifications marker of %d: %w", user, err)
	}
	return feed.Marker{LastReadID: last, UpdatedAt: fromMillis(at)}, nil
}

// SetNoticeMarker moves user's notifications marker forward to lastRead
// at time at, never back, and returns it as it then is.
func (s *Store) SetNoticeMarker(ctx context.Context, user, lastRead int64, at time.Time) (feed.Marker, error) {
	// The home marker's upsert (markers.go), which never moves back, on
	// this table.
	upsert := strings.ReplaceAll(s.d.upsertMarker, " markers.", " notice_markers.")
	_, err := s.db.ExecContext(ctx, "INSERT INTO notice_markers (user_id, last_read_id, updated_at) VALUES (?, ?, ?)"+upsert,
		user, lastRead, millis(at))
	if err != nil {
		return feed.Marker{}, fmt.Errorf("sqlstore: set notifications marker of %d: %w", user, err)
	}
	return s.NoticeMarker(ctx, user)
}

// purgeNotices takes a batch of user's notifications out: the groups
// user was told of (on user's shard), then the rows of what user did,
// each moving its group as an undo does.
func (s *Store) purgeNotices(ctx context.Context, tx *sql.Tx, user int64, _ *feed.PurgeBatch) (bool, error) {
	rows, err := tx.QueryContext(ctx, "SELECT gid FROM notice_groups WHERE recipient_id = ? LIMIT ?"+s.d.forUpdate, user, chunkSize)
	if err != nil {
		return false, err
	}
	gids, err := scanIDs(rows, chunkSize)
	if err != nil {
		return false, err
	}
	if len(gids) > 0 {
		args := append([]any{user}, idChunks(gids)[0]...)
		in := " AND gid IN (" + placeholders(len(gids)) + ")"
		if _, err := tx.ExecContext(ctx, "DELETE FROM notice_actors WHERE recipient_id = ?"+in, args...); err != nil {
			return false, err
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM notice_groups WHERE recipient_id = ?"+in, args...)
		return true, err
	}
	rows, err = tx.QueryContext(ctx, "SELECT recipient_id, kind, post_id, gid, id FROM notice_actors WHERE actor_id = ? LIMIT ?"+s.d.forUpdate, user, PurgeBatchRows)
	if err != nil {
		return false, err
	}
	type mine struct {
		recipient, post, gid, id int64
		kind                     string
	}
	var found []mine
	for rows.Next() {
		var m mine
		if err := rows.Scan(&m.recipient, &m.kind, &m.post, &m.gid, &m.id); err != nil {
			rows.Close()
			return false, err
		}
		found = append(found, m)
	}
	if err := closeRows(rows); err != nil || len(found) == 0 {
		return false, err
	}
	for _, m := range found {
		if err := s.dropNoticeActor(ctx, tx, m.recipient, feed.NoticeKind(m.kind), m.post, user, m.gid, m.id); err != nil {
			return false, err
		}
	}
	return true, nil
}

// noticeLikes tells the posts' authors of the likes and unlikes of a
// batch that flipped a row, in the batch's transaction on the posts'
// shard, where their authors live: a batch written again flips nothing,
// so it notifies nothing twice. A like's time is its version (Unix
// microseconds of the cache's clock).
func (s *Store) noticeLikes(ctx context.Context, tx *sql.Tx, flips []feed.LikeEvent) error {
	if len(flips) == 0 {
		return nil
	}
	posts := make([]int64, 0, len(flips))
	for _, ev := range flips {
		posts = append(posts, ev.Post)
	}
	slices.Sort(posts)
	authors := map[int64]int64{}
	for _, chunk := range idChunks(slices.Compact(posts)) {
		rows, err := tx.QueryContext(ctx, "SELECT id, author_id FROM posts WHERE id IN ("+placeholders(len(chunk))+")", chunk...)
		if err != nil {
			return fmt.Errorf("authors of %d liked posts: %w", len(chunk), err)
		}
		for rows.Next() {
			var id, author int64
			if err := rows.Scan(&id, &author); err != nil {
				rows.Close()
				return err
			}
			authors[id] = author
		}
		if err := closeRows(rows); err != nil {
			return err
		}
	}
	var told, untold []feed.Notice
	for _, ev := range flips {
		author, ok := authors[ev.Post]
		if !ok {
			continue
		}
		n := feed.Notice{Recipient: author, Actor: ev.User, Kind: feed.NoticeLike, Post: ev.Post, At: time.UnixMicro(ev.Version)}
		if ev.Liked {
			told = append(told, n)
		} else {
			untold = append(untold, n)
		}
	}
	if err := s.removeNotices(ctx, tx, untold); err != nil {
		return err
	}
	return s.addNotices(ctx, tx, told)
}
