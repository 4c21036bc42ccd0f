package feedtest

import (
	"fmt"
	"net"
	"os"
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
	tb.Skipf("!!! SKIPPING %s: %s", tb.Name(), msg)
}

// RequireServices dials the services at addrs (host:port) and reports the
// first that does not answer as Missing. The defaults are the machine's:
// MariaDB, Redis and RabbitMQ on loopback.
func RequireServices(tb testing.TB, addrs ...string) {
	tb.Helper()
	if len(addrs) == 0 {
		addrs = []string{"127.0.0.1:3306", "127.0.0.1:6379", "127.0.0.1:5672"}
	}
	for _, addr := range addrs {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			Missing(tb, "service at %s is not reachable (%v): start MariaDB, Redis and RabbitMQ", addr, err)
		}
		c.Close()
	}
}
