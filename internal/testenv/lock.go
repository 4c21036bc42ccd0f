package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The clusters whose nodes tests kill, as LockCluster names them.
const (
	// RabbitCluster is the RabbitMQ trio of .ci/rabbitmq-cluster.sh.
	RabbitCluster = "rabbitmq-cluster"
	// RedisFailoverCluster is the Redis Cluster of
	// FEEDD_TEST_REDIS_FAILOVER_CLUSTER_URL (ports 7100-7105).
	RedisFailoverCluster = "redis-failover-cluster"
)

// LockCluster gives the test the servers of cluster (a name: the file
// /tmp/feedd-<name>-tests.lock) to itself until it ends: tests in several
// test binaries (packages run in parallel) that kill nodes of the same
// cluster wait for one another, so that none loses a node to another's
// kill. A test that locks several clusters takes them in the order
// Galera (UseGalera), RabbitCluster, RedisFailoverCluster, so that two such
// tests never wait on each other for good. Cleanups run last first:
// register the nodes' restart after taking the lock, so that it comes
// before the release.
func LockCluster(tb testing.TB, cluster string) { lockFile(tb, cluster, true) }

// lockFile takes the lock of cluster, exclusively or shared, released
// when the test ends.
func lockFile(tb testing.TB, cluster string, exclusive bool) {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "feedd-"+cluster+"-tests.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		tb.Fatalf("lock the %s cluster: %v", cluster, err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		tb.Fatalf("lock the %s cluster: %v", cluster, err)
	}
	tb.Cleanup(func() { f.Close() }) // closing the file releases the lock
}
