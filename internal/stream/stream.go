// Package stream is the live feed's hub: it keeps the open streams of a
// serve process, listens on the channels of the authors their readers
// follow (feed.Notifier) and hands each stream the events of its
// authors. Publishing an event is one message on its author's channel
// (Announcer), whatever the author's follower count and however many
// streams are open; a serve process listens to a channel once, however
// many of its streams need it (reference-counted), and stops when the
// last one leaves.
//
// What a stream carries is ids: the HTTP layer renders each post for its
// reader, as a feed page does.
package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/feedd/feedd/internal/feed"
)

// Messages on an author's channel, as text: "p <id>" a new post of the
// author, "d <id>" one of its posts deleted, "f" the author (as a reader)
// followed or unfollowed someone.
const (
	msgPost    = 'p'
	msgDelete  = 'd'
	msgFollows = 'f'
)

func encodeMsg(kind byte, id int64) []byte {
	if kind == msgFollows {
		return []byte{kind}
	}
	return strconv.AppendInt([]byte{kind, ' '}, id, 10)
}

func decodeMsg(b []byte) (kind byte, id int64, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	kind = b[0]
	if kind == msgFollows {
		return kind, 0, len(b) == 1
	}
	if (kind != msgPost && kind != msgDelete) || len(b) < 3 || b[1] != ' ' {
		return 0, 0, false
	}
	id, err := strconv.ParseInt(string(b[2:]), 10, 64)
	return kind, id, err == nil && feed.ValidPostID(id) // negative: a post from before 2025
}

// Announcer publishes the events streams listen for. Every call is one
// message on one channel.
type Announcer struct {
	n feed.Notifier
}

// NewAnnouncer returns an Announcer on n.
func NewAnnouncer(n feed.Notifier) *Announcer { return &Announcer{n: n} }

// PostCreated announces author's new post id. The dispatcher calls it once
// per post event (a redelivery may repeat it: a stream sends a post once).
func (a *Announcer) PostCreated(ctx context.Context, author, id int64) error {
	return a.notify(ctx, author, encodeMsg(msgPost, id))
}

// PostDeleted announces that author's post id is gone.
func (a *Announcer) PostDeleted(ctx context.Context, author, id int64) error {
	return a.notify(ctx, author, encodeMsg(msgDelete, id))
}

// FollowsChanged tells the streams of reader to read whom it follows again:
// on its own channel, which each of its streams listens to for its own
// posts.
func (a *Announcer) FollowsChanged(ctx context.Context, reader int64) error {
	return a.notify(ctx, reader, encodeMsg(msgFollows, 0))
}

func (a *Announcer) notify(ctx context.Context, author int64, msg []byte) error {
	if err := a.n.Notify(ctx, author, msg); err != nil {
		return fmt.Errorf("stream: announce %s of %d: %w", strings.TrimSpace(string(msg[:1])), author, err)
	}
	return nil
}
