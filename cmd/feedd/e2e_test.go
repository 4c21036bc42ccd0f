package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

func TestPublishFanoutRead(t *testing.T) {
	forEachStack(t, publishFanoutRead)
	t.Run("galera", func(t *testing.T) { publishFanoutRead(t, galeraEnv(t)) })
}

// publishFanoutRead: a follower's inbox and feed get a post, with the
// author's counts.
func publishFanoutRead(t *testing.T, env map[string]string) {
	in := startFeedd(t, env, nil)
	alice, aliceTok := in.user("alice")
	_, bobTok := in.user("bob")
	in.follow(bobTok, alice)
	if got := in.feedAll(bobTok, 20); len(got) != 0 {
		t.Fatalf("empty feed has %v", got)
	}
	p := in.post(aliceTok, "hello, followers")
	// The read path would find the post in SQL anyway; check that the
	// fan-out itself put it into bob's inbox.
	bob, _ := feed.ParseID(in.must(200, "GET", "/v1/users/"+alice+"/followers", aliceTok, nil).items()[0]["id"].(string))
	pid, _ := feed.ParseID(p)
	testenv.Eventually(t, 10*time.Second, "post reaches bob's inbox", func() bool {
		pg, err := in.d.cache.InboxPage(context.Background(), bob, 0, 10)
		return err == nil && slices.Contains(pg.IDs, pid)
	})
	r := in.must(200, "GET", "/v1/me/feed", bobTok, nil)
	items := r.items()
	if len(items) != 1 || items[0]["id"] != p || items[0]["author_id"] != alice || items[0]["content"] != "hello, followers" {
		t.Fatalf("feed = %s; want alice's one post", r.raw)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", items[0]["created_at"].(string)); err != nil {
		t.Fatalf("created_at %q is not RFC 3339 UTC with milliseconds: %v", items[0]["created_at"], err)
	}
	if r.body["next_cursor"] != nil {
		t.Fatalf("next_cursor = %v; want null at the end", r.body["next_cursor"])
	}
	u := in.must(200, "GET", "/v1/users/"+alice, bobTok, nil)
	if u.body["follower_count"] != float64(1) || u.body["following_count"] != float64(0) {
		t.Fatalf("alice = %s; want 1 follower, 0 following", u.raw)
	}
}

// TestBigFanout: an author with 12,000 followers and a small batch size is
// split into batch tasks by follower-id range; every materialized inbox gets
// the post exactly once.
func TestBigFanout(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_BATCH_SIZE", "500", "FEEDD_DIRECT_FANOUT", "1000")
		author, authorTok := in.user("celebrity")
		authorID, _ := feed.ParseID(author)
		followers := bulkFollowers(t, in, authorID, 12000)
		ctx := context.Background()
		for _, f := range followers {
			if err := in.d.cache.FillInbox(ctx, f, nil, true, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		p := in.post(authorTok, "to all 12,000 of you")
		pid, _ := feed.ParseID(p)
		waitInboxes(t, in, followers, pid, 60*time.Second)
		for _, f := range followers[:50] {
			pg, _ := in.d.cache.InboxPage(ctx, f, 0, 10)
			if !slices.Equal(pg.IDs, []int64{pid}) {
				t.Fatalf("inbox of %d = %v; want exactly [%d]", f, pg.IDs, pid)
			}
		}
	})
}

// bulkFollowers creates n users following author straight in SQL.
func bulkFollowers(t *testing.T, in *instance, author int64, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	users := make([]feed.User, n)
	gen := feed.NewIDGen(nil)
	for i := range ids {
		ids[i] = gen.Next()
		users[i] = feed.User{ID: ids[i], Name: "f" + strconv.Itoa(i)}
	}
	ctx := context.Background()
	bulk, ok := in.d.store.(interface {
		BulkCreateUsers(ctx context.Context, users []feed.User) error
	})
	if !ok {
		t.Fatalf("the store %T has no BulkCreateUsers", in.d.store)
	}
	if err := bulk.BulkCreateUsers(ctx, users); err != nil {
		t.Fatalf("bulk users: %v", err)
	}
	if db, one := any(in.d.store).(*sqlstore.Store); one {
		if err := db.BulkFollow(ctx, author, ids); err != nil {
			t.Fatalf("bulk follow: %v", err)
		}
		return ids
	}
	// On shards a follow writes two of them (the edge's two copies):
	// one at a time through the router.
	for _, id := range ids {
		if _, err := in.d.store.Follow(ctx, id, author); err != nil {
			t.Fatalf("follow %d -> %d: %v", id, author, err)
		}
	}
	return ids
}

