package stream

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Kind is what an Event tells a stream's client.
type Kind int

const (
	// Post is a new post of an author the reader follows, or the reader's.
	Post Kind = iota + 1
	// Delete is a post the stream sent that was deleted.
	Delete
	// Update is a post the stream sent that was edited.
	Update
	// Ping is the heartbeat: nothing happened for a while.
	Ping
	// Shutdown ends the stream: the process is going away, the client
	// should reconnect (to another one).
	Shutdown
	// Dropped ends the stream: its client did not keep up.
	Dropped
	// Ended ends the stream: its request's context is done.
	Ended
	// Gone ends the stream: its list was deleted.
	Gone
)

// Event is what Next returns.
type Event struct {
	Kind Kind
	ID   int64 // the post, for Post, Delete and Update
	// Version is the edited post's feed.Post.Version, for Update: the
	// copy to send is of this version or a later one.
	Version int64
	// Shared is the one rendering of a Post or Update that every stream
	// of the process taking it shares (nil for other kinds).
	Shared *Shared
}

// Shared is one post event as all of a process's streams that take it
// share it: the first of them to need it renders it for all of them
// (Do), so that a post to 10,000 open streams is read once, with the like
// states of its 10,000 readers in one bulk call, rather than 10,000 times.
type Shared struct {
	streams []*Stream // set before the event is queued; read-only after
	claim   sync.Once
	done    chan struct{}
	val     any
	err     error
}

func newShared(streams []*Stream) *Shared {
	return &Shared{streams: streams, done: make(chan struct{})}
}

// NewShared returns a Shared event for streams, for tests and benchmarks
// that render without a hub.
func NewShared(streams []*Stream) *Shared { return newShared(streams) }

// Streams are the streams the event was handed to.
func (sh *Shared) Streams() []*Stream { return sh.streams }

// Do returns what render returns, calling it once for all the streams:
// the first caller runs it, the others wait for it or for their ctx. The
// first caller's client may leave meanwhile, so render must not depend on
// that caller's ctx.
func (sh *Shared) Do(ctx context.Context, render func() (any, error)) (any, error) {
	first := false
	sh.claim.Do(func() { first = true })
	if first {
		sh.val, sh.err = render()
		close(sh.done)
		return sh.val, sh.err
	}
	select {
	case <-sh.done:
		return sh.val, sh.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sentMemory is how many sent post ids a stream remembers to send each
// post once: a repeat comes from a redelivered post event, within
// moments of the first.
const sentMemory = 1024

// Stream is one open stream of one reader. Next and Sent are called by the
// one goroutine that serves it.
type Stream struct {
	hub    *Hub
	reader int64
	list   int64 // the reader's list whose feed the stream carries; 0: the home feed
	own    bool  // the reader's own posts go to the stream (the home feed; a list the reader is a member of), guarded by hub.mu

	authors []int64 // ascending, guarded by hub.mu
	joined  uint64  // the hub's joins when it last joined a channel, guarded by hub.mu

	slot, slotOwner string // the per-user slot held, and its owner value (slots.go); "": none

	events  chan *Event // one event, shared by all the streams taking it: read-only
	refresh chan struct{}
	ticker  *time.Ticker
	soon    bool // the ticker runs at recheckAfter once (refollow)

	endOnce sync.Once
	gone    chan struct{}
	why     Kind

	// hidden is the reader's hidden authors as the stream last read
	// them (muted, blocked either way), kept so that delivering a post
	// costs no read of them: a change of them is announced on the
	// reader's channel (forgetHidden), and they are read again after
	// hiddenTTL in case an announcement was lost.
	hmu      sync.Mutex
	hidden   feed.Hidden
	hiddenAt time.Time // zero: not known
	hiddenGn uint64    // bumped by forgetHidden: a read begun before is stale

	floor int64          // posts at or below it are not sent: the client has them (0: none; a post from before 2025 is below 0)
	sent  map[int64]bool // post id → deleted since: a post sent is never sent again, a delete once
	order []int64        // sent's ids, oldest first, to forget the oldest
	// lastID is the client's Last-Event-ID: the one it resumed from, or
	// the newest post sent with an id: line since.
	lastID int64
	close  sync.Once
}

// end makes Next return why; the first reason wins.
func (s *Stream) end(why Kind) {
	s.endOnce.Do(func() {
		s.why = why
		close(s.gone)
	})
}

// Next waits for what to tell the client next: a Post not sent yet, a
// Delete or an Update of a post sent, a Ping, or the end (Shutdown,
// Dropped, Ended).
// A change of whom the reader follows is applied on the way.
//
// An idle stream's goroutine waits here, and the runtime shrinks its
// stack only while it uses under a quarter of it: the work between waits
// is done in calls (refollow, admit) so that this frame stays small.
func (s *Stream) Next(ctx context.Context) Event {
	for {
		select {
		case <-s.gone: // first: what is buffered is moot once dropped
			return Event{Kind: s.why}
		default:
		}
		select {
		case <-ctx.Done():
			return Event{Kind: Ended}
		case <-s.gone:
			return Event{Kind: s.why}
		case <-s.refresh:
			s.refollow(ctx)
		case <-s.ticker.C:
			s.beat()
			return Event{Kind: Ping}
		case ev := <-s.events:
			if s.admit(ev) {
				return *ev
			}
		}
	}
}

// recheckAfter is how soon after the reader's state changed (refollow) a
// stream's next heartbeat comes, with its token check: past the second
// within which every process sees a token revoked or its user deleted, so
// that such a stream ends within moments, not at its next heartbeat.
const recheckAfter = 1500 * time.Millisecond

// refollow reads whom the reader follows again and listens to them, and
// brings the next heartbeat (and its token check) forward: the change may
// be the reader's tokens revoked, or its account deleted.
//
//go:noinline
func (s *Stream) refollow(ctx context.Context) {
	err := s.hub.attach(ctx, s)
	if s.list != 0 && feed.ErrorCode(err) == feed.ENOTFOUND {
		s.end(Gone)
		return
	}
	if err != nil {
		s.hub.logger.Warn("stream: follows changed; keeping the old set", "reader", s.reader, "err", err)
	}
	if s.hub.cfg.Heartbeat > recheckAfter {
		s.ticker.Reset(recheckAfter)
		s.soon = true
	}
}

// beat puts the heartbeat back to its interval after one refollow brought
// forward.
//
//go:noinline
func (s *Stream) beat() {
	if s.soon {
		s.soon = false
		s.ticker.Reset(s.hub.cfg.Heartbeat)
	}
}

// admit reports whether ev goes to the client: a post not sent yet (and
// above the resume's floor), a delete or an update of a post sent.
//
//go:noinline
func (s *Stream) admit(ev *Event) bool {
	switch ev.Kind {
	case Post:
		// A post is announced more than once (by the relay and by the
		// dispatcher, and again on a redelivery), possibly after its
		// delete: it stays remembered, deleted, so it is not sent again.
		if s.floor != 0 && ev.ID <= s.floor || s.WasSent(ev.ID) {
			return false
		}
		s.Sent(ev.ID)
	case Delete, Update:
		if deleted, sent := s.sent[ev.ID]; !sent || deleted {
			return false
		}
		if ev.Kind == Delete {
			s.sent[ev.ID] = true // a post is deleted once
		}
	}
	return true
}

// HiddenTTL is how long a stream trusts the hidden authors it read
// before reading them again: changes are announced, so this only bounds
// how long a lost announcement goes unnoticed.
const HiddenTTL = 2 * time.Minute

// Reader is the user the stream is for.
func (s *Stream) Reader() int64 { return s.reader }

// List is the reader's list whose feed the stream carries; 0: the home
// feed.
func (s *Stream) List() int64 { return s.list }

// Hides reports whether the stream's feed leaves out author's posts, by
// the reader's hidden authors h: the home feed's rule, or a list's (whose
// exclusive members the home feed leaves out, and the list keeps).
func (s *Stream) Hides(h feed.Hidden, author int64) bool {
	if s.list != 0 {
		return h.InList(author)
	}
	return h.InFeed(author)
}

// Shows reports whether the stream's feed carries p, by the reader's
// hidden authors and, on the home feed, its rule for replies (both in h).
// Whom the reader follows, which the rule may ask, is the set of authors
// the stream listens to.
func (s *Stream) Shows(h feed.Hidden, p feed.Post) bool {
	if s.Hides(h, p.AuthorID) || h.HidesRepost(p) {
		return false
	}
	if s.list != 0 {
		return true
	}
	// The home feed's repost rules that one post decides (the dedupe
	// window is the pages'; docs/reposts.md).
	return !h.HomeHidesRepost(s.reader, p) && h.Replies().Shows(s.reader, p, s.follows)
}

// follows reports whether the reader follows user, by the stream's
// authors (its followees and itself; the rule never asks about itself).
func (s *Stream) follows(user int64) bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	_, ok := slices.BinarySearch(s.authors, user)
	return ok
}

// Hidden returns the reader's hidden authors as last read, whether they
// are known and younger than HiddenTTL, and a generation to hand back to
// SetHidden with a fresh read.
func (s *Stream) Hidden(now time.Time) (h feed.Hidden, fresh bool, gen uint64) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	fresh = !s.hiddenAt.IsZero() && now.Sub(s.hiddenAt) < HiddenTTL
	return s.hidden, fresh, s.hiddenGn
}

