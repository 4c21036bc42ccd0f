package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/stream"
)

// Live is what the live stream needs beyond the timeline and the likes:
// the process's hub of open streams, the announcer that tells every
// process's streams of deletes and follow changes, and the shared
// key-value store that holds stream tickets (so that a ticket minted by
// one process is redeemed on another). A nil Live, or a nil Hub, answers
// the stream 503.
type Live struct {
	Hub      *stream.Hub
	Announce *stream.Announcer
	Tickets  feed.KV
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
	// announceTimeout bounds telling the streams of a change the client
	// already has its answer for.
	announceTimeout = 2 * time.Second
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
func handleStreamTicket(tok *tokens, svc Service, lv *Live) http.Handler {
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
		encode(w, http.StatusCreated, ticketJSON{Ticket: ticket, ExpiresAt: formatTime(exp)})
		return nil
	})
}

// redeem consumes a stream ticket and returns the principal it was minted
// for. A ticket works once: of two requests racing with it, the one whose
// CompareAndDelete removes it wins.
func (t *tokens) redeem(ctx context.Context, ticket string) (principal, error) {
	bad := feed.Errorf(feed.EUNAUTHORIZED, "the stream ticket is not valid: it is unknown, used or expired; get a new one")
	if t.tickets == nil || ticket == "" || len(ticket) > 64 {
		return principal{}, bad
	}
	key := ticketKey(ticket)
	value, ok, err := t.tickets.Get(ctx, key)
	if err != nil {
		return principal{}, fmt.Errorf("httpapi: read stream ticket: %w", err)
	}
	if !ok {
		return principal{}, bad
	}
	if won, err := t.tickets.CompareAndDelete(ctx, key, value); err != nil {
		return principal{}, fmt.Errorf("httpapi: consume stream ticket: %w", err)
	} else if !won {
		return principal{}, bad
	}
	parts := strings.Split(value, ":")
	if len(parts) != 3 {
		return principal{}, bad
	}
	user, err1 := strconv.ParseInt(parts[0], 10, 64)
	gen, err2 := strconv.ParseInt(parts[1], 10, 64)
	exp, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || user <= 0 {
		return principal{}, bad
	}
	// The cache's ttl ends it too; the clock check makes expiry exact
	// whatever the cache's resolution.
	if !t.now().Before(time.UnixMilli(exp)) {
		return principal{}, bad
	}
	// Revoking the user's tokens revokes the tickets they minted.
	if err := t.stands(ctx, verifiedToken{user: user, gen: gen}); err != nil {
		return principal{}, err
	}
	return principal{user: user}, nil
}

// announcing runs h and, when it succeeded, tells the streams: a follow
// or unfollow (the reader's streams read their authors again), or a
// delete (streams that sent the post send its delete).
func announcing(lv *Live, what byte, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if lv == nil || lv.Announce == nil {
			return
		}
		if sw := findStatusWriter(w); sw == nil || sw.status < 200 || sw.status > 299 {
			return
		}
		parse := actingUserAndID
		if what == 'd' {
			parse = actingUserAndPostID
		}
		me, id, err := parse(r)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), announceTimeout)
		defer cancel()
		if what == 'd' {
			err = lv.Announce.PostDeleted(ctx, me, id)
		} else {
			err = lv.Announce.FollowsChanged(ctx, me)
		}
		if err != nil {
			// The change is made; open streams learn of it late (a
			// reconnect reads the feed afresh). The request log says so.
			noteError(w, fmt.Errorf("httpapi: announce to the live streams: %w", err))
		}
	})
}

// handleStream serves the live stream as Server-Sent Events.
func handleStream(svc Service, lk Likes, lv *Live) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		if lv == nil || lv.Hub == nil {
			return feed.Errorf(feed.EUNAVAILABLE, "the live stream is not enabled on this process")
		}
		var last int64
		if v := r.Header.Get("Last-Event-ID"); v != "" {
			if last, err = feed.ParsePostID(v); err != nil {
				return feed.Errorf(feed.EINVALID, "Last-Event-ID must be a post id from this stream, got %q", v)
			}
		}
		ctx := r.Context()
		s, err := lv.Hub.Open(ctx, me)
		if err != nil {
			return err
		}
		defer s.Close()

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
			return nil
		}
		if last != 0 {
			s.Resumed(last)
			if err := resume(ctx, svc, lk, me, last, s, sse); err != nil {
				noteError(w, err)
				sse.retry()
				return nil
			}
		}
		for {
			ev := s.Next(ctx)
			var err error
			switch ev.Kind {
			case stream.Post:
				err = sendPost(ctx, svc, lk, me, ev.ID, sse)
			case stream.Delete:
				err = sse.send(fmt.Appendf(nil, "event: delete\ndata: {\"id\":\"%d\"}\n\n", ev.ID))
			case stream.Ping:
				err = sse.send([]byte(": ping\n\n"))
			case stream.Shutdown:
				sse.retry()
				return nil
			default: // Dropped, Ended: the client is gone or behind
				return nil
			}
			if err != nil {
				// A post that could not be read: end the stream, and the
				// client resumes from the last post it has, missing none.
				noteError(w, err)
				sse.retry()
				return nil
			}
		}
	})
}

// resume sends the posts of me's feed newer than last, oldest first, or a
// reset when more than resumeMax were missed.
func resume(ctx context.Context, svc Service, lk Likes, me, last int64, s *stream.Stream, sse *sseWriter) error {
	posts, _, err := svc.Feed(ctx, me, 0, resumeMax+1)
	if err != nil {
		return err
	}
	n := 0
	for n < len(posts) && posts[n].ID > last {
		n++
	}
	if n > resumeMax {
		// The id is the newest post's: a reconnect after the reload
		// resumes from there.
		return sse.send(fmt.Appendf(nil, "event: reset\nid: %d\ndata: {}\n\n", posts[0].ID))
	}
	page, err := showPosts(ctx, lk, me, posts[:n], false, nil)
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

// sendPost sends post id as me's feed page shows it; a post deleted
// meanwhile, or by an author me's feed hides (muted, blocked either way),
// is skipped, as the feed skips it.
func sendPost(ctx context.Context, svc Service, lk Likes, me, id int64, sse *sseWriter) error {
	p, err := svc.Post(ctx, id)
	if feed.ErrorCode(err) == feed.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	hidden, err := svc.Hidden(ctx, me)
	if err != nil {
		return err
	}
	if hidden.InFeed(p.AuthorID) {
		return nil
	}
	page, err := showPosts(ctx, lk, me, []feed.Post{p}, false, nil)
	if err != nil {
		return err
	}
	for _, it := range page.Items {
		if err := sse.sendPost(it); err != nil {
			return err
		}
	}
	return nil
}

// sseWriter writes events, each flushed at once and within
// streamWriteTimeout.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

func (s *sseWriter) send(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sseWriter) sendPost(it postJSON) error {
	b := append(s.buf[:0], "event: post\nid: "...)
	b = append(b, it.ID...)
	b = append(b, "\ndata: "...)
	b = it.appendJSON(b) // the bytes of a feed page's item
	b = append(b, "\n\n"...)
	s.buf = b
	return s.send(b)
}

// retry ends a stream with a reconnection hint, spread over a couple of
// seconds so that the clients of a process going away do not all land on
// the others at once.
func (s *sseWriter) retry() {
	_ = s.send(fmt.Appendf(nil, "retry: %d\n\n", 1000+mrand.IntN(2000)))
}
