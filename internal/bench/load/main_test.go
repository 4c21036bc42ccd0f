package load

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

// TestMain runs this test binary as the stream readers' child process
// when TestStreamReaders starts it so (FEEDD_TEST_STREAM_READERS_CHILD),
// and the tests otherwise. The child writes only the readers' protocol on
// its stdout: no test runs, and no PASS line follows it. The tests end
// with one line naming those skipped for want of a service.
func TestMain(m *testing.M) {
	if os.Getenv("FEEDD_TEST_STREAM_READERS_CHILD") == "1" {
		if err := RunStreamReaders(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(feedtest.Main(m))
}
