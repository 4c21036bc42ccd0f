package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

// likeCount reads a post's like_count and liked_by_me through the API.
func (in *instance) likeState(token, post string) (int64, bool) {
	in.t.Helper()
	r := in.must(200, "GET", "/v1/posts/"+post, token, nil)
	n, _ := r.body["like_count"].(float64)
	liked, _ := r.body["liked_by_me"].(bool)
	return int64(n), liked
}

// sqlLikes reads a post's stats row and liked rows straight from SQL.
func (in *instance) sqlLikes(post string) (stats, rows int64) {
	in.t.Helper()
	db := in.sqlOf(post).DB()
	if err := db.QueryRow("SELECT COALESCE(MAX(like_count), 0) FROM post_stats WHERE post_id = ?", post).Scan(&stats); err != nil {
		in.t.Fatal(err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM likes WHERE post_id = ? AND liked = 1", post).Scan(&rows); err != nil {
		in.t.Fatal(err)
	}
	return stats, rows
}

// TestLikeStorm: 200 users like and unlike one post many times at once,
// each ending liked. The count is exactly 200 in the API at once, in SQL
// once the batches are written, and again after the cache is lost and the
// process restarted.
func TestLikeStorm(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		_, authorTok := in.user("author")
		post := in.post(authorTok, "like me")
		const users, rounds = 200, 6
		toks := make([]string, users)
		for i := range toks {
			_, toks[i] = in.user(fmt.Sprintf("fan%d", i))
		}
		var wg sync.WaitGroup
		for i, tok := range toks {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(i), 1))
				for k := range rounds {
					// Random likes and unlikes, repeats included; the last
					// is a like.
					method := "PUT"
					if k < rounds-1 && r.IntN(2) == 0 {
						method = "DELETE"
					}
					// 200 concurrent writers exceed the in-flight bound
					// (FEEDD_MAX_INFLIGHT_WRITES): a shed request changed
					// nothing, and the client retries it, as told.
					res := in.do(method, "/v1/posts/"+post+"/like", tok, nil)
					for try := 0; res.status == 503 && try < 200; try++ {
						time.Sleep(time.Duration(5+r.IntN(20)) * time.Millisecond)
						res = in.do(method, "/v1/posts/"+post+"/like", tok, nil)
					}
					if res.status != 200 {
						t.Errorf("%s like: %d %s", method, res.status, res.raw)
						return
					}
					if got, _ := res.body["liked_by_me"].(bool); got != (method == "PUT") {
						t.Errorf("%s like: liked_by_me %v", method, got)
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if n, _ := in.likeState(in.admin, post); n != users {
			t.Fatalf("API like_count = %d right after the storm; want %d", n, users)
		}
		for _, tok := range toks[:5] {
			if _, liked := in.likeState(tok, post); !liked {
				t.Errorf("liked_by_me = false for a user whose last action was a like")
			}
		}
		testenv.Eventually(t, 20*time.Second, "SQL has 200 likes", func() bool {
			stats, rows := in.sqlLikes(post)
			return stats == users && rows == users
		})
		// The batching ratio of this storm, from the writer's metrics.
		m := in.must(200, "GET", "/metrics", "", nil)
		t.Logf("writer metrics:\n%s", grepLines(string(m.raw), "feedd_likes_"))

		// Lose the cache and restart: the counts come back from SQL.
		in.stop()
		if _, ok := env["FEEDD_REDIS_URL"]; ok {
			flushRedis(t, env)
		}
		in2 := startFeedd(t, env, nil)
		if n, _ := in2.likeState(in2.admin, post); n != users {
			t.Errorf("API like_count after cache loss and restart = %d; want %d", n, users)
		}
		if stats, rows := in2.sqlLikes(post); stats != users || rows != users {
			t.Errorf("SQL after restart: stats %d, rows %d; want %d", stats, rows, users)
		}
		for _, tok := range toks[:5] {
			if _, liked := in2.likeState(tok, post); !liked {
				t.Errorf("liked_by_me after cache loss = false; want true (rebuilt from SQL)")
			}
		}
		// Idempotent after the restart too: liking again changes nothing,
		// unliking moves the count by exactly one.
		if r := in2.must(200, "PUT", "/v1/posts/"+post+"/like", toks[0], nil); r.body["like_count"] != float64(users) {
			t.Errorf("like again after restart: %s; want like_count %d", r.raw, users)
		}
		if r := in2.must(200, "DELETE", "/v1/posts/"+post+"/like", toks[0], nil); r.body["like_count"] != float64(users-1) {
			t.Errorf("unlike after restart: %s; want like_count %d", r.raw, users-1)
		}
		// Everyone is listed once, newest first, across pages.
		seen := map[string]bool{}
		cursor := ""
		for range 100 {
			r := in2.must(200, "GET", "/v1/posts/"+post+"/likes?limit=37&cursor="+cursor, in2.admin, nil)
			for _, it := range r.items() {
				id, _ := it["id"].(string)
				if seen[id] {
					t.Fatalf("liker %s listed twice", id)
				}
				seen[id] = true
			}
			next, ok := r.body["next_cursor"].(string)
			if !ok {
				break
			}
			cursor = next
		}
		testenv.Eventually(t, 20*time.Second, "the unlike reaches SQL", func() bool {
			stats, _ := in2.sqlLikes(post)
			return stats == users-1
		})
		if len(seen) != users && len(seen) != users-1 {
			t.Errorf("likers listed: %d; want %d", len(seen), users-1)
		}
	})
}

