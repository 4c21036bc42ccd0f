package stream

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Defaults of Config.
const (
	DefaultMaxPerUser = 5
	DefaultMax        = 20_000
	DefaultHeartbeat  = 15 * time.Second
	// DefaultWriteRate is how many streams a second a process hands a
	// post to, at most (see deliverWave): 10,000 in 390 ms.
	DefaultWriteRate = 25_600
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
	// MaxPerUser is how many streams one user may have open, in all the
	// processes sharing Slots (in this one without); beyond it Open fails
	// with ERATELIMIT.
	MaxPerUser int
	// Slots is the cache where the processes count each user's streams
	// (slots.go); nil: each process counts its own.
	Slots feed.KV
	// Max is how many streams this process keeps open; beyond it Open
	// fails with EUNAVAILABLE.
	Max int
	// Heartbeat is how often an idle stream yields Ping.
	Heartbeat time.Duration
	// Buffer is how many events a stream holds for its client.
	Buffer int
	// WriteRate is how many streams a second a post is handed to, at
	// most, in waves (deliverWave), so that the streams' writes never take
	// the CPUs all at once.
	WriteRate int
	// Busy, when set, reports whether the process has API requests in
	// flight: a post's delivery waits between its waves while it does
	// (yield), for at most yieldBudget in all.
	Busy func() bool
	// Members reads the members of a reader's list, for a list's
	// stream (OpenList); nil: the hub opens home streams only.
	Members Members
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
	if c.WriteRate <= 0 {
		c.WriteRate = DefaultWriteRate
	}
	return c
}

// Followees returns the users reader follows.
type Followees func(ctx context.Context, reader int64) ([]int64, error)

// Members returns the members of reader's list id; ENOTFOUND when reader
// has no such list.
type Members func(ctx context.Context, reader, list int64) ([]int64, error)

// Hub keeps a process's open streams.
type Hub struct {
	cfg       Config
	logger    *slog.Logger
	sub       feed.Subscription
	followees Followees
	proc      string // this process, in the slots it holds (slots.go)
	aliveOnce sync.Once

	// subMu serializes changes to the subscription, so that the Add and
	// the Remove of one author's channel (a stream opening as the last
	// one that needed it closes) reach the server in the order the
	// reference counts changed.
	subMu sync.Mutex

	mu      sync.Mutex
	closed  bool
	perUser map[int64]int
	streams map[*Stream]struct{}
	// byAuthor lists the streams listening to each author's channel. A
	// slice, not a set: most authors have one or two of a process's
	// streams, and an idle stream of a reader following 10 to 50 authors
	// held about 9 KB in per-author sets and its own set of authors.
	byAuthor map[int64][]*Stream

	// A post is announced twice, by the relay and by the dispatcher (so
	// that a relay that dies in between loses nothing). The second time
	// it goes only to the streams that joined its author's channel since
	// the first: joins counts the joins, and seen keeps for each post
	// delivered recently the count at its first delivery (seenOrder, the
	// oldest first, bounds it). Every stream dropped the repeat anyway;
	// waking 10,000 of them for nothing cost as much CPU as the post.
	joins     uint64
	seen      map[int64]uint64
	seenOrder []int64
}

// seenMax is how many recent posts the hub remembers delivering: the
// second announcement of a post comes within moments of the first.
const seenMax = 4096

// New returns a hub listening through n; Run delivers what it hears.
func New(logger *slog.Logger, cfg Config, n feed.Notifier, followees Followees) *Hub {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Hub{
		cfg: cfg.withDefaults(), logger: logger.With("component", "stream"),
		sub: n.Subscribe(), followees: followees, proc: newProcID(),
		perUser: map[int64]int{}, streams: map[*Stream]struct{}{}, byAuthor: map[int64][]*Stream{},
		seen: map[int64]uint64{},
	}
}

// Heartbeat is the configured ping interval.
func (h *Hub) Heartbeat() time.Duration { return h.cfg.Heartbeat }

// Open returns a stream of reader's feed: its followees' and its own
// posts from now on. It fails with EUNAVAILABLE when the process is full
// or shutting down, ERATELIMIT when reader has MaxPerUser streams open.
func (h *Hub) Open(ctx context.Context, reader int64) (*Stream, error) {
	return h.open(ctx, reader, 0)
}

// OpenList returns a stream of the feed of reader's list id: its members'
// posts from now on (the reader's own only if a member). It fails as Open
// does, and with ENOTFOUND when reader has no such list. A list's stream
// counts against the same bounds as a home stream.
func (h *Hub) OpenList(ctx context.Context, reader, list int64) (*Stream, error) {
	if h.cfg.Members == nil {
		return nil, feed.Errorf(feed.EUNAVAILABLE, "this process streams no list")
	}
	if list == 0 {
		return nil, feed.Errorf(feed.ENOTFOUND, "no such list")
	}
	return h.open(ctx, reader, list)
}