// waitInboxes waits until every reader's inbox holds post.
func waitInboxes(t *testing.T, in *instance, readers []int64, post int64, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	pending := slices.Clone(readers)
	testenv.Eventually(t, within, fmt.Sprintf("post %d reaches %d inboxes", post, len(readers)), func() bool {
		rest := pending[:0]
		for _, r := range pending {
			pg, err := in.d.cache.InboxPage(ctx, r, 0, 5)
			if err != nil || !slices.Contains(pg.IDs, post) {
				rest = append(rest, r)
			}
		}
		pending = rest
		return len(pending) == 0
	})
}

// TestDuplicateDeliveries: a post event and its batch tasks delivered
// several times leave exactly one entry per inbox.
func TestDuplicateDeliveries(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_BATCH_SIZE", "100", "FEEDD_DIRECT_FANOUT", "50")
		author, authorTok := in.user("author")
		authorID, _ := feed.ParseID(author)
		followers := bulkFollowers(t, in, authorID, 700)
		ctx := context.Background()
		for _, f := range followers {
			_ = in.d.cache.FillInbox(ctx, f, nil, true, time.Hour)
		}
		p := in.post(authorTok, "once")
		pid, _ := feed.ParseID(p)
		waitInboxes(t, in, followers, pid, 30*time.Second)
		// Redeliver the event three times and every task twice more.
		ev := feed.Event{Kind: feed.EventPostCreated, PostID: pid, AuthorID: authorID}.Encode()
		if err := in.d.broker.Publish(ctx, feed.QueuePosts, ev, ev, ev); err != nil {
			t.Fatal(err)
		}
		var tasks [][]byte
		for after, i := int64(0), 0; i < len(followers); i += 100 {
			upto := followers[min(i+99, len(followers)-1)]
			b := feed.FanoutTask{ID: fmt.Sprintf("%d:%d", pid, after), PostID: pid, AuthorID: authorID, After: after, Upto: upto}.Encode()
			tasks = append(tasks, b, b)
			after = upto
		}
		if err := in.d.broker.Publish(ctx, feed.QueueTasks, tasks...); err != nil {
			t.Fatal(err)
		}
		q := in.post(authorTok, "marker after the duplicates")
		qid, _ := feed.ParseID(q)
		waitInboxes(t, in, followers, qid, 30*time.Second)
		testenv.Eventually(t, 10*time.Second, "task queue drains", func() bool {
			n, err := in.d.broker.Pending(ctx, feed.QueueTasks)
			return err == nil && n == 0
		})
		for _, f := range followers {
			pg, _ := in.d.cache.InboxPage(ctx, f, 0, 10)
			if !slices.Equal(pg.IDs, []int64{qid, pid}) {
				t.Fatalf("inbox of %d = %v; want exactly [%d %d]", f, pg.IDs, qid, pid)
			}
		}
	})
}

// crashingBroker makes every batch task's first delivery fail: half of them
// before the inbox writes, half after (a worker that died before its ack).
type crashingBroker struct {
	feed.Broker
	crashed atomic.Int64
}

func (b *crashingBroker) Consume(ctx context.Context, q string, opts feed.ConsumeOptions, h feed.Handler) error {
	return b.Broker.Consume(ctx, q, opts, func(ctx context.Context, d feed.Delivery) error {
		if q != feed.QueueTasks || d.Attempt > 1 {
			return h(ctx, d)
		}
		b.crashed.Add(1)
		if len(d.Body)%2 == 0 {
			return errors.New("worker died before the write")
		}
		if err := h(ctx, d); err != nil {
			return err
		}
		return errors.New("worker died after the write, before its ack")
	})
}

