package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/stream"
)

// Live is what the live stream needs beyond the timeline and the likes:
// the process's hub of open streams and the shared key-value store that
// holds stream tickets (so that a ticket minted by one process is redeemed
// on another). A nil Live, or a nil Hub, answers the stream 503. The
// services that make changes announce them to the streams themselves.
type Live struct {
	Hub     *stream.Hub
	Tickets feed.KV
}

const (
	// streamPath is the stream's route; guardStream leaves it out of the
	// in-flight bounds, which a stream would hold for hours: the hub
	// bounds streams per user and per process instead.
	streamPath = "/v1/me/feed/stream"
	// ticketTTL is how long a stream ticket may wait to be redeemed.
	ticketTTL = 60 * time.Second
	// resumeMax is how many missed posts a resume replays; past it the
	// client is told to reload.
	resumeMax = 100
	// streamWriteTimeout bounds each write to a stream's client: one that
	// stops reading is cut off rather than holding its goroutine.
	streamWriteTimeout = 10 * time.Second
)

type ticketJSON struct {
	Ticket    string `json:"ticket"`
	ExpiresAt string `json:"expires_at"`
}

func ticketKey(ticket string) string {
	// The cache holds a digest, not the ticket: what it holds cannot be
	// replayed.
	sum := sha256.Sum256([]byte(ticket))
	return "stream-ticket:" + hex.EncodeToString(sum[:])
}

// handleStreamTicket mints a single-use ticket that opens one stream as
// the caller within ticketTTL, for EventSource, which cannot send an
// Authorization header: the token itself never goes in a URL.
func handleStreamTicket(tok *tokens, svc Timeline, lv *Live) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		if lv == nil || lv.Tickets == nil {
			return feed.Errorf(feed.EUNAVAILABLE, "the live stream is not enabled on this process")
		}
		gen, err := svc.TokenGeneration(r.Context(), me)
		if err != nil {
			return err
		}
		ticket := rand.Text()
		exp := tok.now().UTC().Add(ticketTTL)
		value := fmt.Sprintf("%d:%d:%d", me, gen, exp.UnixMilli())
		ok, err := lv.Tickets.SetNX(r.Context(), ticketKey(ticket), value, ticketTTL)
		if err != nil {
			return fmt.Errorf("httpapi: store stream ticket: %w", err)
		}
		if !ok { // 130 random bits: never
			return fmt.Errorf("httpapi: stream ticket collision")
		}
		encode(w, http.StatusCreated, ticketJSON{Ticket: ticket, ExpiresAt: apijson.Time(exp)})
		return nil
	})
}

// heldTicket is a stream ticket's cache entry: spending it removes
// exactly this value.
type heldTicket struct{ key, value string }

func badTicket() error {
	return feed.Errorf(feed.EUNAUTHORIZED, "the stream ticket is not valid: it is unknown, used or expired; get a new one")
}

// checkTicket returns the principal a stream ticket was minted for, with
// the ticket held for spendTicket: it is spent only once the stream is
// open, so a stream refused for a limit (429, 503) leaves it usable.
func (t *tokens) checkTicket(ctx context.Context, ticket string) (principal, error) {
	if t.tickets == nil || ticket == "" || len(ticket) > 64 {
		return principal{}, badTicket()
	}
	key := ticketKey(ticket)
	value, ok, err := t.tickets.Get(ctx, key)
	if err != nil {
		return principal{}, fmt.Errorf("httpapi: read stream ticket: %w", err)
	}
	if !ok {
		return principal{}, badTicket()
	}
	parts := strings.Split(value, ":")
	if len(parts) != 3 {
		return principal{}, badTicket()
	}
	user, err1 := strconv.ParseInt(parts[0], 10, 64)
	gen, err2 := strconv.ParseInt(parts[1], 10, 64)
	exp, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || user <= 0 {
		return principal{}, badTicket()
	}
	// The cache's ttl ends it too; the clock check makes expiry exact
	// whatever the cache's resolution.
	if !t.now().Before(time.UnixMilli(exp)) {
		return principal{}, badTicket()
	}
	// Revoking the user's tokens revokes the tickets they minted.
	if err := t.stands(ctx, verifiedToken{user: user, gen: gen}); err != nil {
		return principal{}, err
	}
	return principal{user: user, ticket: &heldTicket{key: key, value: value}}, nil
}