// TestLikes: the API's contract for likes.
func TestLikes(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		aliceID, alice := in.user("alice")
		bobID, bob := in.user("bob")
		in.follow(bob, aliceID)
		p1 := in.post(alice, "one")
		p2 := in.post(alice, "two")
		in.feedEventually(bob, 20, []string{p2, p1})

		// Every post carries like_count and liked_by_me.
		created := in.must(201, "POST", "/v1/posts", alice, map[string]any{"content": "three"})
		if created.body["like_count"] != 0.0 || created.body["liked_by_me"] != false {
			t.Errorf("new post = %s; want like_count 0, liked_by_me false", created.raw)
		}
		p3 := created.str("id")

		r := in.must(200, "PUT", "/v1/posts/"+p1+"/like", bob, nil)
		if r.body["like_count"] != 1.0 || r.body["liked_by_me"] != true {
			t.Errorf("like = %s; want 1, true", r.raw)
		}
		r = in.must(200, "PUT", "/v1/posts/"+p1+"/like", bob, nil)
		if r.body["like_count"] != 1.0 || r.body["liked_by_me"] != true {
			t.Errorf("like twice = %s; want 1, true", r.raw)
		}
		r = in.must(200, "DELETE", "/v1/posts/"+p2+"/like", bob, nil)
		if r.body["like_count"] != 0.0 || r.body["liked_by_me"] != false {
			t.Errorf("unlike never liked = %s; want 0, false", r.raw)
		}
		in.must(200, "PUT", "/v1/posts/"+p1+"/like", alice, nil)
		in.must(200, "PUT", "/v1/posts/"+p3+"/like", alice, nil)

		feed := in.must(200, "GET", "/v1/me/feed?limit=20", bob, nil).items()
		want := map[string][2]any{p1: {2.0, true}, p2: {0.0, false}}
		for _, it := range feed {
			id := it["id"].(string)
			w, ok := want[id]
			if !ok {
				continue // p3 may have arrived already
			}
			if it["like_count"] != w[0] || it["liked_by_me"] != w[1] {
				t.Errorf("feed item %s: like_count %v liked_by_me %v; want %v", id, it["like_count"], it["liked_by_me"], w)
			}
		}
		for _, it := range in.must(200, "GET", "/v1/users/"+aliceID+"/posts", alice, nil).items() {
			wantLiked := it["id"] == p1 || it["id"] == p3
			if it["liked_by_me"] != wantLiked {
				t.Errorf("alice's posts as alice: %s liked_by_me %v; want %v", it["id"], it["liked_by_me"], wantLiked)
			}
		}
		if n, liked := in.likeState(in.admin, p1); n != 2 || liked {
			t.Errorf("GET post as admin: %d %v; want 2, false", n, liked)
		}

		// A user's likes list shows a like as soon as it was answered
		// (the recent set merged with SQL), newest first.
		r = in.must(200, "GET", "/v1/users/"+aliceID+"/likes?limit=1", bob, nil)
		if items := r.items(); len(items) != 1 || items[0]["id"] != p3 {
			t.Errorf("alice's likes page 1 = %s; want p3 at once", r.raw)
		}
		next, _ := r.body["next_cursor"].(string)
		r = in.must(200, "GET", "/v1/users/"+aliceID+"/likes?limit=1&cursor="+next, bob, nil)
		if items := r.items(); len(items) != 1 || items[0]["id"] != p1 || items[0]["liked_by_me"] != true || items[0]["like_count"] != 2.0 {
			t.Errorf("alice's likes page 2 = %s; want p1 (2 likes, liked by bob)", r.raw)
		}
		testenv.Eventually(t, 10*time.Second, "p1's likers listed", func() bool {
			items := in.must(200, "GET", "/v1/posts/"+p1+"/likes", bob, nil).items()
			return len(items) == 2 && items[0]["id"] == aliceID && items[1]["id"] == bobID
		})

		// Most liked: p1 (2) then p3 (1); p2 has none.
		testenv.Eventually(t, 10*time.Second, "top posts", func() bool {
			items := in.must(200, "GET", "/v1/posts/top?window=1h&limit=5", bob, nil).items()
			return len(items) == 2 && items[0]["id"] == p1 && items[1]["id"] == p3 && items[0]["liked_by_me"] == true
		})

		// Unknown and deleted posts are 404, and change nothing.
		in.must(404, "PUT", "/v1/posts/999999/like", bob, nil)
		in.must(404, "GET", "/v1/posts/999999/likes", bob, nil)
		in.must(204, "DELETE", "/v1/posts/"+p3, alice, nil)
		in.must(404, "PUT", "/v1/posts/"+p3+"/like", bob, nil)
		in.must(404, "DELETE", "/v1/posts/"+p3+"/like", alice, nil)
		in.must(404, "GET", "/v1/users/424242/likes", bob, nil)
		testenv.Eventually(t, 10*time.Second, "deleted post gone from the lists", func() bool {
			items := in.must(200, "GET", "/v1/users/"+aliceID+"/likes", bob, nil).items()
			top := in.must(200, "GET", "/v1/posts/top", bob, nil).items()
			return len(items) == 1 && items[0]["id"] == p1 && len(top) == 1
		})

		// Bad input: 4xx with an error body; nothing changes.
		for _, tc := range []struct {
			method, path, token string
			status              int
		}{
			{"PUT", "/v1/posts/abc/like", bob, 400},
			{"PUT", "/v1/posts/-0/like", bob, 400},
			{"PUT", "/v1/posts/-1/like", bob, 404}, // a post of 2024's id, unknown
			{"PUT", "/v1/posts/" + p1 + "/like", "", 401},
			{"PUT", "/v1/posts/" + p1 + "/like", in.admin, 403},
			{"DELETE", "/v1/posts/" + p1 + "/like", "garbage", 401},
			{"GET", "/v1/posts/" + p1 + "/likes?limit=0", bob, 400},
			{"GET", "/v1/posts/" + p1 + "/likes?cursor=zzz", bob, 400},
			{"GET", "/v1/users/" + aliceID + "/likes?cursor=" + next + "x", bob, 400},
			{"GET", "/v1/posts/top?window=forever", bob, 400},
			{"GET", "/v1/posts/top?window=-1h", bob, 400},
			{"GET", "/v1/posts/top?window=400d", bob, 400},
			{"GET", "/v1/posts/top?limit=101", bob, 400},
		} {
			r := in.do(tc.method, tc.path, tc.token, nil)
			if r.status != tc.status || r.errCode() == "" {
				t.Errorf("%s %s: %d %s; want %d with an error body", tc.method, tc.path, r.status, r.raw, tc.status)
			}
		}
		if n, _ := in.likeState(bob, p1); n != 2 {
			t.Errorf("after bad input: like_count %d; want 2", n)
		}
	})
}

