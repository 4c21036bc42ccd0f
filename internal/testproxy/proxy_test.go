package testproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every line it reads with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return line, err
}

// TestCutAndRestore: bytes flow through; Cut breaks the live connection
// and refuses new ones at once; Restore lets new ones through again.
func TestCutAndRestore(t *testing.T) {
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	live, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if got, err := roundTrip(live, "hello"); err != nil || got != "hello\n" {
		t.Fatalf("through the proxy: got %q, %v; want hello", got, err)
	}

	p.Cut()
	if _, err := roundTrip(live, "after cut"); err == nil {
		t.Fatal("a live connection still works after Cut; want it broken")
	}
	start := time.Now()
	c, err := net.Dial("tcp", p.Addr())
	if err == nil {
		_, err = roundTrip(c, "new while cut")
		c.Close()
	}
	if err == nil {
		t.Fatal("a new connection works while cut; want it refused")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a refused connection took %v to fail; want it at once", d)
	}

	p.Restore()
	c, err = net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "back"); err != nil || got != "back\n" {
		t.Fatalf("after Restore: got %q, %v; want back", got, err)
	}
}
