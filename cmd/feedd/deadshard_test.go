package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/internal/testproxy"
)

// TestShardServerDies: when the server of two of four shards dies, users
// on the other server keep publishing and reading with no error; a feed
// that includes authors of the dead shards is served without the posts
// SQL must give and is marked degraded, never a 5xx; the metrics and the
// ops console name the shards down; and once the server is back, the
// feed is whole and nothing written meanwhile is lost.
func TestShardServerDies(t *testing.T) {
	env := shardedEnv(t, false)
	// Shards 2 and 3 live on the second server: reach it through a proxy
	// the test cuts (the server itself is shared with other tests).
	cfg, err := mysql.ParseDSN(testenv.ShardMySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := testproxy.Start(cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	env["FEEDD_SHARD_DSNS"] = strings.ReplaceAll(env["FEEDD_SHARD_DSNS"], cfg.Addr, proxy.Addr())
	env["FEEDD_HEARTBEAT"] = "200ms"
	in := startRole(t, "all", env, nil)

	// Authors until each shard has one, a reader on a live shard (0 or 1)
	// who reads as it goes, and one who reads only once the server died:
	// its feed is rebuilt from SQL then.
	var reader, late, lateTok, readerTok string
	for i := 0; reader == "" || late == ""; i++ {
		id, tok := in.user(fmt.Sprintf("reader%d", i))
		if n, _ := strconv.ParseInt(id, 10, 64); n&3 >= 2 {
			continue
		}
		if reader == "" {
			reader, readerTok = id, tok
		} else {
			late, lateTok = id, tok
		}
	}
	authors := map[int64]string{}
	var all, live []string
	for i := 0; len(authors) < 4; i++ {
		id, tok := in.user(fmt.Sprintf("author%d", i))
		n, _ := strconv.ParseInt(id, 10, 64)
		if authors[n&3] != "" {
			continue
		}
		authors[n&3] = tok
		in.follow(readerTok, id)
		in.follow(lateTok, id)
		p := in.post(tok, fmt.Sprintf("on shard %d", n&3))
		all = append([]string{p}, all...)
		if n&3 < 2 {
			live = append([]string{p}, live...)
		}
	}
	in.feedEventually(readerTok, 10, all)

	proxy.Cut()
	testenv.Eventually(t, 10*time.Second, "feedd_sql_shard_up of shards 2 and 3 at 0", func() bool {
		return metric(t, in, `feedd_sql_shard_up{shard="2"}`) == 0 && metric(t, in, `feedd_sql_shard_up{shard="3"}`) == 0 &&
			metric(t, in, `feedd_sql_shard_up{shard="0"}`) == 1
	})
	// Publishing on a live shard goes on, and reaches the reader.
	during := in.post(authors[0], "while shards 2 and 3 are down")
	all = append([]string{during}, all...)
	live = append([]string{during}, live...)
	in.feedEventually(readerTok, 10, all) // its inbox and the post cache hold them all
	// The late reader's feed comes from SQL: without the dead shards'
	// posts, marked degraded.
	r := in.do("GET", "/v1/me/feed?limit=10", lateTok, nil)
	if r.status != 200 || r.body["degraded"] != true {
		t.Fatalf("late reader's feed with shards 2 and 3 down: %d %s; want 200, degraded", r.status, r.raw)
	}
	var got []string
	for _, it := range r.items() {
		got = append(got, it["id"].(string))
	}
	if !slices.Equal(got, live) {
		t.Fatalf("late reader's degraded feed = %v; want the live shards' posts %v", got, live)
	}
	testenv.Eventually(t, 10*time.Second, "the console names the shards down", func() bool {
		o := in.must(200, "GET", "/v1/admin/overview", in.admin, nil)
		return strings.Contains(string(o.raw), "SQL shards 2, 3 do not answer")
	})

	proxy.Restore()
	testenv.Eventually(t, 15*time.Second, "the late reader's whole feed, not degraded", func() bool {
		r := in.do("GET", "/v1/me/feed?limit=10", lateTok, nil)
		var got []string
		for _, it := range r.items() {
			got = append(got, it["id"].(string))
		}
		return r.status == 200 && r.body["degraded"] != true && slices.Equal(got, all)
	})
	in.feedEventually(readerTok, 10, all)
}