func (h *Hub) open(ctx context.Context, reader, list int64) (*Stream, error) {
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
		hub: h, reader: reader, list: list, own: list == 0,
		events:  make(chan *Event, h.cfg.Buffer),
		refresh: make(chan struct{}, 1),
		gone:    make(chan struct{}),
		sent:    map[int64]bool{},
		ticker:  time.NewTicker(h.cfg.Heartbeat),
	}
	h.streams[s] = struct{}{}
	h.perUser[reader]++
	h.mu.Unlock()
	if err := h.claimSlot(ctx, s); err != nil {
		s.Close()
		return nil, err
	}
	if err := h.attach(ctx, s); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// attach reads whom s's reader follows (or the members of its list) and
// listens to exactly those authors' channels and the reader's own for s.
// A list's stream listens to its reader's channel whether or not the
// reader is a member: the reader's changes (of the list's members, of
// its tokens) are announced there; its posts are taken only if a member
// (Stream.own).
func (h *Hub) attach(ctx context.Context, s *Stream) error {
	var ids []int64
	var err error
	if s.list == 0 {
		ids, err = h.followees(ctx, s.reader)
	} else {
		ids, err = h.cfg.Members(ctx, s.reader, s.list)
	}
	if err != nil {
		return err
	}
	if s.list != 0 {
		own := slices.Contains(ids, s.reader)
		h.mu.Lock()
		s.own = own
		h.mu.Unlock()
	}
	authors := append(slices.Clip(ids), s.reader)
	slices.Sort(authors)
	return h.listen(ctx, s, slices.Clip(slices.Compact(authors)))
}

// listen makes authors (ascending, without repeats) s's set, adding and
// removing channels of the subscription as their lists of streams fill
// and empty.
func (h *Hub) listen(ctx context.Context, s *Stream, authors []int64) error {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	var add, remove []int64
	h.mu.Lock()
	old := s.authors
	i, j := 0, 0
	for i < len(old) || j < len(authors) {
		switch {
		case j == len(authors) || (i < len(old) && old[i] < authors[j]):
			a := old[i] // s no longer listens to a
			i++
			if h.drop(a, s) {
				remove = append(remove, a)
			}
		case i == len(old) || authors[j] < old[i]:
			a := authors[j] // s listens to a from now on
			j++
			if len(h.byAuthor[a]) == 0 {
				add = append(add, a)
			}
			h.byAuthor[a] = append(h.byAuthor[a], s)
			h.joins++
			s.joined = h.joins
		default: // listened to before and after
			i++
			j++
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
			}
			s.authors = slices.DeleteFunc(s.authors, func(a int64) bool {
				_, found := slices.BinarySearch(add, a)
				return found
			})
			h.mu.Unlock()
			h.logger.Warn("stream: subscribe", "authors", len(add), "err", err)
			return feed.Errorf(feed.EUNAVAILABLE, "the live stream cannot listen for posts now; retry shortly")
		}
	}
	return nil
}

// drop takes s off author a's list, and reports whether the list is now
// empty (and gone). h.mu is held.
func (h *Hub) drop(a int64, s *Stream) bool {
	list := h.byAuthor[a]
	k := slices.Index(list, s)
	if k < 0 {
		return false
	}
	last := len(list) - 1
	list[k], list[last] = list[last], nil
	if last == 0 {
		delete(h.byAuthor, a)
		return true
	}
	h.byAuthor[a] = list[:last]
	return false
}

