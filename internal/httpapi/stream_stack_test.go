//go:build !race

package httpapi

import "testing"

// TestStreamIdleStackHalved checks that an idle stream's connection
// goroutine gets its stack halved by the collector: the frames on the
// idle path (net/http's, the middleware's, handleStream's, Stream.Next's)
// must stay under a quarter of 16 KiB, and a few hundred bytes more
// anywhere on that path would double every idle stream's stack (see
// handleStream). The race detector's frames are larger, so it is built
// without it.
func TestStreamIdleStackHalved(t *testing.T) {
	const n = 500
	_, stack := idleStreamBytes(t, n)
	// 8 KiB (the connection goroutine, halved) + 2 KiB (net/http's
	// background reader) a stream; unhalved it is 16 + 2 KiB.
	if per := stack / n; per > 13<<10 {
		t.Fatalf("idle streams hold %d bytes of stack each; want at most 13 KiB (the connection goroutine's stack is no longer halved: a frame on the idle path grew)", per)
	}
}
