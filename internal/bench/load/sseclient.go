package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// streamClient opens live streams and reads them, as light as it can be:
// ten thousand connections share the machine with the server they
// measure. Each is one goroutine reading through two small buffers (the
// response's chunked framing, then the event lines); only an event's
// "event:" and "id:" lines are looked at, never its JSON. It runs in the
// stream readers' child (RunStreamReaders), not in bench: when a post
// reaches ten thousand streams, as many reader goroutines wake at once,
// and in bench's process they would queue the publishers' goroutines
// behind them and inflate the publish latency bench times.
type streamClient struct {
	host   string
	events atomic.Int64 // post events read by every stream

	mu    sync.Mutex
	conns []*sseConn
	wg    sync.WaitGroup
}

// sseConn is one open stream. events is written by its reader goroutine
// only, and read once that goroutine has ended (closeAll waits for it).
type sseConn struct {
	conn   net.Conn
	events []sseEvent
}

type sseEvent struct {
	id int64
	// at is the event's arrival on the machine, wall clock, Unix ns: it
	// compares with bench's publish answers (see readersRequest).
	at int64
}

// open connects, asks for the stream as token's user and waits for the
// server's first comment (the hub listens from then on), then reads the
// stream on a goroutine of its own until closeAll.
func (c *streamClient) open(ctx context.Context, token string) (*sseConn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", c.host)
	if err != nil {
		return nil, err
	}
	conn = withArrivals(conn)
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := "GET /v1/me/feed/stream HTTP/1.1\r\nHost: " + c.host + "\r\nAuthorization: Bearer " + token + "\r\nAccept: text/event-stream\r\n\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 1024)
	res, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("GET /v1/me/feed/stream: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		b := make([]byte, 300)
		k, _ := res.Body.Read(b)
		conn.Close()
		return nil, fmt.Errorf("GET /v1/me/feed/stream: status %d: %s", res.StatusCode, strings.TrimSpace(string(b[:k])))
	}
	lines := bufio.NewReaderSize(res.Body, 2048)
	if line, err := lines.ReadSlice('\n'); err != nil || !bytes.HasPrefix(line, []byte(":")) {
		conn.Close()
		return nil, fmt.Errorf("GET /v1/me/feed/stream: no opening comment (%q, %v)", line, err)
	}
	_ = conn.SetDeadline(time.Time{})
	s := &sseConn{conn: conn}
	c.mu.Lock()
	c.conns = append(c.conns, s)
	c.mu.Unlock()
	c.wg.Go(func() { c.read(s, lines) })
	return s, nil
}

// read records every `event: post` with its id and arrival, until the
// connection ends.
func (c *streamClient) read(s *sseConn, lines *bufio.Reader) {
	var post bool
	var id int64
	long := false // within a line longer than the buffer (a post's data)
	for {
		line, err := lines.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = true
			continue
		}
		if err != nil {
			return
		}
		if long {
			long = false
			continue
		}
		switch {
		case len(bytes.TrimSpace(line)) == 0:
			if post && id > 0 {
				s.events = append(s.events, sseEvent{id: id, at: arrivedAt(s.conn)})
				c.events.Add(1)
			}
			post, id = false, 0
		case bytes.HasPrefix(line, []byte("event: ")):
			post = bytes.Equal(bytes.TrimSpace(line[len("event: "):]), []byte("post"))
		case bytes.HasPrefix(line, []byte("id: ")):
			id, _ = strconv.ParseInt(string(bytes.TrimSpace(line[len("id: "):])), 10, 64)
		}
	}
}

// arrivedAt is when the newest bytes read from conn reached the machine:
// the kernel's time where it gives it (arrival_linux.go), else now.
func arrivedAt(conn net.Conn) int64 {
	if a, ok := conn.(interface{ arrivedAt() int64 }); ok {
		return a.arrivedAt()
	}
	return time.Now().UnixNano()
}

// closeAll closes every stream and waits for their readers to end.
func (c *streamClient) closeAll() {
	c.mu.Lock()
	for _, s := range c.conns {
		_ = s.conn.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// openFileLimit reads the soft limit on open files of process pid from
// /proc (Linux); ok is false elsewhere.
func openFileLimit(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if f[0] == "unlimited" {
					return 1 << 62, true
				}
				v, err := strconv.ParseUint(f[0], 10, 64)
				return v, err == nil
			}
		}
	}
	return 0, false
}
