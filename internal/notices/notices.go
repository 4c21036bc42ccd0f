// Package notices is the notifications room: a recipient's grouped
// notifications (follows, likes, reposts, replies), their page, and their
// read marker (docs/notifications.md). The groups are written in SQL by
// the writes they tell of (sqlstore/notices.go); this package reads them
// as a recipient may see them, and is the entry point of the sources that
// have no half of their own on the recipient's shard (Add, Remove).
package notices

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Store is what the notifications need of SQL (sqlstore.Store, or
// shards.Store, which routes to the recipient's shard).
type Store interface {
	NoticePage(ctx context.Context, recipient int64, q feed.NoticeQuery) ([]feed.NoticeGroup, bool, error)
	UnreadNotices(ctx context.Context, recipient, after int64, hide []int64, limit int) (int, bool, error)
	NoticeMarker(ctx context.Context, user int64) (feed.Marker, error)
	SetNoticeMarker(ctx context.Context, user, lastRead int64, at time.Time) (feed.Marker, error)
	AddNotice(ctx context.Context, n feed.Notice) error
	RemoveNotice(ctx context.Context, n feed.Notice) error
	Users(ctx context.Context, ids []int64) (map[int64]feed.User, error)
}

// Reads is what they need of the read engine (timeline.Service): whom a
// reader does not hear from, and posts as pages show them.
type Reads interface {
	Hidden(ctx context.Context, viewer int64) (feed.Hidden, error)
	DeletedUserIDs(ctx context.Context) []int64
	LivePosts(ctx context.Context, ids []int64) ([]feed.Post, error)
}

// Likes gives the posts their likes as the reader sees them (pages.Likes).
type Likes interface {
	LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (map[int64]feed.LikeState, bool, error)
}

// Service reads and writes notifications.
type Service struct {
	store     Store
	reads     Reads
	likes     Likes
	unreadCap int
	now       func() time.Time
}

// New returns a Service; unreadCap bounds the marker's unread count as
// the home marker's is bounded (timeline.DefaultUnreadCap when 0).
func New(store Store, reads Reads, likes Likes, unreadCap int) *Service {
	if unreadCap <= 0 {
		unreadCap = 1000
	}
	return &Service{store: store, reads: reads, likes: likes, unreadCap: unreadCap, now: time.Now}
}

// Add tells recipient that actor did kind (to post; 0 for a follow) at
// at, on the recipient's shard, in a transaction of its own. It is the
// entry point of a source whose write has no half on the recipient's
// shard: a reply (kind feed.NoticeReply, post the reply's id: never
// grouped) or a repost (feed.NoticeRepost, post the original's id). Call
// it where the source's change is redone until it is done (the post's
// outbox event, the repost's journal), with the change's own time: it is
// idempotent (an actor is counted once per recipient, kind and post), so
// a redo notifies nothing twice. Nobody is told of their own action.
func (s *Service) Add(ctx context.Context, recipient int64, kind feed.NoticeKind, post, actor int64, at time.Time) error {
	if !kind.Valid() {
		return feed.Errorf(feed.EINVALID, "notices: %q is not a notification kind", kind)
	}
	return s.store.AddNotice(ctx, feed.Notice{Recipient: recipient, Actor: actor, Kind: kind, Post: post, At: at})
}

// Remove undoes Add (an unrepost, a reply deleted): actor leaves the
// group, which leaves with its last actor. Idempotent.
func (s *Service) Remove(ctx context.Context, recipient int64, kind feed.NoticeKind, post, actor int64) error {
	if !kind.Valid() {
		return feed.Errorf(feed.EINVALID, "notices: %q is not a notification kind", kind)
	}
	return s.store.RemoveNotice(ctx, feed.Notice{Recipient: recipient, Actor: actor, Kind: kind, Post: post})
}

// Notifications returns up to n of reader's groups below before (0: from
// the newest), of kinds (nil: all), newest first. Muted and blocked users
// either way, and deleted accounts, are left out of the actors and of the
// counts; a group left with none is no group; a group whose post is gone
// is not shown.
func (s *Service) Notifications(ctx context.Context, reader, before int64, kinds []feed.NoticeKind, n int) (feed.NoticePage, error) {
	hide, err := s.hide(ctx, reader)
	if err != nil {
		return feed.NoticePage{}, err
	}
	groups, more, err := s.store.NoticePage(ctx, reader, feed.NoticeQuery{Before: before, Kinds: kinds, Hide: hide, N: n})
	if err != nil {
		return feed.NoticePage{}, err
	}
	pg := feed.NoticePage{Users: map[int64]feed.User{}, Posts: map[int64]feed.Post{}}
	if more && len(groups) > 0 {
		pg.Next = groups[len(groups)-1].ID
	}
	var actors, posts []int64
	for _, g := range groups {
		actors = append(actors, g.Actors...)
		if g.Post != 0 {
			posts = append(posts, g.Post)
		}
	}
	if len(actors) > 0 {
		if pg.Users, err = s.store.Users(ctx, slices.Compact(slices.Sorted(slices.Values(actors)))); err != nil {
			return feed.NoticePage{}, fmt.Errorf("notices: actors of %d: %w", reader, err)
		}
	}
	if len(posts) > 0 {
		live, err := s.reads.LivePosts(ctx, slices.Compact(slices.Sorted(slices.Values(posts))))
		if err != nil {
			return feed.NoticePage{}, fmt.Errorf("notices: posts of %d: %w", reader, err)
		}
		for _, p := range live {
			pg.Posts[p.ID] = p
		}
		if pg.States, _, err = s.likes.LikeStates(ctx, reader, live); err != nil {
			return feed.NoticePage{}, fmt.Errorf("notices: likes of %d: %w", reader, err)
		}
	}
	for _, g := range groups {
		if _, ok := pg.Posts[g.Post]; g.Post != 0 && !ok {
			continue // deleted since
		}
		// An actor deleted since the read of the groups.
		g.Actors = slices.DeleteFunc(g.Actors, func(id int64) bool { _, ok := pg.Users[id]; return !ok })
		pg.Groups = append(pg.Groups, g)
	}
	return pg, nil
}

// hide is whom reader hears nothing from: muted, blocked either way,
// deleted.
func (s *Service) hide(ctx context.Context, reader int64) ([]int64, error) {
	h, err := s.reads.Hidden(ctx, reader)
	if err != nil {
		return nil, fmt.Errorf("notices: hidden users of %d: %w", reader, err)
	}
	hide := append(h.Silenced(), s.reads.DeletedUserIDs(ctx)...)
	slices.Sort(hide)
	return slices.Compact(hide), nil
}

// NotificationsMarker returns reader's notifications marker with the
// number of groups newer than it (all when there is none), up to the cap.
func (s *Service) NotificationsMarker(ctx context.Context, reader int64) (feed.Marker, error) {
	m, err := s.store.NoticeMarker(ctx, reader)
	if err != nil {
		return feed.Marker{}, err
	}
	return s.withUnread(ctx, reader, m)
}

// SetNotificationsMarker moves reader's marker forward to lastRead (a
// group's id; any id is a position in time) and returns it as
// NotificationsMarker does; never back.
func (s *Service) SetNotificationsMarker(ctx context.Context, reader, lastRead int64) (feed.Marker, error) {
	if lastRead <= 0 || lastRead > feed.MaxID {
		return feed.Marker{}, feed.Errorf(feed.EINVALID, "last_read_id %d is not a notification id", lastRead)
	}
	m, err := s.store.SetNoticeMarker(ctx, reader, lastRead, s.now())
	if err != nil {
		return feed.Marker{}, err
	}
	return s.withUnread(ctx, reader, m)
}

func (s *Service) withUnread(ctx context.Context, reader int64, m feed.Marker) (feed.Marker, error) {
	hide, err := s.hide(ctx, reader)
	if err != nil {
		return feed.Marker{}, err
	}
	m.Unread, m.UnreadCapped, err = s.store.UnreadNotices(ctx, reader, m.LastReadID, hide, s.unreadCap)
	return m, err
}
