package load

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// arrivalConn is a TCP connection whose reads note when the kernel
// received the bytes they return (SO_TIMESTAMPNS), so that a stream
// reader that the scheduler let wait (it runs at the lowest priority, see
// readersPriority) still records each event's true arrival, as a client
// on another machine would see it.
type arrivalConn struct {
	net.Conn
	raw  syscall.RawConn
	oob  []byte
	last int64 // Unix ns: the kernel's receive time of the newest bytes read
	// stamped is whether the kernel timed the newest bytes read. It does
	// not for a moment after the first socket asks (Linux turns its
	// receive timestamps on from a work queue); those are timed when read.
	stamped bool
}

// withArrivals returns conn reading with arrival times, or conn itself
// (and its reads are timed when they return) where the kernel will not
// give them.
func withArrivals(conn net.Conn) net.Conn {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return conn
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return conn
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return conn
	}
	return &arrivalConn{Conn: conn, raw: raw, oob: make([]byte, unix.CmsgSpace(16))}
}

func (c *arrivalConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		var oobn int
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, c.oob, 0)
		if errors.Is(rerr, unix.EAGAIN) {
			return false // wait for the poller
		}
		if rerr == nil && n > 0 {
			c.last, c.stamped = arrival(c.oob[:oobn])
		}
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// arrivedAt returns the receive time of the newest bytes read.
func (c *arrivalConn) arrivedAt() int64 { return c.last }

// arrival returns the SCM_TIMESTAMPNS time in oob and true, or now and
// false if it has none.
func arrival(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
				nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
				return sec*int64(time.Second) + nsec, true
			}
		}
	}
	return time.Now().UnixNano(), false
}
