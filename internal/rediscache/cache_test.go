package rediscache

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
)

// The tests share a Redis server with other packages' tests: each cache
// gets a random key prefix and deletes its own keys afterwards, and
// nothing here flushes a database.
const defaultRedisURL = "redis://127.0.0.1:6379/1"

// testServer returns a constructor of clients for the Redis that
// FEEDD_TEST_REDIS_URL names. Without one, the test skips loudly on a
// laptop and fails under CI=true, where Redis is part of the contract.
func testServer(tb testing.TB) func() redis.UniversalClient {
	tb.Helper()
	url := cmp.Or(os.Getenv("FEEDD_TEST_REDIS_URL"), defaultRedisURL)
	opts, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("FEEDD_TEST_REDIS_URL: %v", err)
	}
	newClient := func() redis.UniversalClient { return redis.NewClient(opts) }
	requireServer(tb, newClient, fmt.Sprintf("Redis at %s db %d (FEEDD_TEST_REDIS_URL)", opts.Addr, opts.DB))
	return newClient
}

// testCluster is testServer for the Redis Cluster that
// FEEDD_TEST_REDIS_CLUSTER_URL names, in feedd's own form
// (redis+cluster://host:port,host:port…; .ci/redis-cluster.sh starts one
// and prints it). Without the variable the test skips on a laptop; under
// CI=true, which .ci/run runs with a Cluster, it fails.
func testCluster(tb testing.TB) func() redis.UniversalClient {
	tb.Helper()
	url := os.Getenv("FEEDD_TEST_REDIS_CLUSTER_URL")
	if url == "" {
		feedtest.Missing(tb, "FEEDD_TEST_REDIS_CLUSTER_URL is not set: run .ci/redis-cluster.sh, which starts a Redis Cluster, and export what it prints")
	}
	if _, err := NewClient(url, "", 0); err != nil {
		tb.Fatalf("FEEDD_TEST_REDIS_CLUSTER_URL: %v", err)
	}
	newClient := func() redis.UniversalClient {
		c, _ := NewClient(url, "", 0)
		if _, ok := c.(*redis.ClusterClient); !ok {
			tb.Fatalf("FEEDD_TEST_REDIS_CLUSTER_URL=%s is not a cluster URL (redis+cluster://…)", url)
		}
		return c
	}
	requireServer(tb, newClient, fmt.Sprintf("Redis Cluster at %s (FEEDD_TEST_REDIS_CLUSTER_URL)", url))
	return newClient
}

func requireServer(tb testing.TB, newClient func() redis.UniversalClient, what string) {
	tb.Helper()
	client := newClient()
	defer client.Close()
	ctx, cancel := context.WithTimeout(tb.Context(), 3*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		feedtest.Missing(tb, "%s is unreachable (%v): start Redis or set FEEDD_TEST_REDIS_URL", what, err)
	}
}

// randomPrefix namespaces one test's keys on a shared server.
func randomPrefix() string {
	return "feeddtest:" + rand.Text()[:12] + ":"
}

// deleteKeys removes every key under prefix, one DEL per key so that it
// works on a Cluster, where a SCAN only sees one node.
func deleteKeys(tb testing.TB, client redis.UniversalClient, prefix string) {
	tb.Helper()
	ctx := context.WithoutCancel(tb.Context())
	scan := func(ctx context.Context, node redis.Cmdable) error {
		iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := client.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	if cluster, ok := client.(*redis.ClusterClient); ok {
		err = cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return scan(ctx, node)
		})
	} else {
		err = scan(ctx, client)
	}
	if err != nil {
		tb.Errorf("deleting test keys %s*: %v", prefix, err)
	}
}

// suite runs the feedtest suite on the server newClient reaches, with a
// client, a prefix and a cleanup per subtest, and inboxes spread over
// groups hash tags (0: the default).
func suite(t *testing.T, newClient func() redis.UniversalClient, groups int) {
	admin := newClient() // outlives the caches that subtests close
	t.Cleanup(func() { admin.Close() })
	feedtest.TestCache(t, func(t *testing.T, inboxMax int) feed.Cache {
		prefix := randomPrefix()
		c := New(newClient(), Options{Prefix: prefix, InboxMax: inboxMax, InboxGroups: groups, InboxTTL: feedtest.ReadTTL})
		t.Cleanup(func() {
			c.Close() // the subtest may have closed it already
			deleteKeys(t, admin, prefix)
		})
		return c
	})
}

