package httpapi

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// DefaultWriteTimeout is the WriteTimeout feedd starts from: each write of
// an answer to its client must end within it. Ample for a page of posts
// (at most a few MB) on a slow mobile link, short enough that a client
// that never reads holds its connection, its goroutine and its answer's
// memory for little time.
const DefaultWriteTimeout = 10 * time.Second

// errSlotLost is what a streaming route's writes get after a flush gave
// its in-flight slot back and none was free again within the wait: the
// process is overloaded and the rest of the answer is shed.
var errSlotLost = errors.New("httpapi: no in-flight slot free after a flush; the rest of the answer is shed")

// heldWriter keeps a route's answer in memory while the route holds its
// in-flight slot, and writes it to the client only once the slot is given
// back, each write within a deadline. A client that asks for large pages
// and never reads the answers (a tiny receive window) would otherwise hold
// a slot that every other user needs for as long as it likes: the twin of
// a body that trickles in (readBodyFirst). It still holds the user's own
// slot (UserSlots), so what one user can leave unread is bounded.
//
// A route that streams (an export flushes after each page of it) gives
// its slot back for each flush and takes one again before it reads on. A
// route without a class (admin, probes) holds no slot and gets only the
// deadline. The live stream writes its events with its own deadline and
// never comes here.
type heldWriter struct {
	w       http.ResponseWriter
	buf     *bytes.Buffer
	timeout time.Duration
	status  int  // as the handler set it; 0: not yet
	sent    bool // the status and headers went out, at a flush

	// release gives the slot back; nil while none is held. take takes
	// one again after a flush; nil for a route without a slot.
	release func()
	take    func() (release func(), ok bool)
	lost    bool // a flush gave the slot back and none was free after it
}

// serveHeld runs next with its answer held in memory (slot, if not nil,
// being the in-flight slot it holds and take how to take one again), and
// writes the answer out once next has returned and the slot is given back.
func serveHeld(w http.ResponseWriter, r *http.Request, next http.Handler, timeout time.Duration, slot func(), take func() (func(), bool)) {
	hw := &heldWriter{w: w, buf: bodies.Get().(*bytes.Buffer), timeout: timeout, release: slot, take: take}
	hw.buf.Reset()
	defer func() {
		// On a panic too: the slot is given back, the answer dropped
		// (recoverPanics answers 500 when nothing went out yet).
		hw.giveBack()
		if hw.buf.Cap() <= maxPooledBody {
			bodies.Put(hw.buf)
		}
		hw.buf = nil
	}()
	next.ServeHTTP(hw, r)
	hw.finish()
}

func (hw *heldWriter) Header() http.Header { return hw.w.Header() }

func (hw *heldWriter) WriteHeader(status int) {
	switch {
	case hw.sent || status < 200:
		// After a flush, or an informational status: as net/http would.
		hw.w.WriteHeader(status)
	case hw.status == 0:
		hw.hold(status)
	}
}

// hold keeps status to send later, and tells the request log (and
// announcing, which looks there) at once.
func (hw *heldWriter) hold(status int) {
	hw.status = status
	if sw := findStatusWriter(hw.w); sw != nil && !sw.sent {
		sw.status = status
	}
}

func (hw *heldWriter) Write(b []byte) (int, error) {
	if hw.lost {
		return 0, errSlotLost
	}
	if hw.status == 0 {
		hw.hold(http.StatusOK)
	}
	return hw.buf.Write(b)
}

// FlushError sends what the route wrote so far: http.ResponseController
// and the export's flushes come here.
func (hw *heldWriter) FlushError() error {
	if hw.lost {
		return errSlotLost
	}
	if hw.status == 0 {
		hw.hold(http.StatusOK) // a flush sends the headers, as net/http's does
	}
	if err := hw.writeOut(); err != nil {
		return err
	}
	if err := http.NewResponseController(hw.w).Flush(); err != nil {
		return err
	}
	if hw.take == nil {
		return nil
	}
	release, ok := hw.take()
	if !ok {
		hw.lost = true
		return errSlotLost
	}
	hw.release = release
	return nil
}

// Unwrap lets http.ResponseController reach the connection (the body's
// read deadline).
func (hw *heldWriter) Unwrap() http.ResponseWriter { return hw.w }

// finish writes out what the route answered, with its length when it
// never flushed: the whole body is known, and a client is spared chunks.
func (hw *heldWriter) finish() {
	if hw.status == 0 && !hw.sent {
		return // nothing written: net/http answers 200, empty
	}
	if h := hw.w.Header(); !hw.sent && hw.buf.Len() > 0 && h.Get("Content-Length") == "" && h.Get("Transfer-Encoding") == "" {
		h.Set("Content-Length", strconv.Itoa(hw.buf.Len()))
	}
	// A failed write means the client went away or read too slowly;
	// there is no one to tell.
	_ = hw.writeOut()
}

// writeOut gives the slot back, then writes the status (once) and what is
// held, within the write deadline; what net/http buffers of it goes out
// after the handler returns, within the same deadline.
func (hw *heldWriter) writeOut() error {
	hw.giveBack()
	_ = http.NewResponseController(hw.w).SetWriteDeadline(time.Now().Add(hw.timeout))
	if !hw.sent {
		hw.sent = true
		hw.w.WriteHeader(hw.status)
	}
	if hw.buf.Len() == 0 {
		return nil
	}
	_, err := hw.w.Write(hw.buf.Bytes())
	hw.buf.Reset()
	return err
}

func (hw *heldWriter) giveBack() {
	if hw.release != nil {
		release := hw.release
		hw.release = nil
		release()
	}
}
