//go:build !linux

package load

import "net"

// withArrivals returns conn: only Linux gives the kernel's receive times
// here (arrival_linux.go), and elsewhere a read is timed when it returns.
func withArrivals(conn net.Conn) net.Conn { return conn }
