package testenv

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// SSEEvent is one block of a Server-Sent Events stream (the lines up to a
// blank one), parsed: an event, or a comment.
type SSEEvent struct {
	Raw                    string // the block as sent, blank line included
	Event, ID, Data, Retry string
	Comment                string // without its ':' and spaces
}

// SSE is an open event stream, read in the background.
type SSE struct {
	tb     testing.TB
	res    *http.Response
	cancel context.CancelFunc
	events chan SSEEvent
}

// OpenSSE sends GET url with a bearer token (none when empty) and the
// header name/value pairs hdr. On 200 it returns the stream, closed when
// the test ends; otherwise nil and the response, its body closed.
func OpenSSE(tb testing.TB, url, token string, hdr ...string) (*SSE, *http.Response) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		tb.Fatalf("GET %s: %v", url, err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		cancel()
		return nil, res
	}
	s := &SSE{tb: tb, res: res, cancel: cancel, events: make(chan SSEEvent, 1000)}
	tb.Cleanup(s.Close)
	go s.read()
	return s, res
}

// Close ends the stream from the client's side.
func (s *SSE) Close() {
	s.cancel()
	s.res.Body.Close()
}

func (s *SSE) read() {
	defer close(s.events)
	br := bufio.NewReader(s.res.Body)
	var raw strings.Builder
	var ev SSEEvent
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		raw.WriteString(line)
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			ev.Raw = raw.String()
			s.events <- ev
			ev = SSEEvent{}
			raw.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") {
			ev.Comment = strings.TrimSpace(line[1:])
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			ev.Event = value
		case "id":
			ev.ID = value
		case "data":
			if ev.Data != "" {
				ev.Data += "\n"
			}
			ev.Data += value
		case "retry":
			ev.Retry = value
		}
	}
}

// Next returns the next block within d; it fails the test when none
// comes, or the stream ends.
func (s *SSE) Next(d time.Duration) SSEEvent {
	s.tb.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.tb.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(d):
		s.tb.Fatalf("no event within %s", d)
	}
	return SSEEvent{}
}

// Ended reports whether the stream ends within d with no further block.
func (s *SSE) Ended(d time.Duration) bool {
	select {
	case _, ok := <-s.events:
		return !ok
	case <-time.After(d):
		return false
	}
}
