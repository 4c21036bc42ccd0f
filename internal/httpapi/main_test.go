package httpapi

import (
	"os"
	"testing"

	"github.com/feedd/feedd/internal/feed/feedtest"
)

// TestMain prints one line at the end of the run naming what a skipped
// test lacked (the OpenAPI lint without redocly), so that a skip is not
// hidden behind go test's "ok".
func TestMain(m *testing.M) { os.Exit(feedtest.Main(m)) }
