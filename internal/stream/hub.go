package stream

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Defaults of Config.
const (
	DefaultMaxPerUser = 5
	DefaultMax        = 20_000
	DefaultHeartbeat  = 15 * time.Second
	// DefaultBuffer is how many events wait for a stream's client; a
	// client that lets more pile up is dropped (it resumes with
	// Last-Event-ID), so that one slow reader holds no memory hostage and
	// never slows the others. Events wait only while the stream renders
	// or writes the one before (a write is bounded by a timeout), so 32
	// is a burst of 32 posts from the reader's authors within one stalled
	// write. It stays under the 100 posts a resume replays, so a dropped
	// client gets back every post it missed rather than a reset. Each
	// slot is held by every idle stream: 8 bytes, a pointer to the event
	// all its takers share.
	DefaultBuffer = 32
)

// Config bounds a Hub.
type Config struct {
	// MaxPerUser is how many streams one user may have open in this
	// process; beyond it Open fails with ERATELIMIT.
	MaxPerUser int
	// Max is how many streams this process keeps open; beyond it Open
	// fails with EUNAVAILABLE.
	Max int
	// Heartbeat is how often an idle stream yields Ping.
	Heartbeat time.Duration
	// Buffer is how many events a stream holds for its client.
	Buffer int
}

func (c Config) withDefaults() Config {
	if c.MaxPerUser <= 0 {
		c.MaxPerUser = DefaultMaxPerUser
	}
	if c.Max <= 0 {
		c.Max = DefaultMax
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	return c
}

// Followees returns the users reader follows.
type Followees func(ctx context.Context, reader int64) ([]int64, error)

// Hub keeps a process's open streams.
type Hub struct {
	cfg       Config
	logger    *slog.Logger
	sub       feed.Subscription
	followees Followees

	// subMu serializes changes to the subscription, so that the Add and
	// the Remove of one author's channel (a stream opening as the last
	// one that needed it closes) reach the server in the order the
	// reference counts changed.
	subMu sync.Mutex

	mu       sync.Mutex
	closed   bool
	perUser  map[int64]int
	streams  map[*Stream]struct{}
	byAuthor map[int64]map[*Stream]struct{}
}

// New returns a hub listening through n; Run delivers what it hears.
func New(logger *slog.Logger, cfg Config, n feed.Notifier, followees Followees) *Hub {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{
		cfg: cfg.withDefaults(), logger: logger.With("component", "stream"),
		sub: n.Subscribe(), followees: followees,
		perUser: map[int64]int{}, streams: map[*Stream]struct{}{}, byAuthor: map[int64]map[*Stream]struct{}{},
	}
}

// Heartbeat is the configured ping interval.
func (h *Hub) Heartbeat() time.Duration { return h.cfg.Heartbeat }

// Open returns a stream of reader's feed: its followees' and its own
// posts from now on. It fails with EUNAVAILABLE when the process is full
// or shutting down, ERATELIMIT when reader has MaxPerUser streams open.
func (h *Hub) Open(ctx context.Context, reader int64) (*Stream, error) {
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return nil, feed.Errorf(feed.EUNAVAILABLE, "this process is shutting down; reconnect to another")
	case len(h.streams) >= h.cfg.Max:
		h.mu.Unlock()
		return nil, feed.Errorf(feed.EUNAVAILABLE, "this process has as many streams open as it may (%d); retry shortly", h.cfg.Max)
	case h.perUser[reader] >= h.cfg.MaxPerUser:
		h.mu.Unlock()
		return nil, feed.Errorf(feed.ERATELIMIT, "you have %d streams open, the most allowed; close one first", h.cfg.MaxPerUser)
	}
	s := &Stream{
		hub: h, reader: reader,
		events:  make(chan *Event, h.cfg.Buffer),
		refresh: make(chan struct{}, 1),
		gone:    make(chan struct{}),
		sent:    map[int64]bool{},
		ticker:  time.NewTicker(h.cfg.Heartbeat),
	}
	h.streams[s] = struct{}{}
	h.perUser[reader]++
	h.mu.Unlock()
	if err := h.attach(ctx, s); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// attach reads whom s's reader follows and listens to exactly those
// authors' channels and the reader's own for s.
func (h *Hub) attach(ctx context.Context, s *Stream) error {
	ids, err := h.followees(ctx, s.reader)
	if err != nil {
		return err
	}
	authors := make(map[int64]struct{}, len(ids)+1)
	for _, id := range ids {
		authors[id] = struct{}{}
	}
	authors[s.reader] = struct{}{}
	return h.listen(ctx, s, authors)
}

// listen makes authors s's set, adding and removing channels of the
// subscription as their reference counts go from and to zero.
func (h *Hub) listen(ctx context.Context, s *Stream, authors map[int64]struct{}) error {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	var add, remove []int64
	h.mu.Lock()
	for a := range authors {
		if _, ok := s.authors[a]; ok {
			continue
		}
		m := h.byAuthor[a]
		if m == nil {
			m = map[*Stream]struct{}{}
			h.byAuthor[a] = m
			add = append(add, a)
		}
		m[s] = struct{}{}
	}
	for a := range s.authors {
		if _, ok := authors[a]; ok {
			continue
		}
		if m := h.byAuthor[a]; m != nil {
			delete(m, s)
			if len(m) == 0 {
				delete(h.byAuthor, a)
				remove = append(remove, a)
			}
		}
	}
	s.authors = authors
	h.mu.Unlock()
	if len(remove) > 0 {
		if err := h.sub.Remove(context.WithoutCancel(ctx), remove...); err != nil {
			h.logger.Warn("stream: unsubscribe", "authors", len(remove), "err", err)
		}
	}
	if len(add) > 0 {
		if err := h.sub.Add(context.WithoutCancel(ctx), add...); err != nil {
			// Forget what is not listened to, so that the next change
			// (or the next stream) subscribes to it again. No one else
			// can have joined these channels: subMu is held.
			h.mu.Lock()
			for _, a := range add {
				delete(h.byAuthor, a)
				delete(s.authors, a)
			}
			h.mu.Unlock()
			h.logger.Warn("stream: subscribe", "authors", len(add), "err", err)
			return feed.Errorf(feed.EUNAVAILABLE, "the live stream cannot listen for posts now; retry shortly")
		}
	}
	return nil
}

// release forgets s: its channels, its slot, its user's count.
func (h *Hub) release(s *Stream) {
	_ = h.listen(context.Background(), s, nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.streams[s]; !ok {
		return
	}
	delete(h.streams, s)
	if h.perUser[s.reader]--; h.perUser[s.reader] <= 0 {
		delete(h.perUser, s.reader)
	}
}

// Run hands what the subscription hears to the streams until ctx is done
// or the hub is closed.
func (h *Hub) Run(ctx context.Context) {
	c := h.sub.C()
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-c:
			if !ok {
				return
			}
			h.deliver(n)
		}
	}
}

