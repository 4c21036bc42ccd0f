package stream

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
)

// Timeline is what the stream needs of the timeline: the posts it
// announces, the feed a resume replays, and the authors each reader's
// feed hides.
type Timeline interface {
	Post(ctx context.Context, id int64) (feed.Post, error)
	// PostVersion is Post of a copy at feed.Post.Version v or later.
	PostVersion(ctx context.Context, id, v int64) (feed.Post, error)
	// FeedSince returns up to n posts of reader's home feed with ids
	// above after, newest first, and whether more exist.
	FeedSince(ctx context.Context, reader, after int64, n int) ([]feed.Post, bool, error)
	// ListFeedSince is FeedSince of the feed of reader's list id.
	ListFeedSince(ctx context.Context, reader, list, after int64, n int) ([]feed.Post, bool, error)
	// ListShows reports whether post p belongs in reader's list id by the
	// list's rule for replies.
	ListShows(ctx context.Context, reader, list int64, p feed.Post) (bool, error)
	Hidden(ctx context.Context, viewer int64) (feed.Hidden, error)
}

// Likes is what the stream needs of the likes: each post's count and
// whether its reader likes it (a likes service that also has LikedBy,
// bulkLikes, answers for all of a post's readers at once).
type Likes interface {
	LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (states map[int64]feed.LikeState, degraded bool, err error)
}

// API is what the stream needs of the HTTP API that mounts it: who a
// request acts as and whether that still stands, its query as the API
// reads every route's, and its way of answering and logging errors.
type API interface {
	// Caller is whom r acts as, as the API authenticated it.
	Caller(r *http.Request) (Caller, error)
	// Stands checks that c's token (or the token its ticket was minted
	// with) still stands: not expired, not revoked, its user not
	// deleted; EUNAUTHORIZED if not.
	Stands(ctx context.Context, c Caller) error
	// Param is r's query parameter name ("": absent), by the API's
	// strict rules: a malformed query, or name given twice, is an error.
	Param(r *http.Request, name string) (string, error)
	// Respond answers err as every route of the API answers errors.
	Respond(w http.ResponseWriter, err error)
	// Note hands err to the request's log line.
	Note(w http.ResponseWriter, err error)
}

// Caller is whom a stream's request acts as, and the token that says so:
// its generation and expiry (zero: unknown), so that the stream ends with
// the token.
type Caller struct {
	User    int64
	Gen     int64
	Expires time.Time
	// Ticket is the ticket the request came with, checked but not spent
	// (the stream spends it once open); nil for a token.
	Ticket *Ticket
}

const (
	// resumeMax is how many missed posts a resume replays; past it the
	// client is told to reload.
	resumeMax = 100
	// rendersPerCPU bounds how many posts a process renders for its
	// streams at once, per CPU. Each rendering holds one of the
	// process's cache connections at a time (the post, the likes of its
	// readers), and go-redis keeps 10 per CPU: the process's other
	// requests must still find one.
	rendersPerCPU = 4
	// writesPerCPU bounds how many streams of a process write an event
	// to their client at once, per CPU. A post to 10,000 streams wakes
	// 10,000 goroutines at once; unbounded, they all queue for the CPUs,
	// and every other request of the process (a publish) waits behind
	// them. Bounded, the others wait parked, and the process's other
	// goroutines are run between them. A write holds its slot for at most
	// writeTimeout; it blocks only once a client has stopped reading for
	// long enough to fill its socket's buffers, and such a client is then
	// cut off.
	writesPerCPU = 4
)

// Handler serves the live stream, GET /v1/me/feed/stream, as Server-Sent
// Events: it opens the caller's stream on the hub (of the home feed, or
// with ?list= of one of the caller's lists), then hands the connection to
// goroutines of its own (detach).
//
// An idle stream's goroutine waits in Next for hours, and its stack is
// much of what an idle stream holds: the runtime halves a goroutine's
// stack at a collection only while it uses under a quarter of it. So the
// frames on the idle path are kept small: the opening (open) and each
// event (liveStream.serve) run in calls that have returned while the
// stream waits, and the loops hold little else.
type Handler struct {
	hub             *Hub
	tl              Timeline
	lk              Likes
	tickets         *Tickets
	api             API
	renders, writes chan struct{}
}

// NewHandler returns the stream's handler on hub, rendering posts from tl
// and lk; tickets spends the tickets streams are opened with.
func NewHandler(hub *Hub, tl Timeline, lk Likes, tickets *Tickets, api API) *Handler {
	return &Handler{
		hub: hub, tl: tl, lk: lk, tickets: tickets, api: api,
		renders: make(chan struct{}, rendersPerCPU*runtime.GOMAXPROCS(0)),
		writes:  make(chan struct{}, writesPerCPU*runtime.GOMAXPROCS(0)),
	}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ls, err := h.open(w, r)
	if ls == nil {
		if err != nil {
			h.api.Respond(w, err)
		}
		return
	}
	if ls.detach(r) {
		return
	}
	defer ls.s.Close()
	ctx := r.Context()
	for ls.serve(ctx, ls.s.Next(ctx)) {
	}
}

