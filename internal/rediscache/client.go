package rediscache

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster retry defaults, used unless the URL sets max_redirects,
// min_retry_backoff or max_retry_backoff. go-redis bounds every retry of
// a Cluster command — MOVED, ASK, TRYAGAIN, CLUSTERDOWN and connection
// errors alike — by MaxRedirects (default 3, well under a second). A
// failed master is replaced after cluster-node-timeout plus an election:
// 3.5 s measured at a node timeout of 2 s. 10 attempts with backoff up to
// 512 ms ride out about 4 s, so most commands in flight during a failover
// succeed; a longer one fails the command, and a fan-out task is then
// redelivered with backoff by the broker (internal/rabbit), about 20 s in
// all. A read gives up on the cache sooner than that would be useful and
// is served from SQL.
//
// The slot map is reloaded at least every second (go-redis's default is
// a minute): a dead master answers no MOVED, and without a reload a
// client keeps dialing it long after its replica took over (seen: 40 s).
// It costs one CLUSTER SLOTS a second per process, and only while
// commands flow.
const (
	clusterMaxRedirects    = 10
	clusterMinRetryBackoff = 50 * time.Millisecond
	clusterMaxRetryBackoff = 512 * time.Millisecond
	clusterReloadInterval  = time.Second
)

// singleDialerRetries is how many times a single-server client's pool
// dials for one attempt of a command. go-redis's default, 5 dials 100 ms
// apart, multiplies with the command's own retries (MaxRetries, 3, which
// retry a failed dial too): a GET to a server that refuses connections
// took 1.7 s, and 0.1 s with one dial per attempt. The Cluster client
// keeps the default: its failover budget (above) was measured with it.
const singleDialerRetries = 1

// NewClient returns a client for rawURL:
//
//   - redis://[user:pass@]host:port[/db][?opts] (or rediss://): one server;
//   - redis+cluster://[user:pass@]host:port,host:port…[?opts] (or
//     rediss+cluster://): a Redis Cluster, reached through any of the
//     listed seed nodes. opts are go-redis's cluster URL options
//     (max_redirects, read_timeout, route_by_latency…).
//
// A non-empty cluster list (FEEDD_REDIS_CLUSTER: host:port,host:port…)
// also makes it a Cluster: its nodes are the seeds, and rawURL, if set,
// gives the credentials and options. A Cluster has only database 0.
//
// minPool, if positive, raises the connection pool (per node of a
// Cluster) to at least that many: a load tool needs more than the
// default of 10 per CPU.
func NewClient(rawURL, cluster string, minPool int) (redis.UniversalClient, error) {
	seeds := splitList(cluster)
	scheme, _, _ := strings.Cut(rawURL, "://")
	if len(seeds) == 0 && !strings.HasSuffix(scheme, "+cluster") {
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("rediscache: %w", err)
		}
		opt.PoolSize = max(opt.PoolSize, minPool)
		opt.DialerRetries = singleDialerRetries
		return redis.NewClient(opt), nil
	}
	opt, err := parseClusterURL(rawURL, seeds)
	if err != nil {
		return nil, fmt.Errorf("rediscache: %w", err)
	}
	opt.PoolSize = max(opt.PoolSize, minPool)
	return redis.NewClusterClient(opt), nil
}

// parseClusterURL turns a redis+cluster:// URL with a comma-separated
// host list, plus extra seed nodes, into go-redis's cluster URL form
// (redis://first?addr=second&addr=third…) and parses that.
func parseClusterURL(rawURL string, seeds []string) (*redis.ClusterOptions, error) {
	if rawURL == "" {
		rawURL = "redis://"
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("cluster URL %q has no scheme", rawURL)
	}
	scheme = strings.TrimSuffix(scheme, "+cluster")
	if scheme != "redis" && scheme != "rediss" {
		return nil, fmt.Errorf("cluster URL scheme %q: want redis+cluster or rediss+cluster", scheme)
	}
	// The host list is everything between the userinfo and the path or
	// query; url.Parse rejects commas in a host, so split it first.
	userinfo, hostsAndRest := "", rest
	if at := strings.LastIndex(rest[:hostEnd(rest)], "@"); at >= 0 {
		userinfo, hostsAndRest = rest[:at+1], rest[at+1:]
	}
	end := hostEnd(hostsAndRest)
	hosts := append(splitList(hostsAndRest[:end]), seeds...)
	tail := hostsAndRest[end:]
	if len(hosts) == 0 {
		return nil, errors.New("a Redis Cluster needs at least one node address")
	}
	path, query, _ := strings.Cut(tail, "?")
	if path != "" && path != "/" && path != "/0" {
		return nil, fmt.Errorf("cluster URL %q names database %s: a Redis Cluster has only database 0", rawURL, strings.TrimPrefix(path, "/"))
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("cluster URL options: %w", err)
	}
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	opt, err := redis.ParseClusterURL(scheme + "://" + userinfo + hosts[0] + "?" + q.Encode())
	if err != nil {
		return nil, err
	}
	if !q.Has("max_redirects") {
		opt.MaxRedirects = clusterMaxRedirects
	}
	if !q.Has("min_retry_backoff") {
		opt.MinRetryBackoff = clusterMinRetryBackoff
	}
	if !q.Has("max_retry_backoff") {
		opt.MaxRetryBackoff = clusterMaxRetryBackoff
	}
	opt.ClusterStateReloadInterval = clusterReloadInterval
	return opt, nil
}

// hostEnd returns where the host part of s (a URL after "://") ends.
func hostEnd(s string) int {
	if i := strings.IndexAny(s, "/?"); i >= 0 {
		return i
	}
	return len(s)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
