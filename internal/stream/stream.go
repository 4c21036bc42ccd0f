// Package stream is the live feed's hub: it keeps the open streams of a
// serve process, listens on the channels of the authors their readers
// follow (feed.Notifier) and hands each stream the events of its
// authors. Publishing an event is one message on its author's channel
// (Announcer), whatever the author's follower count and however many
// streams are open; a serve process listens to a channel once, however
// many of its streams need it (reference-counted), and stops when the
// last one leaves.
//
// What a stream carries is ids, and for a post or an edit one Shared
// rendering per event that all of the process's streams taking it share:
// the post is rendered once for all their readers, as their feed pages
// show it.
//
// The package is the whole live stream: the HTTP API mounts its Handler
// on GET /v1/me/feed/stream, and asks it for tickets (Tickets). In the
// order a stream meets them: tickets.go (a ticket checked, spent once
// open), handler.go (the opening, resume, the serve loop, detaching from
// net/http), hub.go and slots.go (the hub: open streams, per-user slots,
// delivery), conn.go (one stream's events), render.go (a post rendered
// once for all its streams), sse.go (the SSE framing), stream.go (the
// channel messages and the Announcer).
package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/feedd/feedd/internal/feed"
)

// Messages on an author's channel, as text: "p <id>" a new post of the
// author, "d <id>" one of its posts deleted, "u <id> <version>" one of its
// posts edited (version: feed.Post.Version of the edit), "f" the author
// (as a reader) followed or unfollowed someone.
const (
	msgPost    = 'p'
	msgDelete  = 'd'
	msgUpdate  = 'u'
	msgFollows = 'f'
)

func encodeMsg(kind byte, id int64) []byte {
	if kind == msgFollows {
		return []byte{kind}
	}
	return strconv.AppendInt([]byte{kind, ' '}, id, 10)
}

func encodeUpdate(id, version int64) []byte {
	return strconv.AppendInt(append(encodeMsg(msgUpdate, id), ' '), version, 10)
}

// decodeMsg reads a message; version is set for an update only.
func decodeMsg(b []byte) (kind byte, id, version int64, ok bool) {
	if len(b) == 0 {
		return 0, 0, 0, false
	}
	kind = b[0]
	if kind == msgFollows {
		return kind, 0, 0, len(b) == 1
	}
	if (kind != msgPost && kind != msgDelete && kind != msgUpdate) || len(b) < 3 || b[1] != ' ' {
		return 0, 0, 0, false
	}
	rest := string(b[2:])
	if kind == msgUpdate {
		var v string
		var found bool
		if rest, v, found = strings.Cut(rest, " "); !found {
			return 0, 0, 0, false
		}
		var err error
		if version, err = strconv.ParseInt(v, 10, 64); err != nil || version < 0 {
			return 0, 0, 0, false
		}
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return kind, id, version, err == nil && feed.ValidPostID(id) // negative: a post from before 2025
}

// Announcer publishes the events streams listen for. Every call is one
// message on one channel.
type Announcer struct {
	n feed.Notifier
}

var _ feed.Announcer = (*Announcer)(nil)

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

// PostEdited announces that author's post id was edited; version is the
// edited post's feed.Post.Version, so that a process whose copy of the
// post is older reads past it.
func (a *Announcer) PostEdited(ctx context.Context, author, id, version int64) error {
	return a.notify(ctx, author, encodeUpdate(id, version))
}

// FollowsChanged tells the streams of reader to read whom it follows again:
// on its own channel, which each of its streams listens to for its own
// posts.
func (a *Announcer) FollowsChanged(ctx context.Context, reader int64) error {
	return a.notify(ctx, reader, encodeMsg(msgFollows, 0))
}

// TokensChanged tells the streams of user that its tokens were revoked or
// it was deleted. It is FollowsChanged's message (the reader's state
// changed: read it again), which also brings a stream's next token check
// forward (Stream.refollow), so that processes of an older build, which
// know no other message, still read it.
func (a *Announcer) TokensChanged(ctx context.Context, user int64) error {
	return a.notify(ctx, user, encodeMsg(msgFollows, 0))
}

func (a *Announcer) notify(ctx context.Context, author int64, msg []byte) error {
	if err := a.n.Notify(ctx, author, msg); err != nil {
		return fmt.Errorf("stream: announce %s of %d: %w", strings.TrimSpace(string(msg[:1])), author, err)
	}
	return nil
}