// idleLikesBroker never consumes the likes queue: a writer that is down.
type idleLikesBroker struct{ feed.Broker }

func (b idleLikesBroker) Consume(ctx context.Context, q string, opts feed.ConsumeOptions, h feed.Handler) error {
	if q == feed.QueueLikes {
		<-ctx.Done()
		return nil
	}
	return b.Broker.Consume(ctx, q, opts, h)
}

// TestLikesSurviveDeath: an answered like is never lost. On the embedded
// stack it is in SQL when the API answers. With RabbitMQ it is in the
// broker: with no writer running, the process stops (the answered likes
// only in the queue), and the next process writes them all.
func TestLikesSurviveDeath(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		viaBroker := env["FEEDD_AMQP_URL"] != ""
		in := startFeedd(t, env, func(d *deps) {
			if viaBroker {
				d.broker = idleLikesBroker{d.broker}
			}
		})
		_, authorTok := in.user("author")
		post := in.post(authorTok, "durable")
		const users = 30
		for i := range users {
			_, tok := in.user(fmt.Sprintf("u%d", i))
			in.must(200, "PUT", "/v1/posts/"+post+"/like", tok, nil)
		}
		stats, _ := in.sqlLikes(post)
		if !viaBroker {
			if stats != users {
				t.Fatalf("embedded: SQL has %d likes when the API has answered %d; want all", stats, users)
			}
			return
		}
		if stats != 0 {
			t.Fatalf("SQL has %d likes with no writer running; want 0 (the test's premise)", stats)
		}
		n, err := in.d.broker.Pending(context.Background(), feed.QueueLikes)
		if err != nil || n != users {
			t.Fatalf("likes queue holds %d, %v; want the %d answered likes", n, err, users)
		}
		in.stop()
		in2 := startFeedd(t, env, nil)
		testenv.Eventually(t, 20*time.Second, "the next process writes the queued likes", func() bool {
			stats, rows := in2.sqlLikes(post)
			return stats == users && rows == users
		})
		if n, _ := in2.likeState(in2.admin, post); n != users {
			t.Errorf("API like_count = %d; want %d", n, users)
		}
	})
}