// spendTicket uses up the ticket the stream's request came with, if any:
// a ticket works once. Of two requests racing with one ticket, the one
// whose CompareAndDelete removes it wins; the other is answered as if the
// ticket were used.
func spendTicket(ctx context.Context, tickets feed.KV) error {
	p, _ := ctx.Value(principalKey{}).(principal)
	if p.ticket == nil {
		return nil
	}
	won, err := tickets.CompareAndDelete(ctx, p.ticket.key, p.ticket.value)
	if err != nil {
		return fmt.Errorf("httpapi: consume stream ticket: %w", err)
	}
	if !won {
		return badTicket()
	}
	return nil
}

// rendersPerCPU bounds how many posts a process renders for its streams
// at once, per CPU. Each rendering holds one of the process's cache
// connections at a time (the post, the likes of its readers), and
// go-redis keeps 10 per CPU: the process's other requests must still find
// one.
const rendersPerCPU = 4

// writesPerCPU bounds how many streams of a process write an event to
// their client at once, per CPU. A post to 10,000 streams wakes 10,000
// goroutines at once; unbounded, they all queue for the CPUs, and every
// other request of the process (a publish) waits behind them. Bounded,
// the others wait parked, and the process's other goroutines are run
// between them. A write holds its slot for at most streamWriteTimeout; it
// blocks only once a client has stopped reading for long enough to fill
// its socket's buffers, and such a client is then cut off.
const writesPerCPU = 4

// handleStream serves the live stream as Server-Sent Events: it opens the
// stream, then hands the connection to goroutines of its own (detach).
//
// An idle stream's goroutine waits in Next for hours, and its stack is
// much of what an idle stream holds: the runtime halves a goroutine's
// stack at a collection only while it uses under a quarter of it. So the
// frames on the idle path are kept small: the opening (openStream) and
// each event (liveStream.serve) run in calls that have returned while the
// stream waits, and the loops hold little else.
func handleStream(svc Timeline, lk Likes, lv *Live) http.Handler {
	renders := make(chan struct{}, rendersPerCPU*runtime.GOMAXPROCS(0))
	writes := make(chan struct{}, writesPerCPU*runtime.GOMAXPROCS(0))
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		ls, err := openStream(w, r, svc, lk, lv)
		if ls == nil {
			return err
		}
		ls.renders, ls.writes = renders, writes
		if ls.detach(r, lv.Hub.Logger()) {
			return nil
		}
		defer ls.s.Close()
		ctx := r.Context()
		for ls.serve(ctx, ls.s.Next(ctx)) {
		}
		return nil
	})
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
func (ls *liveStream) detach(r *http.Request, logger *slog.Logger) bool {
	conn, _, err := ls.sse.rc.Hijack()
	if err != nil {
		return false
	}
	// The request's context ends as the handler returns; the stream's
	// keeps its values and ends when the client goes away.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ls.w, ls.logger = nil, logger
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
	w               http.ResponseWriter // nil once detached
	logger          *slog.Logger        // once detached: errors are logged here
	svc             Timeline
	lk              Likes
	s               *stream.Stream
	sse             *sseWriter
	renders, writes chan struct{}
}

