package stream

import (
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/apijson"
)

// writeTimeout bounds each write to a stream's client: one that stops
// reading is cut off rather than holding its goroutine.
const writeTimeout = 10 * time.Second

// sseWriter writes events, each at once and within writeTimeout: through
// the ResponseWriter while the handler serves the stream, and once
// detached, straight to the connection as chunks of the response's
// chunked body.
type sseWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	conn net.Conn // once detached
}

func (s *sseWriter) send(b []byte) error {
	if s.conn != nil {
		_ = s.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		var size [20]byte
		head := append(strconv.AppendInt(size[:0], int64(len(b)), 16), "\r\n"...)
		chunk := net.Buffers{head, b, crlf}
		_, err := chunk.WriteTo(s.conn)
		return err
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
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
		_ = s.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
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