// likesCrashingBroker fails every like event's first delivery, half before
// the batch write and half after it (a writer that died before its ack).
type likesCrashingBroker struct {
	feed.Broker
	crashed atomic.Int64
}

func (b *likesCrashingBroker) Consume(ctx context.Context, q string, opts feed.ConsumeOptions, h feed.Handler) error {
	return b.Broker.Consume(ctx, q, opts, func(ctx context.Context, d feed.Delivery) error {
		if q != feed.QueueLikes || d.Attempt > 1 {
			return h(ctx, d)
		}
		n := b.crashed.Add(1)
		if n%2 == 0 {
			return errors.New("writer died before the write")
		}
		if err := h(ctx, d); err != nil {
			return err
		}
		return errors.New("writer died after the write, before its ack")
	})
}

// TestLikeRedeliveries: every like event is delivered again, some after
// their batch was written; users like and unlike in bursts; the counts
// end exact and nothing is dead-lettered.
func TestLikeRedeliveries(t *testing.T) {
	forEachSQLServer(t, func(t *testing.T, env map[string]string) {
		cb := &likesCrashingBroker{}
		in := startFeedd(t, env, func(d *deps) {
			cb.Broker = d.broker
			d.broker = cb
		})
		_, authorTok := in.user("author")
		posts := []string{in.post(authorTok, "a"), in.post(authorTok, "b")}
		const users = 40
		want := map[string]int64{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range users {
			_, tok := in.user(fmt.Sprintf("u%d", i))
			wg.Go(func() {
				for j, p := range posts {
					// like, unlike, like, then unlike for odd users on b.
					seq := []string{"PUT", "DELETE", "PUT"}
					if j == 1 && i%2 == 1 {
						seq = append(seq, "DELETE")
					}
					for _, m := range seq {
						if r := in.do(m, "/v1/posts/"+p+"/like", tok, nil); r.status != 200 {
							t.Errorf("%s: %d", m, r.status)
						}
					}
					if seq[len(seq)-1] == "PUT" {
						mu.Lock()
						want[p]++
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		for _, p := range posts {
			testenv.Eventually(t, 30*time.Second, "SQL counts exact after redeliveries", func() bool {
				stats, rows := in.sqlLikes(p)
				return stats == want[p] && rows == want[p]
			})
			// The cached counter settles a moment after SQL's write, and
			// a process keeps a count it learned for a second.
			testenv.Eventually(t, 5*time.Second, "API like_count "+p+" exact", func() bool {
				n, _ := in.likeState(in.admin, p)
				return n == want[p]
			})
		}
		if cb.crashed.Load() < users {
			t.Errorf("%d first deliveries crashed; want every event's", cb.crashed.Load())
		}
		if n, err := cb.DeadLetters(context.Background(), feed.QueueLikes); err != nil || n != 0 {
			t.Errorf("dead letters = %d, %v; want 0", n, err)
		}
	})
}
