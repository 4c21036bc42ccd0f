package stream

import (
	"context"
	"sync"
	"time"
)

// Kind is what an Event tells a stream's client.
type Kind int

const (
	// Post is a new post of an author the reader follows, or the reader's.
	Post Kind = iota + 1
	// Delete is a post the stream sent that was deleted.
	Delete
	// Ping is the heartbeat: nothing happened for a while.
	Ping
	// Shutdown ends the stream: the process is going away, the client
	// should reconnect (to another one).
	Shutdown
	// Dropped ends the stream: its client did not keep up.
	Dropped
	// Ended ends the stream: its request's context is done.
	Ended
)

// Event is what Next returns.
type Event struct {
	Kind Kind
	ID   int64 // the post, for Post and Delete
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

	authors map[int64]struct{} // guarded by hub.mu

	events  chan Event
	refresh chan struct{}
	ticker  *time.Ticker

	endOnce sync.Once
	gone    chan struct{}
	why     Kind

	floor int64 // posts at or below it are not sent: the client has them (0: none; a post from before 2025 is below 0)
	sent  map[int64]struct{}
	order []int64 // sent's ids, oldest first, to forget the oldest
	close sync.Once
}

// end makes Next return why; the first reason wins.
func (s *Stream) end(why Kind) {
	s.endOnce.Do(func() {
		s.why = why
		close(s.gone)
	})
}

// Next waits for what to tell the client next: a Post not sent yet, a
// Delete of a post sent, a Ping, or the end (Shutdown, Dropped, Ended).
// A change of whom the reader follows is applied on the way.
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
			if err := s.hub.attach(ctx, s); err != nil {
				s.hub.logger.Warn("stream: follows changed; keeping the old set", "reader", s.reader, "err", err)
			}
		case <-s.ticker.C:
			return Event{Kind: Ping}
		case ev := <-s.events:
			switch ev.Kind {
			case Post:
				if s.floor != 0 && ev.ID <= s.floor || s.WasSent(ev.ID) {
					continue
				}
				s.Sent(ev.ID)
			case Delete:
				if !s.WasSent(ev.ID) {
					continue
				}
				delete(s.sent, ev.ID) // a post is deleted once
			}
			return ev
		}
	}
}

// Sent records that post id went to the client (a resumed post, or one
// Next returned).
func (s *Stream) Sent(id int64) {
	if _, ok := s.sent[id]; ok {
		return
	}
	s.sent[id] = struct{}{}
	s.order = append(s.order, id)
	if len(s.order) > sentMemory {
		delete(s.sent, s.order[0])
		s.order = s.order[1:]
	}
}

// Resumed tells the stream that its client has every post up to last (its
// Last-Event-ID): a late event of an older post is not sent again.
func (s *Stream) Resumed(last int64) { s.floor = last }

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