// detach takes the stream's connection from net/http and serves the
// stream on two goroutines of its own, and reports whether it did: the
// request's goroutine returns, and net/http frees what it keeps for the
// connection while a request runs (its read and write buffers and the
// request, some 15 KB of the 45 KB an idle stream held in the bench's
// serve process). One goroutine waits for the stream's events and writes
// them; the other waits on a read of the connection, which ends when the
// client goes away, as net/http's own background read did. The response
// is already under way with a chunked body, so each write is a chunk.
//
// A connection that cannot be taken (HTTP/2, a test's recorder) is
// served by the handler instead. The HTTP server's Shutdown does not wait
// for a detached stream: the process waits for the hub to drain
// (Hub.Drain) after it ends them.
func (ls *liveStream) detach(r *http.Request) bool {
	conn, _, err := ls.sse.rc.Hijack()
	if err != nil {
		return false
	}
	// The request's context ends as the handler returns; the stream's
	// keeps its values and ends when the client goes away.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ls.w = nil
	ls.sse.w, ls.sse.rc, ls.sse.conn = nil, nil, conn
	go func() {
		// A stream's client sends nothing after its request: a read
		// returns when it closes the connection, or when we do.
		var b [16]byte
		for {
			if _, err := conn.Read(b[:]); err != nil {
				cancel()
				return
			}
		}
	}()
	go func() {
		defer conn.Close()
		defer ls.s.Close()
		defer cancel()
		for ls.serve(ctx, ls.s.Next(ctx)) {
		}
		ls.sse.end()
	}()
	return true
}

// liveStream is an open stream and what serving it needs.
type liveStream struct {
	h   *Handler
	w   http.ResponseWriter // nil once detached: errors go to the hub's log
	c   Caller              // its ticket spent: nil
	s   *Stream
	sse *sseWriter
}

// open opens the caller's stream and sends its opening: the headers, the
// open comment, and on a resume the posts the client missed. A nil stream
// with a nil error: the stream is over (ended with a retry hint); a nil
// stream with an error: the error answers the request.
func (h *Handler) open(w http.ResponseWriter, r *http.Request) (*liveStream, error) {
	c, err := h.api.Caller(r)
	if err != nil {
		return nil, err
	}
	// The ticket was read by the API's authentication; given twice, it
	// is refused like any parameter given twice.
	if _, err := h.api.Param(r, "ticket"); err != nil {
		return nil, err
	}
	last, err := h.lastEventID(r)
	if err != nil {
		return nil, err
	}
	list, err := h.list(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	var s *Stream
	if list == 0 {
		s, err = h.hub.Open(ctx, c.User)
	} else {
		// Another user's list, or none: 404 before the stream begins.
		s, err = h.hub.OpenList(ctx, c.User, list)
	}
	if feed.ErrorCode(err) == feed.ERATELIMIT {
		// The user has as many streams open as allowed. A stream
		// closed frees its slot at once; one whose client vanished
		// without a word is found out by a heartbeat's write, so a retry
		// sooner than a heartbeat rarely finds a slot. (A 503 gets its
		// Retry-After where the API answers every 503.)
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(h.hub.Heartbeat().Seconds()))))
	}
	if err != nil {
		return nil, err
	}
	opened := false
	defer func() {
		if !opened {
			s.Close()
		}
	}()
	// The ticket, if any, is spent now that the stream is open: a
	// refused open (429, 503) leaves it for a retry within its minute.
	if c.Ticket != nil {
		if err := h.tickets.Spend(ctx, c.Ticket); err != nil {
			if feed.ErrorCode(err) == feed.EUNAUTHORIZED {
				w.Header().Set("WWW-Authenticate", `Bearer realm="feedd"`)
			}
			return nil, err
		}
		c.Ticket = nil
	}

	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Accel-Buffering", "no") // nginx: pass events on at once
	w.WriteHeader(http.StatusOK)
	// The stream listens from here on: a comment tells the client so
	// (and flushes the headers).
	if err := sse.send([]byte(": open\n\n")); err != nil {
		return nil, nil
	}
	// The reader's hidden authors are read once here and kept on the
	// stream; a post then costs this stream no cache read (see
	// renderShared).
	if err := loadHidden(ctx, h.tl, s); err != nil {
		h.api.Note(w, err)
		sse.retry()
		return nil, nil
	}
	if last != 0 {
		s.Resumed(last)
		if err := resume(ctx, h.tl, h.lk, last, s, sse); err != nil {
			h.api.Note(w, err)
			sse.retry()
			return nil, nil
		}
	}
	opened = true
	return &liveStream{h: h, w: w, c: c, s: s, sse: sse}, nil
}

