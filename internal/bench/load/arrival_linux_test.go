package load

import (
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestArrivalIsTheKernels: bytes that wait in the socket before the
// reader gets to them are timed when they arrived, not when read: a
// stream reader kept off the CPUs records an event's real delivery.
func TestArrivalIsTheKernels(t *testing.T) {
	defer awaitKernelStamps(t).Close()
	// The kernel leaves an odd segment unstamped even then (about 1 in
	// 20 here, on loopback); the bench times those when read, later than
	// they arrived, so it errs towards slower. The test tries until one
	// is stamped.
	for try := 0; try < 20; try++ {
		if lateRead(t) {
			return
		}
	}
	t.Fatal("20 events in a row carried no kernel timestamp")
}

// lateRead sends one event over loopback and reads it well after the
// kernel queued it. It fails t if a stamped arrival is not when the bytes
// arrived, and returns whether the kernel stamped them.
func lateRead(t *testing.T) bool {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// The writer reports the moments just before and after its write,
	// so that a writer kept off the CPU (a loaded machine) widens the
	// window the arrival must fall in rather than failing the test.
	type window struct{ before, after int64 }
	sent := make(chan window, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// Answer only once asked, as a server does: the client turns
		// the timestamps on after it connects, and bytes that arrive
		// before that carry none.
		if _, err := c.Read(make([]byte, 1)); err != nil {
			return
		}
		before := time.Now().UnixNano()
		_, _ = c.Write([]byte("event\n"))
		sent <- window{before, time.Now().UnixNano()}
		_, _ = io.Copy(io.Discard, c) // until the client closes
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn := withArrivals(raw)
	defer conn.Close()
	if _, ok := conn.(*arrivalConn); !ok {
		t.Fatalf("withArrivals on Linux TCP gave a %T; want an *arrivalConn", conn)
	}
	if _, err := conn.Write([]byte("?")); err != nil {
		t.Fatal(err)
	}
	w := <-sent
	// The kernel may take its time to deliver the bytes on a loaded
	// machine (the loopback's receive runs as a deferred softirq), so the
	// arrival is bounded by when the bytes are seen queued on the socket,
	// not by the write's end.
	queued := awaitQueued(t, conn.(*arrivalConn))
	const late = 300 * time.Millisecond
	time.Sleep(late) // the reader is late, by at least this after the bytes arrived
	buf := make([]byte, 16)
	n, err := conn.Read(buf)
	if err != nil || string(buf[:n]) != "event\n" {
		t.Fatalf("Read = %q, %v; want the event", buf[:n], err)
	}
	read := time.Now().UnixNano()
	got := arrivedAt(conn)
	stamped := conn.(*arrivalConn).stamped
	if !stamped {
		if got < queued+int64(late) {
			t.Fatalf("unstamped bytes timed %v after they were seen queued; want their read, %v or more after", time.Duration(got-queued), late)
		}
		return false
	}
	// A millisecond either side: the kernel's clock and Go's are read at
	// different moments of the same CLOCK_REALTIME.
	const slack = int64(time.Millisecond)
	if got < w.before-slack || got > queued+slack {
		t.Fatalf("arrival %v after the write began, seen queued %v after it began, read %v after it began; want the arrival between the write and the bytes seen queued",
			time.Duration(got-w.before), time.Duration(queued-w.before), time.Duration(read-w.before))
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(buf); err == nil {
		t.Fatal("Read after Close succeeded; want an error")
	}
	return true
}

// awaitQueued returns the moment the kernel is first seen holding unread
// bytes on c (SIOCINQ), polling every 100µs for up to 10 s.
func awaitQueued(t *testing.T, c *arrivalConn) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		var ierr error
		if err := c.raw.Control(func(fd uintptr) {
			n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		}); err != nil || ierr != nil {
			t.Fatalf("SIOCINQ: %v, %v", err, ierr)
		}
		if n > 0 {
			return time.Now().UnixNano()
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatal("the event was not queued on the socket within 10 s")
	return 0
}

// awaitKernelStamps opens a connection that asks for receive timestamps
// and returns it once the kernel gives them: it turns them on from a work
// queue after the first socket asks, and the connection held open keeps
// them on.
func awaitKernelStamps(t *testing.T) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c) // echo
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn, ok := withArrivals(raw).(*arrivalConn)
	if !ok {
		raw.Close()
		t.Fatal("withArrivals on Linux TCP did not time arrivals")
	}
	buf := make([]byte, 1)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, err := conn.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, buf); err != nil {
			t.Fatal(err)
		}
		if conn.stamped {
			return conn
		}
		time.Sleep(time.Millisecond)
	}
	conn.Close()
	t.Fatal("the kernel gave no receive timestamps within 10 s")
	return nil
}
