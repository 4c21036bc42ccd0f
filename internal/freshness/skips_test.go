package freshness

import (
	"os"
	"testing"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

// TestMain ends the run with one line naming the tests skipped for want
// of a service (feedtest.Missing), which go test shows nowhere without -v.
func TestMain(m *testing.M) { os.Exit(feedtest.Main(m)) }
