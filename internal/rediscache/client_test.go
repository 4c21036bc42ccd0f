package rediscache

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestNewClient(t *testing.T) {
	for _, tc := range []struct {
		url, cluster string
		wantAddrs    []string // nil: a single-server client
		wantAddr     string
		wantUser     string
		wantPass     string
		wantRedirect int
	}{
		{url: "redis://127.0.0.1:6379/3", wantAddr: "127.0.0.1:6379"},
		{
			url:       "redis+cluster://127.0.0.1:7000,127.0.0.1:7001",
			wantAddrs: []string{"127.0.0.1:7000", "127.0.0.1:7001"}, wantRedirect: clusterMaxRedirects,
		},
		{
			url:       "redis+cluster://u:p%2Fw@a:1,b:2/?max_redirects=5&read_timeout=2s",
			wantAddrs: []string{"a:1", "b:2"}, wantUser: "u", wantPass: "p/w", wantRedirect: 5,
		},
		{
			url: "redis://:secret@seed:6379/0", cluster: "a:1, b:2,,c:3",
			wantAddrs: []string{"seed:6379", "a:1", "b:2", "c:3"}, wantPass: "secret", wantRedirect: clusterMaxRedirects,
		},
		{
			cluster:   "a:1,b:2",
			wantAddrs: []string{"a:1", "b:2"}, wantRedirect: clusterMaxRedirects,
		},
	} {
		c, err := NewClient(tc.url, tc.cluster, 0)
		if err != nil {
			t.Errorf("NewClient(%q, %q): %v", tc.url, tc.cluster, err)
			continue
		}
		switch c := c.(type) {
		case *redis.Client:
			if tc.wantAddrs != nil || c.Options().Addr != tc.wantAddr {
				t.Errorf("NewClient(%q, %q) = single server %s; want %v %s", tc.url, tc.cluster, c.Options().Addr, tc.wantAddrs, tc.wantAddr)
			}
			if c.Options().DialerRetries != 1 {
				t.Errorf("NewClient(%q) dialer retries = %d; want 1", tc.url, c.Options().DialerRetries)
			}
		case *redis.ClusterClient:
			o := c.Options()
			if !slices.Equal(o.Addrs, tc.wantAddrs) || o.Username != tc.wantUser || o.Password != tc.wantPass || o.MaxRedirects != tc.wantRedirect {
				t.Errorf("NewClient(%q, %q) = cluster %v user %q pass %q redirects %d; want %v %q %q %d",
					tc.url, tc.cluster, o.Addrs, o.Username, o.Password, o.MaxRedirects, tc.wantAddrs, tc.wantUser, tc.wantPass, tc.wantRedirect)
			}
			if o.DialerRetries != 5 {
				t.Errorf("NewClient(%q) dialer retries = %d; want go-redis's 5 (failover rides on them)", tc.url, o.DialerRetries)
			}
			if o.ClusterStateReloadInterval != time.Second {
				t.Errorf("NewClient(%q) state reload interval = %v; want 1s", tc.url, o.ClusterStateReloadInterval)
			}
		}
		c.Close()
	}
	for _, bad := range []string{"redis+cluster://a:1,b:2/3", "http+cluster://a:1", "redis+cluster://", "redis+cluster://a:1?max_redirects=x"} {
		if c, err := NewClient(bad, "", 0); err == nil {
			c.Close()
			t.Errorf("NewClient(%q) = nil error; want one", bad)
		}
	}
}