func TestCache(t *testing.T) { suite(t, testServer(t), 0) }

func TestCacheCluster(t *testing.T) { suite(t, testCluster(t), 0) }

// With one group, every push is one script call over all the inboxes it
// reaches, absent, full, growing, late and repeated ones mixed.
func TestCacheOneGroup(t *testing.T) { suite(t, testServer(t), 1) }

func TestCacheClusterOneGroup(t *testing.T) { suite(t, testCluster(t), 1) }

// drainWithoutScript checks that a push whose drain script the server
// does not know (after a restart, a SCRIPT FLUSH, a failover) still lands,
// and that the script is loaded for the next drain. A script of unique
// source stands in for a flushed one, since a flush would disturb other
// tests on the server. InboxMax 2 makes every second push drain.
func TestDrainWithoutScript(t *testing.T) { drainWithoutScript(t, testServer(t)) }

func TestDrainWithoutScriptCluster(t *testing.T) { drainWithoutScript(t, testCluster(t)) }

func drainWithoutScript(t *testing.T, newClient func() redis.UniversalClient) {
	ctx := t.Context()
	prefix := randomPrefix()
	client := newClient()
	c := New(client, Options{Prefix: prefix, InboxMax: 2})
	t.Cleanup(func() {
		deleteKeys(t, client, prefix)
		c.Close()
	})
	c.drain = redis.NewScript(drainScript + "-- " + prefix + "\n")

	if exists, err := c.drain.Exists(ctx, client).Result(); err != nil || exists[0] {
		t.Fatalf("script of unique source already loaded = %v, %v; the test would prove nothing", exists, err)
	}

	readers := []int64{1, 2, 3}
	for _, r := range readers[:2] {
		if err := c.FillInbox(ctx, r, nil, true, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{101, 102} {
		if err := c.PushToInboxes(ctx, readers, id); err != nil {
			t.Fatalf("PushToInboxes(%v, %d): %v", readers, id, err)
		}
	}
	if exists, err := c.drain.Exists(ctx, client).Result(); err != nil || !exists[0] {
		t.Errorf("after a drain, script loaded = %v, %v; want true", exists, err)
	}
	for _, r := range readers[:2] {
		// The ring itself, not a page (a page would drain too): its
		// header's head (bytes 6-9) and count (10-13), lua/ring.lua.
		ring, err := client.GetRange(ctx, c.inboxKey(r), 0, -1).Result()
		if err != nil || len(ring) < 21 || ring[6:14] != "\x00\x00\x00\x00\x00\x00\x00\x02" {
			t.Errorf("ring of %d = %q, %v; want 2 ids drained into it", r, ring, err)
		}
		page, err := c.InboxPage(ctx, r, 0, 10)
		if err != nil || len(page.IDs) != 2 || page.IDs[0] != 102 || page.IDs[1] != 101 {
			t.Errorf("InboxPage(%d) = %+v, %v; want ids [102 101]", r, page, err)
		}
	}
	if page, err := c.InboxPage(ctx, 3, 0, 10); err != nil || page.Exists {
		t.Errorf("InboxPage(3) = %+v, %v; want absent", page, err)
	}
	if n, err := client.Exists(ctx, c.inboxKey(3), c.pendingKey(3)).Result(); err != nil || n != 0 {
		t.Errorf("keys of the absent inbox 3 = %d, %v; want none: a push creates nothing", n, err)
	}
}

// TestCachePostsWithoutScript checks that posts whose set script the
// server does not know (after a restart, a SCRIPT FLUSH, a failover) are
// still stored, with their versions still compared, and that the script
// is loaded for the next call; as drainWithoutScript does, a script of
// unique source stands in for a flushed one.
func TestCachePostsWithoutScript(t *testing.T) { cachePostsWithoutScript(t, testServer(t)) }

func TestCachePostsWithoutScriptCluster(t *testing.T) { cachePostsWithoutScript(t, testCluster(t)) }

func cachePostsWithoutScript(t *testing.T, newClient func() redis.UniversalClient) {
	ctx := t.Context()
	prefix := randomPrefix()
	client := newClient()
	c := New(client, Options{Prefix: prefix})
	t.Cleanup(func() {
		deleteKeys(t, client, prefix)
		c.Close()
	})
	c.postSet = redis.NewScript(postSetScript + "-- " + prefix + "\n")
	if exists, err := c.postSet.Exists(ctx, client).Result(); err != nil || exists[0] {
		t.Fatalf("script of unique source already loaded = %v, %v; the test would prove nothing", exists, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	edited := feed.Post{ID: 101, AuthorID: 1, Content: "edited", CreatedAt: at, EditedAt: at.Add(time.Minute)}
	if err := client.Set(ctx, c.postKeyOf(101), appendPost(nil, edited), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	posts := []feed.Post{
		{ID: 101, AuthorID: 1, Content: "original", CreatedAt: at}, // older than the cached edit
		{ID: 102, AuthorID: 1, Content: "new", CreatedAt: at, Data: `{"a":1}`},
	}
	if err := c.CachePosts(ctx, posts, time.Minute); err != nil {
		t.Fatalf("CachePosts without the script: %v", err)
	}
	if exists, err := c.postSet.Exists(ctx, client).Result(); err != nil || !exists[0] {
		t.Errorf("after CachePosts, script loaded = %v, %v; want true", exists, err)
	}
	got, err := c.CachedPosts(ctx, []int64{101, 102})
	if err != nil || got[101].Content != "edited" || got[102].Data != `{"a":1}` {
		t.Errorf("CachedPosts = %+v, %v; want the edit kept and 102 stored", got, err)
	}
}

// TestKeysAreClusterSafe checks that the keys of one inbox or post share
// the slot of their hash tag, whatever the prefix: an inbox's tag is its
// reader's group, a post's its id.
func TestKeysAreClusterSafe(t *testing.T) {
	c := New(nil, Options{Prefix: "feedd:"})
	ring, pending := c.inboxKey(42), c.pendingKey(42)
	for _, tc := range []struct{ key, want string }{
		{ring, "feedd:inbox2:{g34}:42"},
		{pending, "feedd:inbox2:{g34}:42:p"},
		{c.pendingKeys([]int64{7, 42})[1], "feedd:inbox2:{g34}:42:p"},
		{c.pendingKeys([]int64{7, 42})[0], "feedd:inbox2:{g20}:7:p"},
		{c.postKeyOf(feed.MaxID), "feedd:post:{9007199254740991}"},
	} {
		if tc.key != tc.want {
			t.Errorf("key = %q; want %q", tc.key, tc.want)
		}
	}
}

// TestInboxGroups checks how a fan-out's drains are cut into script
// calls: every reader's ring and list exactly once, as a pair, each
// call's keys of one hash tag and at most maxDrainInboxes inboxes; and
// that time-ordered reader ids (the usual kind) spread evenly over the
// groups.
func TestInboxGroups(t *testing.T) {
	for _, groups := range []int{1, 7, 256} {
		c := New(nil, Options{Prefix: "p:", InboxGroups: groups})
		gen := feed.NewIDGen(time.Now)
		// Enough readers that a fair spread stays well inside the bounds
		// below (with 20,000 over 256 groups, a group now and then fell
		// 4.5 standard deviations out by chance).
		readers := make([]int64, 100_000)
		for i := range readers {
			readers[i] = gen.Next()
		}
		seen := map[string]int{}
		perGroup := map[string]int{}
		for _, keys := range c.drainCalls(readers) {
			if len(keys) == 0 || len(keys)%2 != 0 || len(keys) > 2*maxDrainInboxes {
				t.Fatalf("groups=%d: a call of %d keys; want pairs of 1 to %d inboxes", groups, len(keys), maxDrainInboxes)
			}
			tag := hashTagOf(keys[0])
			for i := 0; i < len(keys); i += 2 {
				if keys[i+1] != keys[i]+pendingSuffix {
					t.Fatalf("groups=%d: keys %q, %q are not one inbox's ring and list", groups, keys[i], keys[i+1])
				}
				if hashTagOf(keys[i]) != tag {
					t.Fatalf("groups=%d: keys %q and %q in one call have different tags", groups, keys[0], keys[i])
				}
				seen[keys[i]]++
				perGroup[tag]++
			}
		}
		for _, r := range readers {
			if k := c.inboxKey(r); seen[k] != 1 {
				t.Fatalf("groups=%d: inbox %q is in %d calls; want 1", groups, k, seen[k])
			}
		}
		if len(seen) != len(readers) {
			t.Fatalf("groups=%d: %d keys for %d readers", groups, len(seen), len(readers))
		}
		if len(perGroup) != groups {
			t.Errorf("groups=%d: readers fell into %d groups", groups, len(perGroup))
		}
		mean := len(readers) / groups
		for tag, n := range perGroup {
			if n > mean*3/2 || n < mean/2 {
				t.Errorf("groups=%d: group %s holds %d readers; mean %d", groups, tag, n, mean)
			}
		}
	}
}

// hashTagOf returns what Redis Cluster hashes of key: the first {…}.
func hashTagOf(key string) string {
	i := strings.IndexByte(key, '{')
	j := strings.IndexByte(key[i+1:], '}')
	return key[i+1 : i+1+j]
}

func TestPostEncoding(t *testing.T) {
	edited := time.Date(2026, 5, 6, 7, 8, 9, 123_000_000, time.UTC)
	for _, p := range []feed.Post{
		{},
		{ID: 1, AuthorID: 2, Content: "x", CreatedAt: time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{ID: feed.MaxID, AuthorID: -1, Deleted: true, CreatedAt: time.Date(2094, 1, 1, 0, 0, 0, 1, time.FixedZone("", -7200))},
		{ID: 3, AuthorID: 4, Content: "with data", Data: `{"a":[1,"\u0000"],"b":"é"}`},
		{ID: 5, AuthorID: 6, Content: "", Data: `{}`, EditedAt: edited},
		{ID: 7, AuthorID: 8, Content: "edited", EditedAt: edited},
		{ID: 9, AuthorID: 8, Content: strings.Repeat("ü", feed.MaxContentRunes), Data: `{"s":"` + strings.Repeat("x", feed.MaxDataBytes-8) + `"}`, EditedAt: edited},
		{ID: 10, AuthorID: 8, Content: "imported", ExternalID: "blog-9913"},
		{ID: -(1 << 50), AuthorID: 8, Content: "", ExternalID: strings.Repeat("é", feed.MaxExternalIDBytes/2), Data: `{"a":1}`, EditedAt: edited},
		{ID: 11, AuthorID: 8, Deleted: true, ExternalID: "x"},
		{ID: 12, AuthorID: 8, Content: "weighed", Weight: feed.WeightOf(2.5)},
		{ID: 13, AuthorID: 8, Content: "kept out of ranked feeds", Weight: feed.WeightOf(0), ExternalID: "e", Data: `{"a":1}`, EditedAt: edited},
		{ID: 14, AuthorID: 8, Content: "a reply", InReplyToID: 13, InReplyToAuthorID: 8},
		{ID: 15, AuthorID: 9, Content: "", InReplyToID: -(1 << 50), InReplyToAuthorID: 8, Weight: feed.WeightOf(2), ExternalID: "r", Data: `{}`, EditedAt: edited},
	} {
		b := appendPost(nil, p)
		got, ok := decodePost(b)
		if !ok || got != p && !(got.ID == p.ID && got.AuthorID == p.AuthorID && got.Content == p.Content &&
			got.Deleted == p.Deleted && got.CreatedAt.Equal(p.CreatedAt) && got.Data == p.Data &&
			got.EditedAt.Equal(p.EditedAt) && got.ExternalID == p.ExternalID && got.Weight == p.Weight &&
			got.InReplyToID == p.InReplyToID && got.InReplyToAuthorID == p.InReplyToAuthorID &&
			got.RepostOfID == p.RepostOfID && got.RepostOfAuthorID == p.RepostOfAuthorID) {
			t.Errorf("decodePost(appendPost(%.80v)) = %.80v, %v", p, got, ok)
		}
		// A post is written in the oldest format that holds it, which the
		// versions before decode too: 1 for a plain post, 2 with data or
		// an edit, 3 with an external id, 4 only with a weight, 5 only
		// for a reply, 6 only for a repost.
		want := byte(postFormat)
		switch {
		case p.IsRepost():
			want = postFormatV6
		case p.IsReply():
			want = postFormatV5
		case !p.Weight.IsDefault():
			want = postFormatV4
		case p.ExternalID != "":
			want = postFormatV3
		case p.Data != "" || !p.EditedAt.IsZero():
			want = postFormatV2
		}
		if b[0] != want {
			t.Errorf("appendPost(%.80v) is format %d; want %d", p, b[0], want)
		}
	}
	// A record the version before data and edits wrote still decodes.
	old := []byte{postFormat, 0, 0x02, 0x04, 0x06, 0x04, 'x'}
	if got, ok := decodePost(old); !ok || got.ID != 1 || got.AuthorID != 2 || !got.CreatedAt.Equal(time.Unix(3, 4)) ||
		got.Content != "x" || got.Data != "" || !got.EditedAt.IsZero() {
		t.Errorf("decodePost(a format-1 record) = %+v, %v", got, ok)
	}
	valid := appendPost(nil, feed.Post{ID: 300, AuthorID: 300, Content: "abc"})
	withData := appendPost(nil, feed.Post{ID: 300, AuthorID: 300, Content: "abc", Data: `{"a":1}`, EditedAt: edited})
	withExternal := appendPost(nil, feed.Post{ID: 300, AuthorID: 300, Content: "", ExternalID: "ext"})
	withWeight := appendPost(nil, feed.Post{ID: 300, AuthorID: 300, Content: "", Weight: feed.WeightOf(3)})
	for _, bad := range [][]byte{nil, {postFormat}, {postFormatV6 + 1, 0, 2, 2, 2, 0}, valid[:4],
		{postFormatV6, flagRepost, 2, 2, 2, 0, 0}, // a repost of post 0
		{postFormatV5, flagReply, 2, 2, 2, 0},     // the reply's ids missing
		{postFormatV5, flagReply, 2, 2, 2, 0, 0},  // a reply to post 0
		withData[:9],                              // the version cut short
		withData[:18],                             // the data's length without all of the data
		withExternal[:len(withExternal)-1],        // the external id cut short
		withWeight[:len(withWeight)-1],            // the weight cut short
		{postFormatV4, flagWeight, 2, 2, 2, 0, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0}, // a NaN weight
		{postFormatV3, flagExternal, 2, 2, 2, 0, 0},                          // an empty external id
		{postFormatV2, flagEdited, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 0},       // version 0
	} {
		if got, ok := decodePost(bad); ok {
			t.Errorf("decodePost(%v) = %+v, true; want false", bad, got)
		}
	}
}

// TestInboxMissingAKey checks what happens when Redis holds only one of an
// inbox's two keys (an eviction took the other, or it expired first): a
// ring without its pending list may have missed pushes, so it reads as
// absent until a fill, and a list without its ring is deleted by the next
// drain instead of collecting pushes.
func TestInboxMissingAKey(t *testing.T) {
	ctx := t.Context()
	client := testServer(t)()
	prefix := randomPrefix()
	c := New(client, Options{Prefix: prefix, InboxMax: 1}) // every push drains
	t.Cleanup(func() {
		deleteKeys(t, client, prefix)
		c.Close()
	})
	const reader = 7
	ring, pending := c.inboxKey(reader), c.pendingKey(reader)
	mustInbox := func(want []int64, exists bool) {
		t.Helper()
		page, err := c.InboxPage(ctx, reader, 0, 10)
		if err != nil || page.Exists != exists || !slices.Equal(page.IDs, want) {
			t.Fatalf("InboxPage = %+v, %v; want ids %v, exists %v", page, err, want, exists)
		}
	}
	if err := c.FillInbox(ctx, reader, []int64{5}, true, time.Minute); err != nil {
		t.Fatal(err)
	}
	mustInbox([]int64{5}, true)

	// The list is gone: the ring is not trusted, by any call.
	if err := client.Del(ctx, pending).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PushToInboxes(ctx, []int64{reader}, 6); err != nil {
		t.Fatal(err)
	}
	mustInbox(nil, false)
	if err := c.AddToInbox(ctx, reader, []int64{9}, false); err != nil {
		t.Fatalf("AddToInbox on a ring without its list: %v", err)
	}
	if err := c.RemoveFromInbox(ctx, reader, []int64{5}); err != nil {
		t.Fatalf("RemoveFromInbox on a ring without its list: %v", err)
	}
	if _, _, exists, err := c.InboxBounds(ctx, reader); err != nil || exists {
		t.Fatalf("InboxBounds = exists %v, %v; want absent", exists, err)
	}
	if err := c.FillInbox(ctx, reader, []int64{8}, true, time.Minute); err != nil {
		t.Fatal(err)
	}
	mustInbox([]int64{8}, true)

	// The ring is gone: a push that drains deletes the orphan list.
	if err := client.Del(ctx, ring).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PushToInboxes(ctx, []int64{reader}, 10); err != nil {
		t.Fatal(err)
	}
	if n, err := client.Exists(ctx, ring, pending).Result(); err != nil || n != 0 {
		t.Fatalf("keys after a drain of a list without its ring = %d, %v; want none", n, err)
	}
	mustInbox(nil, false)
}

func notifierSuite(t *testing.T, newClient func() redis.UniversalClient) {
	feedtest.TestNotifier(t, func(t *testing.T) feed.Notifier {
		c := New(newClient(), Options{Prefix: randomPrefix()})
		t.Cleanup(func() { c.Close() })
		return c
	})
}

func TestNotifier(t *testing.T) { notifierSuite(t, testServer(t)) }

func TestNotifierCluster(t *testing.T) { notifierSuite(t, testCluster(t)) }

// freshCache returns a Cache on a client of its own under a prefix of its
// own, whose keys admin deletes when the test ends.
func freshCache(t *testing.T, admin redis.UniversalClient, newClient func() redis.UniversalClient) *Cache {
	prefix := randomPrefix()
	c := New(newClient(), Options{Prefix: prefix})
	t.Cleanup(func() {
		c.Close()
		deleteKeys(t, admin, prefix)
	})
	return c
}

func beatsSuite(t *testing.T, newClient func() redis.UniversalClient) {
	admin := newClient()
	t.Cleanup(func() { admin.Close() })
	feedtest.TestBeats(t, func(t *testing.T) feedtest.Beats { return freshCache(t, admin, newClient) })
}

func TestBeats(t *testing.T) { beatsSuite(t, testServer(t)) }

func TestBeatsCluster(t *testing.T) { beatsSuite(t, testCluster(t)) }

func TestDropMany(t *testing.T) { dropMany(t, testServer(t)) }

func TestDropManyCluster(t *testing.T) { dropMany(t, testCluster(t)) }

// dropMany: DropInboxes and DropUsersLikes delete, in one pipeline each,
// the inboxes and like sets they name and no others, also when the keys
// are spread over a cluster's slots.
func dropMany(t *testing.T, newClient func() redis.UniversalClient) {
	ctx := t.Context()
	prefix := randomPrefix()
	client := newClient()
	c := New(client, Options{Prefix: prefix, InboxMax: 10})
	t.Cleanup(func() {
		deleteKeys(t, client, prefix)
		c.Close()
	})
	readers := []int64{1, 2, 3, 4, 5}
	for _, r := range readers {
		if err := c.FillInbox(ctx, r, []int64{100 + r}, true, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := client.ZAdd(ctx, c.likeUserKey(r), redis.Z{Score: 1, Member: "w"}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if failed, err := c.DropInboxes(ctx, []int64{1, 3, 5, 9}); err != nil || len(failed) != 0 {
		t.Fatalf("DropInboxes: failed %v, %v", failed, err)
	}
	if err := c.DropUsersLikes(ctx, []int64{2, 3}); err != nil {
		t.Fatalf("DropUsersLikes: %v", err)
	}
	for _, r := range readers {
		_, _, exists, err := c.InboxBounds(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if want := r%2 == 0; exists != want {
			t.Errorf("inbox of %d exists = %v; want %v", r, exists, want)
		}
		n, err := client.Exists(ctx, c.likeUserKey(r)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := r != 2 && r != 3; (n == 1) != want {
			t.Errorf("like set of %d exists = %v; want %v", r, n == 1, want)
		}
	}
}