// serve tells the client of ev, and reports whether the stream goes on.
func (ls *liveStream) serve(ctx context.Context, ev Event) bool {
	h, s, sse := ls.h, ls.s, ls.sse
	var err error
	switch ev.Kind {
	case Post, Update:
		err = sendShared(ctx, h.tl, h.lk, s, ev, sse, h.renders, h.writes)
	case Delete:
		err = sse.send(fmt.Appendf(nil, "event: delete\ndata: {\"id\":\"%d\"}\n\n", ev.ID))
	case Ping:
		if !ls.stands(ctx) {
			sse.retry()
			return false
		}
		err = sse.send([]byte(": ping\n\n"))
		if err == nil {
			// Read the hidden authors again once they are half their
			// ttl old, here, spread over the streams' own heartbeats,
			// so that a post rarely finds one stale.
			if _, fresh, _ := s.Hidden(time.Now().Add(HiddenTTL / 2)); !fresh {
				err = loadHidden(ctx, h.tl, s)
			}
		}
	case Shutdown:
		sse.retry()
		return false
	default: // Dropped, Ended: the client is gone or behind; Gone: the list is
		return false
	}
	if err != nil {
		// A post that could not be read: end the stream, and the client
		// resumes from the last post it has, missing none.
		ls.fail(err)
		sse.retry()
		return false
	}
	return true
}

// stands reports whether the stream's token still stands, checked at each
// heartbeat: a stream ends within a heartbeat of its token's expiry, its
// revocation or its user's deletion (which every process sees within a
// second), with a retry: hint whose reconnect the API then refuses. A
// check that cannot be answered now (EUNAVAILABLE) leaves the stream
// open: the token may well stand, and the next heartbeat asks again.
func (ls *liveStream) stands(ctx context.Context) bool {
	return feed.ErrorCode(ls.h.api.Stands(ctx, ls.c)) != feed.EUNAUTHORIZED
}

// fail records why the stream ends early: for the request's log line
// while the handler serves it, in the log once detached.
func (ls *liveStream) fail(err error) {
	if ls.w != nil {
		ls.h.api.Note(ls.w, err)
		return
	}
	ls.h.hub.Logger().Warn("stream: ended on an error; the client resumes", "reader", ls.s.Reader(), "err", err)
}

// lastEventID is where a resuming client left off: the Last-Event-ID
// header, or else ?last_event_id=. The query is for browsers: EventSource
// sends the header itself only when it reconnects to the same URL, and a
// ticket opens one stream only, so a page that reconnects with a fresh
// ticket must name the last id in the URL. A post id is no secret. 0: not
// resuming.
func (h *Handler) lastEventID(r *http.Request) (int64, error) {
	q, err := h.api.Param(r, "last_event_id")
	if err != nil {
		return 0, err
	}
	name, v := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if v == "" {
		name, v = "last_event_id", q
	}
	if v == "" {
		return 0, nil
	}
	id, err := feed.ParsePostID(v)
	if err != nil {
		return 0, feed.Errorf(feed.EINVALID, "%s must be a post id from this stream, got %q", name, v)
	}
	return id, nil
}

// list is the ?list= a stream of a list is opened with; 0: the home feed.
func (h *Handler) list(r *http.Request) (int64, error) {
	v, err := h.api.Param(r, "list")
	if err != nil || v == "" {
		return 0, err
	}
	id, err := feed.ParseID(v)
	if err != nil {
		return 0, feed.Errorf(feed.EINVALID, "list must be a list's id, got %q", v)
	}
	return id, nil
}

// resume sends the posts of s's feed (its reader's home feed or list)
// newer than last, oldest first, or a reset when more than resumeMax were
// missed.
func resume(ctx context.Context, tl Timeline, lk Likes, last int64, s *Stream, sse *sseWriter) error {
	me := s.Reader()
	var posts []feed.Post
	var more bool
	var err error
	if s.List() == 0 {
		posts, more, err = tl.FeedSince(ctx, me, last, resumeMax+1)
	} else {
		posts, more, err = tl.ListFeedSince(ctx, me, s.List(), last, resumeMax+1)
	}
	if err != nil {
		return err
	}
	n := len(posts)
	if more || n > resumeMax {
		// The id is the newest post's: a reconnect after the reload
		// resumes from there.
		if len(posts) == 0 { // all of them hidden: no newer id to name
			return sse.send([]byte("event: reset\ndata: {}\n\n"))
		}
		return sse.send(fmt.Appendf(nil, "event: reset\nid: %d\ndata: {}\n\n", posts[0].ID))
	}
	// As a feed page shows them, likes included.
	posts = posts[:n]
	states, _, err := lk.LikeStates(ctx, me, posts)
	if err != nil {
		return err
	}
	page := apijson.NewPostsPage(posts, false, states)
	page.ShowWeights(posts, me, false) // the reader's own posts show their weight
	for i := len(page.Items) - 1; i >= 0; i-- {
		it := page.Items[i]
		id, _ := feed.ParsePostID(it.ID)
		if err := sse.sendPost(it); err != nil {
			return err
		}
		s.Sent(id)
		s.idLine(id)
	}
	return nil
}
