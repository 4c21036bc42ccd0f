package testenv

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// KillRedisMaster SIGKILLs the Redis Cluster master that holds key (a
// node of this machine) and returns its address.
func KillRedisMaster(tb testing.TB, c *redis.ClusterClient, key string) string {
	tb.Helper()
	ctx := context.Background()
	node, err := c.MasterForKey(ctx, key)
	if err != nil {
		tb.Fatalf("the master of %s: %v", key, err)
	}
	addr := node.Options().Addr
	info, err := node.Info(ctx, "server").Result()
	if err != nil {
		tb.Fatalf("INFO server of %s: %v", addr, err)
	}
	pid := 0
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		tb.Fatalf("INFO server of %s has no process_id", addr)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		tb.Fatalf("kill redis master %s (pid %d): %v", addr, pid, err)
	}
	return addr
}

// WaitRedisFailover waits until a surviving node of c reports the cluster
// ok with dead marked as failed (its replica has taken its slots over),
// and returns how long that took.
func WaitRedisFailover(tb testing.TB, c *redis.ClusterClient, dead string) time.Duration {
	tb.Helper()
	start := time.Now()
	Eventually(tb, 30*time.Second, "a replica takes over the dead master's slots", func() bool {
		for _, addr := range c.Options().Addrs {
			if addr == dead {
				continue
			}
			n := redis.NewClient(&redis.Options{Addr: addr})
			info, err1 := n.ClusterInfo(context.Background()).Result()
			nodes, err2 := n.ClusterNodes(context.Background()).Result()
			n.Close()
			if err1 != nil || err2 != nil {
				continue
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			for _, line := range strings.Split(nodes, "\n") {
				f := strings.Fields(line)
				if len(f) > 2 && strings.HasPrefix(f[1], dead+"@") {
					return strings.Contains(f[2], "fail") && !strings.Contains(f[2], "fail?")
				}
			}
		}
		return false
	})
	return time.Since(start)
}