// SetHidden keeps h, read at time at, as the reader's hidden authors,
// unless they were announced changed since gen was taken (Hidden): that
// read may predate the change.
func (s *Stream) SetHidden(h feed.Hidden, at time.Time, gen uint64) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if gen != s.hiddenGn {
		return
	}
	s.hidden, s.hiddenAt = h, at
}

// forgetHidden drops the hidden authors: the reader changed whom it
// mutes, blocks or follows.
func (s *Stream) forgetHidden() {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	s.hiddenGn++
	s.hiddenAt = time.Time{}
}

// Sent records that post id went to the client (a resumed post, or one
// Next returned).
func (s *Stream) Sent(id int64) {
	if _, ok := s.sent[id]; ok {
		return
	}
	s.sent[id] = false
	s.order = append(s.order, id)
	if len(s.order) > sentMemory {
		delete(s.sent, s.order[0])
		s.order = s.order[1:]
	}
}

// Resumed tells the stream that its client has every post up to last (its
// Last-Event-ID): a late event of an older post is not sent again.
func (s *Stream) Resumed(last int64) { s.floor, s.lastID = last, max(s.lastID, last) }

// idLine reports whether post id goes out with an id: line, and takes it
// as the client's Last-Event-ID if so. A post older than the client's
// Last-Event-ID (announced late: its relay could not announce it, and
// its dispatcher did after the fan-out, when newer posts had gone out)
// goes without one: an id: line would move the client's Last-Event-ID
// back to it, so a resume would send again every post sent since.
func (s *Stream) idLine(id int64) bool {
	if id < s.lastID {
		return false
	}
	s.lastID = id
	return true
}

// WasSent reports whether post id went to the client.
func (s *Stream) WasSent(id int64) bool {
	_, ok := s.sent[id]
	return ok
}

// Close releases the stream. It is idempotent.
func (s *Stream) Close() {
	s.close.Do(func() {
		s.ticker.Stop()
		s.end(Ended)
		s.hub.release(s)
	})
}