// release forgets s: its channels, its slot, its user's count.
func (h *Hub) release(s *Stream) {
	_ = h.listen(context.Background(), s, nil)
	h.releaseSlot(s)
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
	h.keepAlive(ctx)
	alive := time.NewTicker(h.cfg.Heartbeat)
	defer alive.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-alive.C:
			h.keepAlive(ctx)
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
	takers := h.byAuthor[n.Author]
	if kind == msgFollows {
		for _, s := range takers {
			if s.reader != n.Author {
				continue
			}
			s.forgetHidden()
			select {
			case s.refresh <- struct{}{}:
			default: // a refresh is pending already
			}
		}
		h.mu.Unlock()
		return
	}
	if kind == msgPost {
		takers = h.firstTime(id, takers)
	} else {
		// The list is copied: the streams may come and go while it is
		// handed out, outside the lock.
		takers = slices.Clone(takers)
	}
	// A list's stream hears its reader's channel for the reader's
	// changes, but takes the reader's posts only if a member.
	takers = slices.DeleteFunc(takers, func(s *Stream) bool { return s.reader == n.Author && !s.own })
	h.mu.Unlock()
	if len(takers) == 0 {
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
		ev.Shared = newShared(takers)
	}
	// One event for all the takers, a pointer in each one's buffer: a
	// buffer slot is 8 bytes, held by every idle stream. Run delivers
	// one message at a time, so each stream gets its events in order.
	shared := &ev
	budget := yieldBudget
	pace := wavePace(len(takers), h.cfg.WriteRate)
	start := time.Now()
	for i, s := range takers {
		if i > 0 && i%deliverWave == 0 {
			budget = h.yield(budget)
			// Wave k starts at start + k×pace, plus the time yielded: a
			// sleep that overshoots (a timer fires late on a busy
			// machine) is made up by the next waves, so the pace, not the
			// timer's slack, sets how long a post takes.
			due := start.Add(time.Duration(i/deliverWave)*pace + yieldBudget - budget)
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		select {
		case s.events <- shared:
		default:
			s.end(Dropped)
		}
	}
}

// firstTime returns a copy of the takers of post id that it has not been
// delivered to yet: all of them the first time, then those that joined
// since. h.mu is held.
func (h *Hub) firstTime(id int64, takers []*Stream) []*Stream {
	at, again := h.seen[id]
	if !again {
		if len(h.seenOrder) == seenMax {
			delete(h.seen, h.seenOrder[0])
			h.seenOrder = slices.Delete(h.seenOrder, 0, 1)
		}
		h.seen[id] = h.joins
		h.seenOrder = append(h.seenOrder, id)
		return slices.Clone(takers)
	}
	var out []*Stream
	for _, s := range takers {
		if s.joined > at {
			out = append(out, s)
		}
	}
	return out
}

// deliverWave is how many streams an event wakes at once. Each stream
// woken becomes runnable, and writes to its client soon after: a
// celebrity's post woke 10,000 streams at once, whose writes (and their
// clients' reads, on a small machine) took every CPU for a few hundred
// milliseconds, and a request that came meanwhile (a publish) waited for
// them. Paced at Config.WriteRate, a post reaches 10,000 streams in about
// 390 ms (the target is a second) and leaves the CPUs room for the
// requests between the waves. Small waves, often: a request that arrives
// during a wave waits behind its 16 writes (about 0.2 ms). A post with no
// more takers than a wave is not paced at all.
//
// Measured on the bench's 1M graph with 10,000 streams (bench run
// --scenarios stream), the publish p99 with the streams open against
// none, push / pull / hybrid, one run each: 64 streams every 2.5 ms,
// 1.25 / 1.13 / 1.44×; 16 every 625 µs (this), 1.16 / 1.51 / 1.37×; each
// post spread over 500 ms, whatever its takers, 1.23 / 1.10 / 1.31× and
// 1.27 / 1.12 / 1.64×, with small audiences' deliveries twice as slow.
// The run-to-run noise is larger than any of these differences.
const deliverWave = 16

// wavePace is the time from one wave of a post's n takers to the next
// for rate streams a second (0: one wave, not paced).
func wavePace(n, rate int) time.Duration {
	if n <= deliverWave || rate <= 0 {
		return 0
	}
	return time.Duration(deliverWave) * time.Second / time.Duration(rate)
}

// yieldBudget is how long one event's delivery may wait, in all, for the
// process's API requests to finish, and yieldStep how often it looks. A
// request answers in milliseconds and a stream's event may take a
// second: between two waves, the streams let the requests in flight go
// first, so that the writes a wave sets off (and, on a small machine,
// their clients' reads) do not share the CPUs with them. The budget
// bounds what a busy process adds to a delivery.
const (
	yieldBudget = 200 * time.Millisecond
	yieldStep   = 250 * time.Microsecond
)

// yield waits while cfg.Busy reports requests in flight, for at most
// budget, and returns what is left of it.
func (h *Hub) yield(budget time.Duration) time.Duration {
	if h.cfg.Busy == nil {
		return budget
	}
	for budget > 0 && h.cfg.Busy() {
		start := time.Now()
		time.Sleep(yieldStep)
		budget -= time.Since(start)
	}
	return budget
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

// Drain waits until every stream has closed (after Shutdown), or ctx is
// done. The HTTP server's Shutdown waits for the requests it serves, but
// a stream whose connection was taken from it (httpapi's detach) is
// served on goroutines of its own.
func (h *Hub) Drain(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for h.Len() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stream: %d streams still open: %w", h.Len(), ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Logger is where the hub and the streams log.
func (h *Hub) Logger() *slog.Logger { return h.logger }

// Close stops listening. Call it after Shutdown, once the streams are gone.
func (h *Hub) Close() error { return h.sub.Close() }

// Len reports how many streams are open.
func (h *Hub) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams)
}