func TestWorkerDiesBeforeAck(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		var cb *crashingBroker
		in := startFeedd(t, env, func(d *deps) {
			cb = &crashingBroker{Broker: d.broker}
			d.broker = cb
		}, "FEEDD_BATCH_SIZE", "100", "FEEDD_DIRECT_FANOUT", "50")
		author, authorTok := in.user("author")
		authorID, _ := feed.ParseID(author)
		followers := bulkFollowers(t, in, authorID, 1000)
		ctx := context.Background()
		for _, f := range followers {
			_ = in.d.cache.FillInbox(ctx, f, nil, true, time.Hour)
		}
		p := in.post(authorTok, "survives crashes")
		pid, _ := feed.ParseID(p)
		waitInboxes(t, in, followers, pid, 60*time.Second)
		if got := cb.crashed.Load(); got < 10 {
			t.Fatalf("%d task deliveries crashed; want every task's first (10)", got)
		}
		if n, err := cb.DeadLetters(ctx, feed.QueueTasks); err != nil || n != 0 {
			t.Fatalf("dead letters = %d, %v; want 0", n, err)
		}
		for _, f := range followers {
			pg, _ := in.d.cache.InboxPage(ctx, f, 0, 10)
			if !slices.Equal(pg.IDs, []int64{pid}) {
				t.Fatalf("inbox of %d = %v; want exactly [%d]", f, pg.IDs, pid)
			}
		}
	})
}

// TestCacheLoss: with the cache gone (Redis flushed, or the embedded
// process restarted) every feed is still complete and in order.
func TestCacheLoss(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_INBOX_MAX", "30")
		var authors, tokens []string
		for i := range 4 {
			id, tok := in.user(fmt.Sprintf("author%d", i))
			authors, tokens = append(authors, id), append(tokens, tok)
		}
		var readers []string
		for i := range 3 {
			_, tok := in.user(fmt.Sprintf("reader%d", i))
			readers = append(readers, tok)
			for _, a := range authors[:i+2] {
				in.follow(tok, a)
			}
		}
		var posts [4][]string
		for round := range 20 {
			for i, tok := range tokens {
				posts[i] = append(posts[i], in.post(tok, fmt.Sprintf("post %d of author %d", round, i)))
			}
		}
		want := make([][]string, len(readers))
		for i, tok := range readers {
			var all []string
			for _, ps := range posts[:i+2] {
				all = append(all, ps...)
			}
			slices.SortFunc(all, func(a, b string) int { return cmpID(b, a) })
			want[i] = all
			in.feedEventually(tok, 7, all)
		}
		if _, ok := env["FEEDD_REDIS_URL"]; ok {
			flushRedis(t, env)
		} else {
			in.stop()
			in = startFeedd(t, env, nil, "FEEDD_INBOX_MAX", "30")
		}
		for i, tok := range readers {
			if got := in.feedAll(tok, 7); !slices.Equal(got, want[i]) {
				t.Fatalf("reader %d after cache loss: got %d items, want %d in order", i, len(got), len(want[i]))
			}
		}
	})
}

func cmpID(a, b string) int {
	x, _ := strconv.ParseInt(a, 10, 64)
	y, _ := strconv.ParseInt(b, 10, 64)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// TestPagingUnderConcurrentPublishes: posts that share a millisecond, and
// new posts arriving between pages, never make a page repeat or skip one.
func TestPagingUnderConcurrentPublishes(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		// A clock that advances one millisecond per 25 readings: many
		// posts share each timestamp.
		var ticks atomic.Int64
		base := time.Now()
		in := startFeedd(t, env, func(d *deps) {
			d.now = func() time.Time { return base.Add(time.Duration(ticks.Add(1)/25) * time.Millisecond) }
		}, "FEEDD_INBOX_MAX", "40")
		var tokens, authors []string
		for i := range 5 {
			id, tok := in.user(fmt.Sprintf("a%d", i))
			authors, tokens = append(authors, id), append(tokens, tok)
		}
		_, reader := in.user("reader")
		for _, a := range authors {
			in.follow(reader, a)
		}
		var mu sync.Mutex
		var before []string
		var wg sync.WaitGroup
		for _, tok := range tokens {
			wg.Go(func() {
				for i := range 20 {
					id := in.post(tok, "early "+strconv.Itoa(i))
					mu.Lock()
					before = append(before, id)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.SortFunc(before, func(a, b string) int { return cmpID(b, a) })
		in.feedEventually(reader, 100, before)
		// Page with limit 6 while the authors keep publishing.
		stop := make(chan struct{})
		var pub sync.WaitGroup
		for _, tok := range tokens {
			pub.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					in.post(tok, "late "+strconv.Itoa(i))
					time.Sleep(time.Millisecond)
				}
			})
		}
		got := in.feedAll(reader, 6)
		close(stop)
		pub.Wait()
		seen := map[string]bool{}
		for i, id := range got {
			if seen[id] {
				t.Fatalf("post %s appears twice", id)
			}
			seen[id] = true
			if i > 0 && cmpID(got[i-1], id) <= 0 {
				t.Fatalf("feed not strictly newest first at %d: %s then %s", i, got[i-1], id)
			}
		}
		for _, id := range before {
			if !seen[id] {
				t.Fatalf("post %s published before paging began was skipped", id)
			}
		}
		// Ties really happened.
		r := in.must(200, "GET", "/v1/me/feed?limit=100", reader, nil)
		times := map[string]int{}
		for _, it := range r.items() {
			times[it["created_at"].(string)]++
		}
		if len(times) == len(r.items()) {
			t.Fatalf("no two posts share a timestamp; the test did not exercise ties")
		}
	})
}

