package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"time"
)

// EventType is the kind of a live stream event.
type EventType string

// The live stream's events.
const (
	// EventPost is a new post of the home feed, Event.Post as a feed page
	// shows it.
	EventPost EventType = "post"
	// EventUpdate is an edit of a post the stream sent, Event.Post the
	// post as edited.
	EventUpdate EventType = "update"
	// EventDelete is the deletion of post Event.ID, which the stream sent.
	EventDelete EventType = "delete"
	// EventReset says more posts were missed while disconnected than the
	// server replays: reload the first page of the feed. Event.ID is the
	// newest post's, from which the stream goes on.
	EventReset EventType = "reset"
)

// Event is one event of the live stream.
type Event struct {
	Type EventType
	// ID is the post's id (for a reset, the newest post's).
	ID ID
	// Post is the post of EventPost and EventUpdate; nil otherwise.
	Post *Post
	// Data is the event's data as sent.
	Data json.RawMessage
}

// StreamOptions tunes Stream.
type StreamOptions struct {
	// List streams the feed of the token's user's list with this id
	// (?list=): its members' posts; 0: the home feed.
	List ID
	// LastEventID resumes after this post: the server first sends the
	// posts missed since (or EventReset when too many were). 0: only posts
	// from now on.
	LastEventID ID
	// MaxFailures is how many connection attempts in a row may fail
	// (refused, 429, 503, cut off) before the iterator yields the last
	// error and ends; 0: retry until ctx ends.
	MaxFailures int
	// IdleTimeout reconnects a stream that sent nothing, not even its
	// heartbeat, for so long (0: a minute; the server pings every 15 s by
	// default).
	IdleTimeout time.Duration
	// OnReconnect, when set, is told of each reconnection: why, and after
	// how long a wait.
	OnReconnect func(err error, wait time.Duration)
}

// errStreamEnded is a stream the server ended (a restart, a slow reader):
// the client reconnects.
var errStreamEnded = errors.New("client: the live stream ended")

// Stream iterates over the token's user's live home feed (or a list's,
// StreamOptions.List), GET /v1/me/feed/stream. It reconnects by itself when the connection ends or
// fails, with Last-Event-ID set to the last post it passed on, so no post
// is missed; an EventReset means the caller should reload the feed's first
// page. It ends when ctx ends, when the loop body breaks, or after an
// error it cannot recover from (a 401 or 404, or more than MaxFailures
// failures in a row), which it yields first.
func (c *Client) Stream(ctx context.Context, opts StreamOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		st := &streamState{c: c, opts: opts, last: opts.LastEventID, hasLast: opts.LastEventID != 0}
		if st.opts.IdleTimeout <= 0 {
			st.opts.IdleTimeout = time.Minute
		}
		hc := *c.http
		hc.Timeout = 0 // a stream lasts as long as it is read
		st.http = &hc
		failures := 0
		for {
			stopped, opened, err := st.connect(ctx, yield)
			if stopped || ctx.Err() != nil {
				return
			}
			if opened {
				failures = 0
			}
			failures++
			if permanent(err) || (opts.MaxFailures > 0 && failures > opts.MaxFailures) {
				yield(Event{}, err)
				return
			}
			wait := st.retry
			var e *Error
			if errors.As(err, &e) && e.RetryAfter > 0 {
				wait = e.RetryAfter
			}
			if wait <= 0 || failures > 1 {
				wait = max(wait, backoff(c.retry, failures))
			}
			if opts.OnReconnect != nil {
				opts.OnReconnect(err, wait)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// permanent reports whether a failed connection is no use retrying: bad
// credentials, a route the server does not have, a request it refuses.
func permanent(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests && e.Status != http.StatusRequestTimeout
}

// streamState is what a stream keeps across its connections.
type streamState struct {
	c       *Client
	http    *http.Client
	opts    StreamOptions
	last    ID   // the last event id received
	hasLast bool // whether one was
	retry   time.Duration
}

// connect opens one connection and passes its events on until it ends.
// stopped reports that yield asked to stop; opened that the server
// accepted the stream.
func (st *streamState) connect(ctx context.Context, yield func(Event, error) bool) (stopped, opened bool, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	u := st.c.base + "/v1/me/feed/stream"
	if st.opts.List != 0 {
		u += "?list=" + st.opts.List.String()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, false, fmt.Errorf("client: GET /v1/me/feed/stream: %w", err)
	}
	st.c.header(req.Header)
	req.Header.Set("Accept", "text/event-stream")
	if st.hasLast {
		req.Header.Set("Last-Event-ID", st.last.String())
	}
	// A connection that goes silent (a dead peer, a proxy that swallowed
	// the close), before its answer or after, is cut, and the loop
	// reconnects.
	idle := time.AfterFunc(st.opts.IdleTimeout, func() {
		cancel(fmt.Errorf("client: the live stream sent nothing for %v", st.opts.IdleTimeout))
	})
	defer idle.Stop()
	res, err := st.http.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil {
			err = cause
		}
		return false, false, fmt.Errorf("client: GET /v1/me/feed/stream: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		var body bytes.Buffer
		_, _ = body.ReadFrom(io.LimitReader(res.Body, 64<<10))
		return false, false, parseError(http.MethodGet, "/v1/me/feed/stream", res, body.Bytes())
	}
	br := bufio.NewReaderSize(res.Body, 16<<10)
	var (
		typ, data []byte
		id        []byte
		hasID     bool
	)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
				return false, true, cause
			}
			return false, true, errStreamEnded
		}
		idle.Reset(st.opts.IdleTimeout)
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 { // the end of an event
			if hasID {
				if v, err := strconv.ParseInt(string(id), 10, 64); err == nil {
					st.last, st.hasLast = ID(v), true
				}
			}
			if len(data) > 0 || len(typ) > 0 {
				ev, err := parseEvent(typ, data, st.last)
				if err != nil {
					return false, true, err
				}
				if !yield(ev, nil) {
					return true, true, nil
				}
			}
			typ, data, id, hasID = typ[:0], data[:0], id[:0], false
			continue
		}
		if line[0] == ':' { // a comment: the heartbeat
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "event":
			typ = append(typ[:0], value...)
		case "data":
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, value...)
		case "id":
			id, hasID = append(id[:0], value...), true
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
				st.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// parseEvent decodes an event's data; last is the stream's last event id,
// which a post's event carries.
func parseEvent(typ, data []byte, last ID) (Event, error) {
	ev := Event{Type: EventType(typ), ID: last, Data: json.RawMessage(bytes.Clone(data))}
	if len(typ) == 0 {
		ev.Type = "message"
	}
	switch ev.Type {
	case EventPost, EventUpdate:
		var p Post
		if err := json.Unmarshal(data, &p); err != nil {
			return Event{}, fmt.Errorf("client: live stream: %s event: %w", ev.Type, err)
		}
		ev.Post, ev.ID = &p, p.ID
	case EventDelete:
		var d struct {
			ID ID `json:"id"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			return Event{}, fmt.Errorf("client: live stream: delete event: %w", err)
		}
		ev.ID = d.ID
	}
	return ev, nil
}
