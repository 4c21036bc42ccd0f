package feedtest

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Missing reports that a service a test needs (MariaDB, Redis, a Redis
// Cluster, RabbitMQ) is not there, say why and how to start it. Under
// CI=true, where .ci/run starts every service, that fails the test; on a
// laptop without the services it skips it, loudly.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s; CI=true requires it", msg)
	}
	skipped.add(msg)
	tb.Skipf("!!! SKIPPING %s: %s", tb.Name(), msg)
}

// skipped is what Missing skipped in this test binary, for Main's summary
// line. It is package state because the binary is the one thing the tests
// that skip and the TestMain that reports share.
var skipped skipLog

type skipLog struct {
	mu    sync.Mutex
	n     int
	needs []string // what was missing, each once, in order of first skip
}

func (l *skipLog) add(need string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if !slices.Contains(l.needs, need) {
		l.needs = append(l.needs, need)
	}
}

// summary is the line Main prints: empty when nothing was skipped.
func (l *skipLog) summary(pkg string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return ""
	}
	tests := "tests"
	if l.n == 1 {
		tests = "test"
	}
	return fmt.Sprintf("!!! %s: %d %s skipped, missing: %s\n", pkg, l.n, tests, strings.Join(l.needs, "; "))
}

// Main runs a package's tests (call it from TestMain) and then, when
// Missing skipped any, prints one line that counts them and says what they
// needed. Without -v, go test shows a passing package's output nowhere,
// so a run whose services were missing would read "ok" like a full one:
// the line goes to the terminal the tests run from (/dev/tty) when the
// output is hidden, and to the output otherwise (-v, a failure, -json).
func Main(m *testing.M) int {
	code := m.Run()
	line := skipped.summary(packageName())
	if line == "" {
		return code
	}
	if !testing.Verbose() && code == 0 {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprint(tty, line)
			tty.Close()
			return code
		}
	}
	fmt.Print(line)
	return code
}

// packageName names the package under test by its directory, which is
// where go test runs its binary.
func packageName() string {
	wd, err := os.Getwd()
	if err != nil {
		return "feedd"
	}
	if i := strings.LastIndex(wd, "/internal/"); i >= 0 {
		return wd[i+1:]
	}
	if i := strings.LastIndex(wd, "/cmd/"); i >= 0 {
		return wd[i+1:]
	}
	return wd
}

// RequireServices dials the services at addrs (host:port) and reports the
// first that does not answer as Missing. The defaults are the machine's:
// MariaDB, Redis and RabbitMQ on loopback; a test on PostgreSQL names its
// addresses.
func RequireServices(tb testing.TB, addrs ...string) {
	tb.Helper()
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1:3306", "127.0.0.1:6379", "127.0.0.1:5672"}
	}
	for _, addr := range addrs {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			Missing(tb, "service at %s is not reachable (%v): start the services the tests use (MariaDB, PostgreSQL, Redis, RabbitMQ; docs/testing.md)", addr, err)
		}
		c.Close()
	}
}