func TestDeleteIsLazyAndFinal(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		author, authorTok := in.user("author")
		readerID, readerTok := in.user("reader")
		_, otherTok := in.user("other")
		in.follow(readerTok, author)
		in.feedAll(readerTok, 20) // materialize the inbox
		var ids []string
		for i := range 5 {
			ids = append(ids, in.post(authorTok, "post "+strconv.Itoa(i)))
		}
		rid, _ := feed.ParseID(readerID)
		doomed, _ := feed.ParseID(ids[2])
		testenv.Eventually(t, 10*time.Second, "posts reach the inbox", func() bool {
			pg, _ := in.d.cache.InboxPage(context.Background(), rid, 0, 10)
			return len(pg.IDs) == 5
		})
		in.must(403, "DELETE", "/v1/posts/"+ids[2], otherTok, nil)
		in.must(204, "DELETE", "/v1/posts/"+ids[2], authorTok, nil)
		in.must(404, "DELETE", "/v1/posts/"+ids[2], authorTok, nil)
		in.must(404, "GET", "/v1/posts/"+ids[2], readerTok, nil)
		got := in.feedAll(readerTok, 2)
		want := []string{ids[4], ids[3], ids[1], ids[0]}
		if !slices.Equal(got, want) {
			t.Fatalf("feed after delete = %v; want %v", got, want)
		}
		pg, _ := in.d.cache.InboxPage(context.Background(), rid, 0, 10)
		if slices.Contains(pg.IDs, doomed) {
			t.Fatalf("deleted post %d still in the inbox after a read met it", doomed)
		}
		authorPosts := in.must(200, "GET", "/v1/users/"+author+"/posts", readerTok, nil).items()
		if len(authorPosts) != 4 {
			t.Fatalf("author's posts = %d; want 4", len(authorPosts))
		}
	})
}

func TestFollowBackfillAndUnfollow(t *testing.T) {
	forEachStack(t, followBackfillAndUnfollow)
	t.Run("galera", func(t *testing.T) { followBackfillAndUnfollow(t, galeraEnv(t)) })
}

// followBackfillAndUnfollow: a follow copies the followee's recent posts
// into the inbox, an unfollow takes them out, both idempotent, with exact
// counts.
func followBackfillAndUnfollow(t *testing.T, env map[string]string) {
	in := startFeedd(t, env, nil)
	a, aTok := in.user("a")
	b, bTok := in.user("b")
	rID, rTok := in.user("reader")
	rid, _ := feed.ParseID(rID)
	in.follow(rTok, a)
	var bPosts []string
	for i := range 15 {
		bPosts = append(bPosts, in.post(bTok, "b"+strconv.Itoa(i)))
	}
	aPost := in.post(aTok, "from a")
	aid, _ := feed.ParseID(aPost)
	in.feedAll(rTok, 20) // materialize
	testenv.Eventually(t, 10*time.Second, "a's post in the inbox", func() bool {
		pg, _ := in.d.cache.InboxPage(context.Background(), rid, 0, 50)
		return slices.Contains(pg.IDs, aid)
	})
	in.follow(rTok, b)
	in.follow(rTok, b) // idempotent
	pg, _ := in.d.cache.InboxPage(context.Background(), rid, 0, 50)
	for _, p := range bPosts[5:] {
		id, _ := feed.ParseID(p)
		if !slices.Contains(pg.IDs, id) {
			t.Fatalf("follow did not copy b's recent post %s into the inbox %v", p, pg.IDs)
		}
	}
	got := in.feedAll(rTok, 4)
	if len(got) != 16 {
		t.Fatalf("feed after follow has %d posts; want 16 (all of b's and a's)", len(got))
	}
	if u := in.must(200, "GET", "/v1/users/"+b, rTok, nil); u.body["follower_count"] != float64(1) {
		t.Fatalf("b follower_count after two follows = %v; want 1", u.body["follower_count"])
	}
	in.must(204, "DELETE", "/v1/me/following/"+b, rTok, nil)
	in.must(204, "DELETE", "/v1/me/following/"+b, rTok, nil)
	// Unfollowing oneself is one more idempotent unfollow of nobody.
	in.must(204, "DELETE", "/v1/me/following/"+rID, rTok, nil)
	pg, _ = in.d.cache.InboxPage(context.Background(), rid, 0, 50)
	for _, p := range bPosts {
		id, _ := feed.ParseID(p)
		if slices.Contains(pg.IDs, id) {
			t.Fatalf("unfollow left b's post %s in the inbox", p)
		}
	}
	if got := in.feedAll(rTok, 4); !slices.Equal(got, []string{aPost}) {
		t.Fatalf("feed after unfollow = %v; want only a's post", got)
	}
	if u := in.must(200, "GET", "/v1/users/"+b, rTok, nil); u.body["follower_count"] != float64(0) {
		t.Fatalf("b follower_count after unfollow = %v; want 0", u.body["follower_count"])
	}
	if u := in.must(200, "GET", "/v1/users/"+rID, rTok, nil); u.body["following_count"] != float64(1) {
		t.Fatalf("reader following_count = %v; want 1", u.body["following_count"])
	}
}