func (h *Hub) deliver(n feed.Notification) {
	kind, id, version, ok := decodeMsg(n.Msg)
	if !ok {
		h.logger.Warn("stream: ignoring a malformed message", "author", n.Author, "msg", string(n.Msg))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	takers := h.byAuthor[n.Author]
	if kind == msgFollows {
		for s := range takers {
			if s.reader != n.Author {
				continue
			}
			s.forgetHidden()
			select {
			case s.refresh <- struct{}{}:
			default: // a refresh is pending already
			}
		}
		return
	}
	ev := Event{Kind: Post, ID: id}
	switch kind {
	case msgDelete:
		ev.Kind = Delete
	case msgUpdate:
		ev.Kind, ev.Version = Update, version
	}
	if ev.Kind != Delete {
		// One rendering for all the takers, handed the list whole
		// before any of them can start it.
		all := make([]*Stream, 0, len(takers))
		for s := range takers {
			all = append(all, s)
		}
		ev.Shared = newShared(all)
	}
	// One event for all the takers, a pointer in each one's buffer: a
	// buffer slot is 8 bytes, held by every idle stream.
	shared := &ev
	for s := range takers {
		select {
		case s.events <- shared:
		default:
			s.end(Dropped)
		}
	}
}

// Shutdown ends every stream with Shutdown and refuses new ones: the HTTP
// server's own shutdown waits for requests in progress, and a stream
// never ends by itself.
func (h *Hub) Shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.streams {
		s.end(Shutdown)
	}
}

// Close stops listening. Call it after Shutdown, once the streams are gone.
func (h *Hub) Close() error { return h.sub.Close() }

// Len reports how many streams are open.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}
