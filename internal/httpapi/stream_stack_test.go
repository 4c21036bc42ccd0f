//go:build !race

package httpapi

import "testing"

// TestStreamIdleStackHalved checks what an idle stream's goroutines keep
// of stack. A stream is detached from net/http (stream.Handler): its
// writer goroutine's stack grows while it opens and writes, and the
// collector halves it again once it waits in Stream.Next using under a
// quarter of it; its reader goroutine keeps the 2 KiB it starts with.
// Served in its request's goroutine instead (detach failed), a stream
// keeps 8 KiB there at best plus net/http's 2 KiB reader; a frame that
// grew on the idle path doubles the writer's. The race detector's frames
// are larger, so it is built without it.
func TestStreamIdleStackHalved(t *testing.T) {
	const n = 500
	_, stack := idleStreamBytes(t, n)
	if per := stack / n; per > 8<<10 {
		t.Fatalf("idle streams hold %d bytes of stack each; want at most 8 KiB (is the stream still detached, and the idle path's frames small?)", per)
	}
}