// TestPagingPastTrimmedInbox: the inbox keeps only the newest FEEDD_INBOX_MAX
// posts; paging further continues from SQL without a seam.
func TestPagingPastTrimmedInbox(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_INBOX_MAX", "25")
		a, aTok := in.user("a")
		_, rTok := in.user("r")
		in.follow(rTok, a)
		in.feedAll(rTok, 10)
		var want []string
		for i := range 80 {
			want = append(want, in.post(aTok, "p"+strconv.Itoa(i)))
		}
		slices.Reverse(want)
		in.feedEventually(rTok, 10, want)
		for _, limit := range []int{1, 7, 25, 100} {
			if got := in.feedAll(rTok, limit); !slices.Equal(got, want) {
				t.Fatalf("limit %d: got %d posts; want all %d in order", limit, len(got), len(want))
			}
		}
	})
}

func TestAuthRules(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		alice, aliceTok := in.user("alice")
		bob, bobTok := in.user("bob")
		p := in.post(aliceTok, "alice's")
		for _, c := range []struct {
			name, method, path, token string
			body                      any
			status                    int
		}{
			{"no token", "GET", "/v1/me/feed", "", nil, 401},
			{"garbage token", "GET", "/v1/me/feed", "not-a-jwt", nil, 401},
			{"user token on admin route", "POST", "/v1/users", bobTok, map[string]any{"name": "x"}, 403},
			{"user mints tokens", "POST", "/v1/users/" + alice + "/tokens", bobTok, nil, 403},
			{"admin has no feed", "GET", "/v1/me/feed", in.admin, nil, 403},
			{"delete another's post", "DELETE", "/v1/posts/" + p, bobTok, nil, 403},
			{"token for unknown user", "POST", "/v1/users/999999999/tokens", in.admin, nil, 404},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := in.do(c.method, c.path, c.token, c.body)
				if r.status != c.status || r.errCode() == "" {
					t.Fatalf("status %d body %s; want %d with an error body", r.status, r.raw, c.status)
				}
			})
		}
		// Bob acting through his own token touches only his own edges.
		in.follow(bobTok, alice)
		if u := in.must(200, "GET", "/v1/users/"+bob, aliceTok, nil); u.body["following_count"] != float64(1) {
			t.Fatalf("bob following_count = %v; want 1", u.body["following_count"])
		}
		if u := in.must(200, "GET", "/v1/users/"+alice, aliceTok, nil); u.body["following_count"] != float64(0) {
			t.Fatalf("alice following_count = %v; want 0", u.body["following_count"])
		}
		in.must(200, "GET", "/v1/posts/"+p, in.admin, nil)
	})
}