// openStream opens the caller's stream and sends its opening: the headers,
// the open comment, and on a resume the posts the client missed. A nil
// stream with a nil error: the stream is over (ended with a retry hint);
// a nil stream with an error: the error answers the request.
func openStream(w http.ResponseWriter, r *http.Request, svc Timeline, lk Likes, lv *Live) (*liveStream, error) {
	me, err := actingUser(r)
	if err != nil {
		return nil, err
	}
	if lv == nil || lv.Hub == nil {
		return nil, feed.Errorf(feed.EUNAVAILABLE, "the live stream is not enabled on this process")
	}
	last, err := lastEventID(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	s, err := lv.Hub.Open(ctx, me)
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
	if err := spendTicket(ctx, lv.Tickets); err != nil {
		if feed.ErrorCode(err) == feed.EUNAUTHORIZED {
			w.Header().Set("WWW-Authenticate", `Bearer realm="feedd"`)
		}
		return nil, err
	}

	sse := &sseWriter{w: w, rc: http.NewResponseController(w)}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events on at once
	w.WriteHeader(http.StatusOK)
	// The stream listens from here on: a comment tells the client so
	// (and flushes the headers).
	if err := sse.send([]byte(": open\n\n")); err != nil {
		return nil, nil
	}
	// The reader's hidden authors are read once here and kept on the
	// stream; a post then costs this stream no cache read (see
	// renderShared).
	if err := loadHidden(ctx, svc, s); err != nil {
		noteError(w, err)
		sse.retry()
		return nil, nil
	}
	if last != 0 {
		s.Resumed(last)
		if err := resume(ctx, svc, lk, me, last, s, sse); err != nil {
			noteError(w, err)
			sse.retry()
			return nil, nil
		}
	}
	opened = true
	return &liveStream{w: w, svc: svc, lk: lk, s: s, sse: sse}, nil
}

// serve tells the client of ev, and reports whether the stream goes on.
func (ls *liveStream) serve(ctx context.Context, ev stream.Event) bool {
	svc, s, sse := ls.svc, ls.s, ls.sse
	var err error
	switch ev.Kind {
	case stream.Post, stream.Update:
		err = sendShared(ctx, svc, ls.lk, s, ev, sse, ls.renders, ls.writes)
	case stream.Delete:
		err = sse.send(fmt.Appendf(nil, "event: delete\ndata: {\"id\":\"%d\"}\n\n", ev.ID))
	case stream.Ping:
		err = sse.send([]byte(": ping\n\n"))
		if err == nil {
			// Read the hidden authors again once they are half their
			// ttl old, here, spread over the streams' own heartbeats,
			// so that a post rarely finds one stale.
			if _, fresh, _ := s.Hidden(time.Now().Add(stream.HiddenTTL / 2)); !fresh {
				err = loadHidden(ctx, svc, s)
			}
		}
	case stream.Shutdown:
		sse.retry()
		return false
	default: // Dropped, Ended: the client is gone or behind
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

// fail records why the stream ends early: for the request's log line
// while the handler serves it, in the log once detached.
func (ls *liveStream) fail(err error) {
	if ls.w != nil {
		noteError(ls.w, err)
		return
	}
	ls.logger.Warn("stream: ended on an error; the client resumes", "reader", ls.s.Reader(), "err", err)
}

// lastEventID is where a resuming client left off: the Last-Event-ID
// header, or else ?last_event_id=. The query is for browsers: EventSource
// sends the header itself only when it reconnects to the same URL, and a
// ticket opens one stream only, so a page that reconnects with a fresh
// ticket must name the last id in the URL. A post id is no secret. 0: not
// resuming.
func lastEventID(r *http.Request) (int64, error) {
	name, v := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if v == "" {
		name, v = "last_event_id", r.URL.Query().Get("last_event_id")
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

// resume sends the posts of me's feed newer than last, oldest first, or a
// reset when more than resumeMax were missed.
func resume(ctx context.Context, svc Timeline, lk Likes, me, last int64, s *stream.Stream, sse *sseWriter) error {
	posts, more, err := svc.FeedSince(ctx, me, last, resumeMax+1)
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
	page, _, err := showPosts(ctx, lk, me, feed.Page{Posts: posts[:n]})
	if err != nil {
		return err
	}
	for i := len(page.Items) - 1; i >= 0; i-- {
		it := page.Items[i]
		id, _ := feed.ParsePostID(it.ID)
		if err := sse.sendPost(it); err != nil {
			return err
		}
		s.Sent(id)
	}
	return nil
}

// sendShared sends the post of ev (a Post or an Update) as s's reader's
// feed page shows it; a post deleted meanwhile, or by an author the
// reader's feed hides (muted, blocked either way), is skipped, as the
// feed skips it. The post is rendered once for all the process's streams
// that take it (renderShared, within a slot of renders); this stream only
// picks its bytes and writes them to its client, all within a slot of
// writes (writesPerCPU says why), not of renders: a slow client holds up
// no rendering.
func sendShared(ctx context.Context, svc Timeline, lk Likes, s *stream.Stream, ev stream.Event, sse *sseWriter, renders, writes chan struct{}) error {
	if ev.Shared == nil { // an event not from the hub: this stream's alone
		ev.Shared = stream.NewShared([]*stream.Stream{s})
	}
	// The slot first, then the rendering: the streams waiting for a post's
	// rendering are then at most the slots, and the others wait their turn
	// for a slot, woken one at a time as slots free. Waiting for the
	// rendering first, all 10,000 streams of a celebrity's post were woken
	// at once when it was done.
	select {
	case writes <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	defer func() { <-writes }()
	v, err := ev.Shared.Do(ctx, func() (any, error) {
		// The stream that renders may close meanwhile: the others wait
		// for this rendering, so it runs to its end on its own clock.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), renderTimeout)
		defer cancel()
		select {
		case renders <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("httpapi: wait to render post %d: %w", ev.ID, ctx.Err())
		}
		defer func() { <-renders }()
		return renderShared(ctx, svc, lk, ev)
	})
	if ctx.Err() != nil {
		return nil // the client is gone: Next ends the stream
	}
	if err != nil {
		return err
	}
	b, err := v.(*sharedPost).bytesFor(s)
	if b == nil || err != nil {
		return err
	}
	return sse.send(b)
}

// renderTimeout bounds one post's rendering for all its streams.
const renderTimeout = 10 * time.Second

// hiddenLoads is how many of a post's readers' hidden authors are read at
// once when their streams hold none fresh (rare: streams read them when
// they open and at their heartbeats).
const hiddenLoads = 8

// loadHidden reads s's reader's hidden authors into s.
func loadHidden(ctx context.Context, svc Timeline, s *stream.Stream) error {
	_, _, gen := s.Hidden(time.Now())
	at := time.Now()
	h, err := svc.Hidden(ctx, s.Reader())
	if err != nil {
		return fmt.Errorf("httpapi: hidden authors of %d: %w", s.Reader(), err)
	}
	s.SetHidden(h, at, gen)
	return nil
}

// sharedPost is a post rendered for all the streams that take it: at most
// two events, the one with liked_by_me true and the one with false, and
// which stream gets which.
type sharedPost struct {
	plain, liked []byte // nil plain: the post is gone, no one gets it
	hidden       map[*stream.Stream]bool
	likers       map[int64]bool
	// failed holds the streams whose reader's hidden authors could not
	// be read: they alone end (and resume), the others get the post.
	failed map[*stream.Stream]error
}

// bytesFor is the event s sends: nil when it sends none.
func (p *sharedPost) bytesFor(s *stream.Stream) ([]byte, error) {
	if err := p.failed[s]; err != nil {
		return nil, err
	}
	switch {
	case p.plain == nil || p.hidden[s]:
		return nil, nil
	case p.likers[s.Reader()]:
		return p.liked, nil
	}
	return p.plain, nil
}

// renderShared reads the post of ev once and renders it for every stream
// of ev.Shared, exactly as each reader's feed page shows it: the post
// (at least at the edit's version for an update: this process's copy may
// predate an edit made on another), each reader's hidden authors from its
// stream, and the like count and each reader's liked_by_me in one bulk
// call of the likes service.
func renderShared(ctx context.Context, svc Timeline, lk Likes, ev stream.Event) (*sharedPost, error) {
	var p feed.Post
	var err error
	if ev.Kind == stream.Update {
		p, err = svc.PostVersion(ctx, ev.ID, ev.Version)
	} else {
		p, err = svc.Post(ctx, ev.ID)
	}
	out := &sharedPost{hidden: map[*stream.Stream]bool{}}
	if feed.ErrorCode(err) == feed.ENOTFOUND || err == nil && p.Deleted {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	streams := ev.Shared.Streams()
	out.failed = freshHidden(ctx, svc, streams)
	now := time.Now()
	readers := make([]int64, 0, len(streams))
	seen := make(map[int64]bool, len(streams))
	for _, s := range streams {
		if out.failed[s] != nil {
			continue
		}
		if h, _, _ := s.Hidden(now); h.InFeed(p.AuthorID) {
			out.hidden[s] = true
			continue
		}
		if !seen[s.Reader()] {
			seen[s.Reader()] = true
			readers = append(readers, s.Reader())
		}
	}
	if len(readers) == 0 {
		return out, nil
	}
	states, err := likedBy(ctx, lk, p, readers)
	if err != nil {
		return nil, err
	}
	out.likers = map[int64]bool{}
	var anyLiked bool
	if states != nil {
		for r, on := range states.liked {
			out.likers[r] = on
			anyLiked = anyLiked || on
		}
	}
	render := func(likedByMe bool) []byte {
		var st map[int64]feed.LikeState
		if states != nil {
			st = map[int64]feed.LikeState{p.ID: {Count: states.count, LikedByMe: likedByMe}}
		}
		page := apijson.NewPostsPage([]feed.Post{p}, false, st)
		if len(page.Items) == 0 {
			return nil
		}
		it := page.Items[0]
		var b []byte
		if ev.Kind == stream.Update {
			// No id: line on an update: sseWriter.sendUpdate says why.
			b = append(b, "event: update"...)
		} else {
			b = append(append(b, "event: post\nid: "...), it.ID...)
		}
		b = append(b, "\ndata: "...)
		b = it.AppendJSON(b)
		return append(b, "\n\n"...)
	}
	out.plain = render(false)
	if anyLiked {
		out.liked = render(true)
	}
	return out, nil
}

// freshHidden reads the hidden authors of the streams that hold none
// fresh, hiddenLoads at a time, and returns the streams it could not read
// them for.
func freshHidden(ctx context.Context, svc Timeline, streams []*stream.Stream) map[*stream.Stream]error {
	now := time.Now()
	var stale []*stream.Stream
	for _, s := range streams {
		if _, fresh, _ := s.Hidden(now); !fresh {
			stale = append(stale, s)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	type result struct {
		s   *stream.Stream
		err error
	}
	results := make(chan result, len(stale))
	sem := make(chan struct{}, hiddenLoads)
	for _, s := range stale {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			results <- result{s, loadHidden(ctx, svc, s)}
		}()
	}
	var failed map[*stream.Stream]error
	for range stale {
		if r := <-results; r.err != nil {
			if failed == nil {
				failed = map[*stream.Stream]error{}
			}
			failed[r.s] = r.err
		}
	}
	return failed
}

// bulkLikes is the likes service's answer for many readers of one post
// at once (likes.Service has it).
type bulkLikes interface {
	LikedBy(ctx context.Context, p feed.Post, readers []int64) (count int64, liked map[int64]bool, enriched bool, err error)
}

type readersLikes struct {
	count int64
	liked map[int64]bool
}

// likedBy returns p's like count and which of readers like it; nil while
// the likes service drops that enrichment (degradation switch L1). A
// likes service without the bulk call is asked reader by reader.
func likedBy(ctx context.Context, lk Likes, p feed.Post, readers []int64) (*readersLikes, error) {
	if bl, ok := lk.(bulkLikes); ok {
		count, liked, enriched, err := bl.LikedBy(ctx, p, readers)
		if err != nil || !enriched {
			return nil, err
		}
		return &readersLikes{count: count, liked: liked}, nil
	}
	out := &readersLikes{liked: map[int64]bool{}}
	for _, r := range readers {
		st, _, err := lk.LikeStates(ctx, r, []feed.Post{p})
		if err != nil {
			return nil, err
		}
		if st == nil {
			return nil, nil
		}
		out.count = st[p.ID].Count
		out.liked[r] = st[p.ID].LikedByMe
	}
	return out, nil
}

// sseWriter writes events, each at once and within streamWriteTimeout:
// through the ResponseWriter while the handler serves the stream, and
// once detached, straight to the connection as chunks of the response's
// chunked body.
type sseWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	conn net.Conn // once detached
}

func (s *sseWriter) send(b []byte) error {
	if s.conn != nil {
		_ = s.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		var size [20]byte
		head := append(strconv.AppendInt(size[:0], int64(len(b)), 16), "\r\n"...)
		chunk := net.Buffers{head, b, crlf}
		_, err := chunk.WriteTo(s.conn)
		return err
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

var crlf = []byte("\r\n")

// end ends a detached stream's body with the last chunk (the handler's
// return does it otherwise).
func (s *sseWriter) end() {
	if s.conn != nil {
		_ = s.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		_, _ = s.conn.Write([]byte("0\r\n\r\n"))
	}
}

// itemBufs holds the buffers events are built in: an idle stream keeps
// none.
var itemBufs = sync.Pool{New: func() any { return new([]byte) }}

func (s *sseWriter) sendPost(it apijson.Post) error {
	return s.sendItem(func(b []byte) []byte {
		return append(append(b, "event: post\nid: "...), it.ID...)
	}, it)
}

// sendUpdate sends an edited post without an id: line: the post is
// older than the last one sent, and an id: line would move the client's
// Last-Event-ID back to it, so a resume would send again every post sent
// since.
func (s *sseWriter) sendUpdate(it apijson.Post) error {
	return s.sendItem(func(b []byte) []byte { return append(b, "event: update"...) }, it)
}

// sendItem sends the event begun by head with it as its data.
func (s *sseWriter) sendItem(head func([]byte) []byte, it apijson.Post) error {
	bp := itemBufs.Get().(*[]byte)
	defer itemBufs.Put(bp)
	b := head((*bp)[:0])
	b = append(b, "\ndata: "...)
	b = it.AppendJSON(b) // the bytes of a feed page's item
	b = append(b, "\n\n"...)
	*bp = b
	return s.send(b)
}

// retry ends a stream with a reconnection hint, spread over a couple of
// seconds so that the clients of a process going away do not all land on
// the others at once.
func (s *sseWriter) retry() {
	_ = s.send(fmt.Appendf(nil, "retry: %d\n\n", 1000+mrand.IntN(2000)))
}
