package feed

import (
	"hash/fnv"
	"slices"
	"strings"
	"time"
)

// NoticeKind is what a notification tells its recipient: someone followed
// them, liked or reposted their post, or replied to it.
type NoticeKind string

// The kinds of notification (docs/notifications.md). Follows, likes and
// reposts group per (recipient, kind, post) within NoticeWindow; a reply
// is a group of its own, whose post is the reply.
const (
	NoticeFollow NoticeKind = "follow"
	NoticeLike   NoticeKind = "like"
	NoticeRepost NoticeKind = "repost"
	NoticeReply  NoticeKind = "reply"
)

// NoticeKinds lists every kind, in the order the API documents them.
var NoticeKinds = []NoticeKind{NoticeFollow, NoticeLike, NoticeRepost, NoticeReply}

// DefaultNoticeWindow is how far apart a group's first and newest
// notifications may be: a like 12 h after the first like of a group
// starts a new group (FEEDD_NOTIFICATION_WINDOW).
const DefaultNoticeWindow = 12 * time.Hour

// NoticeShownActors is how many of a group's newest actors a page shows.
const NoticeShownActors = 3

// Grouped reports whether notifications of k gather into groups.
func (k NoticeKind) Grouped() bool { return k != NoticeReply }

// Valid reports whether k is a known kind.
func (k NoticeKind) Valid() bool { return slices.Contains(NoticeKinds, k) }

// ParseNoticeKinds parses a comma-separated list of kinds ("like,repost");
// "" is every kind (nil). An unknown kind is EINVALID.
func ParseNoticeKinds(s string) ([]NoticeKind, error) {
	if s == "" {
		return nil, nil
	}
	var out []NoticeKind
	for _, part := range strings.Split(s, ",") {
		k := NoticeKind(strings.TrimSpace(part))
		if !k.Valid() {
			return nil, Errorf(EINVALID, "types: %q is not a notification type (follow, like, repost, reply)", part)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Notice is one fact a recipient is told of: actor did kind (to post, 0
// for a follow) at At. Its ID is time-ordered and deterministic, so that
// a write done again (a redelivered batch, a mirror synced twice) gives
// the same notification.
type Notice struct {
	Recipient, Actor int64
	Kind             NoticeKind
	Post             int64
	At               time.Time
}

// ID is n's notification id: its time's id (IDAt) with a sequence number
// hashed from the actor, the kind and the post, so two actors of one
// millisecond most likely differ.
func (n Notice) ID() int64 {
	h := fnv.New64a()
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(n.Actor >> (8 * i))
		b[8+i] = byte(n.Post >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(n.Kind))
	seq := int64(h.Sum64() & seqMask)
	at := n.At
	if at.Before(IDEpoch) {
		at = IDEpoch.Add(time.Millisecond)
	}
	id, err := IDAt(at, seq)
	if err != nil { // past 2094, or the id 0: the latest id there is
		return MaxID
	}
	return id
}

// NoticeGroup is a page's item: the notifications of one kind about one
// post (or one follow group, or one reply), newest actors first. ID is
// the group's newest notification's id, the page's order and cursor.
type NoticeGroup struct {
	ID         int64
	Kind       NoticeKind
	Post       int64 // 0 for follows
	Actors     []int64
	ActorCount int64
	LatestAt   time.Time
}

// NoticeQuery asks for a page of a recipient's notifications: groups
// with ids below Before (0: from the newest), of Kinds (nil: all), at
// most N, leaving out the actors of Hide (muted, blocked either way,
// deleted), whose rows do not count either.
type NoticeQuery struct {
	Before int64
	Kinds  []NoticeKind
	Hide   []int64
	N      int
}

// NoticePage is a page of a reader's notifications with what renders
// them: the actors shown, the posts (with their likes as the reader sees
// them; States nil when the likes are dropped), and the position of the
// next page (0: none).
type NoticePage struct {
	Groups []NoticeGroup
	Users  map[int64]User
	Posts  map[int64]Post
	States map[int64]LikeState
	Next   int64
}