func TestBadInputChangesNothing(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		alice, aliceTok := in.user("alice")
		big := `{"content":"` + strings.Repeat("x", 1<<20+10) + `"}`
		for _, c := range []struct {
			name, method, path, token string
			body                      any
			status                    int
		}{
			{"bad json", "POST", "/v1/posts", aliceTok, `{"content":`, 400},
			{"wrong type", "POST", "/v1/posts", aliceTok, `{"content":42}`, 400},
			{"unknown field", "POST", "/v1/posts", aliceTok, `{"content":"x","evil":1}`, 400},
			{"empty content", "POST", "/v1/posts", aliceTok, `{"content":""}`, 400},
			{"blank content", "POST", "/v1/posts", aliceTok, `{"content":" \n\t "}`, 400},
			{"content too long", "POST", "/v1/posts", aliceTok, map[string]any{"content": strings.Repeat("é", 5001)}, 400},
			{"body over 1 MiB", "POST", "/v1/posts", aliceTok, big, 413},
			{"bad id", "GET", "/v1/users/abc", aliceTok, nil, 400},
			{"negative user id", "GET", "/v1/users/-4", aliceTok, nil, 400},
			{"post id below 2006", "GET", "/v1/posts/-2456027136000001", aliceTok, nil, 400},
			{"unknown post of 2024", "GET", "/v1/posts/-4", aliceTok, nil, 404},
			{"unknown user", "GET", "/v1/users/123456789", aliceTok, nil, 404},
			{"unknown post", "GET", "/v1/posts/123456789", aliceTok, nil, 404},
			{"follow yourself", "PUT", "/v1/me/following/" + alice, aliceTok, nil, 400},
			{"follow unknown", "PUT", "/v1/me/following/123456789", aliceTok, nil, 404},
			{"bad cursor", "GET", "/v1/me/feed?cursor=nope", aliceTok, nil, 400},
			{"limit zero", "GET", "/v1/me/feed?limit=0", aliceTok, nil, 400},
			{"limit too big", "GET", "/v1/me/feed?limit=101", aliceTok, nil, 400},
			{"limit not a number", "GET", "/v1/me/feed?limit=ten", aliceTok, nil, 400},
			{"bad user id body", "POST", "/v1/users", in.admin, `{"name":"x","id":"-3"}`, 400},
			{"blank name", "POST", "/v1/users", in.admin, `{"name":"  "}`, 400},
			{"duplicate user id", "POST", "/v1/users", in.admin, map[string]any{"name": "again", "id": alice}, 409},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := in.do(c.method, c.path, c.token, c.body)
				if r.status != c.status || r.errCode() == "" {
					t.Fatalf("status %d body %.200s; want %d with an error body", r.status, r.raw, c.status)
				}
			})
		}
		u := in.must(200, "GET", "/v1/users/"+alice, aliceTok, nil)
		if u.body["following_count"] != float64(0) || u.body["name"] != "alice" {
			t.Fatalf("alice changed: %s", u.raw)
		}
		if n := len(in.must(200, "GET", "/v1/users/"+alice+"/posts", aliceTok, nil).items()); n != 0 {
			t.Fatalf("bad input created %d posts", n)
		}
	})
}

func TestFollowerLists(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		star, starTok := in.user("star")
		var fans []string
		for i := range 7 {
			id, tok := in.user("fan" + strconv.Itoa(i))
			fans = append(fans, id)
			in.follow(tok, star)
		}
		var got []string
		cursor := ""
		for {
			r := in.must(200, "GET", "/v1/users/"+star+"/followers?limit=3&cursor="+cursor, starTok, nil)
			for _, it := range r.items() {
				got = append(got, it["id"].(string))
			}
			next, ok := r.body["next_cursor"].(string)
			if !ok {
				break
			}
			cursor = next
		}
		slices.SortFunc(fans, cmpID)
		if !slices.Equal(got, fans) {
			t.Fatalf("followers = %v; want %v", got, fans)
		}
		r := in.must(200, "GET", "/v1/users/"+fans[0]+"/following", starTok, nil)
		if items := r.items(); len(items) != 1 || items[0]["id"] != star {
			t.Fatalf("following of a fan = %s; want the star", r.raw)
		}
	})
}

func TestOpsEndpoints(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		in.must(200, "GET", "/healthz", "", nil)
		in.must(200, "GET", "/readyz", "", nil)
		if r := in.do("GET", "/metrics", "", nil); r.status != 200 || !strings.Contains(string(r.raw), "feedd_http_request_duration_seconds") {
			t.Fatalf("metrics: status %d, missing feedd metrics", r.status)
		}
		if r := in.must(200, "GET", "/v1/openapi.json", "", nil); r.body["openapi"] == nil {
			t.Fatalf("openapi.json has no openapi field")
		}
	})
}
