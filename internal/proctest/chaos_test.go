package proctest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

// TestChaos: while a celebrity with 50,000 followers posts (each post a
// 50,000-inbox fan-out) and 30 ordinary users publish, follow each other
// and read, the test
//
//   - flushes Redis: deletes every key feedd has there,
//   - kills -9 a work process (another one runs) and starts a new one,
//   - cuts every process's RabbitMQ connection for 3s (through a proxy),
//   - kills -9 the serve process and starts a new one on the same address,
//   - kills -9 a second work process and starts a new one.
//
// Clients retry what failed on the wire with the same Idempotency-Key, as
// real clients do. Afterwards every post that was answered 201 is in SQL
// once, every follow answered 204 is in SQL once with exact counts, every
// like answered 200 is in SQL once with exact like counts (in SQL and
// through the API), every inbox left in Redis holds exactly its owner's
// feed, and every one of the 50,030 feeds, read whole through the API,
// holds every post of everyone its owner follows exactly once, newest
// first. It runs on each SQL backend.
func TestChaos(t *testing.T) {
	t.Parallel()
	onBackends(t, chaos)
}

func chaos(t *testing.T, b backend) {
	const (
		followers   = 50000
		streamUsers = 30
		loadFor     = 26 * time.Second
	)
	s := newStack(t, b)
	s.migrate()
	mq, mqURL := proxied(t, s.amqpURL)
	env := s.with("FEEDD_AUTO_MIGRATE", "false", "FEEDD_AMQP_URL", mqURL,
		"FEEDD_BATCH_SIZE", "1000", "FEEDD_DIRECT_FANOUT", "500", "FEEDD_WORKERS", "4",
		"FEEDD_REFRESH_INTERVAL", "1h")
	// An hour between smart refreshes: a read then never patches an inbox
	// the fan-out missed, so the inboxes below show the fan-out itself.
	serveEnv := s.with("FEEDD_AUTO_MIGRATE", "false", "FEEDD_AMQP_URL", mqURL,
		"FEEDD_REFRESH_INTERVAL", "1h", "FEEDD_ADDR", freeAddr(t))
	serve := startReady(t, "serve 1", serveEnv, "serve")
	work := []*proc{startReady(t, "work 1", env, "work"), startReady(t, "work 2", env, "work")}
	api := serve.api()
	ctx := context.Background()

	// The graph: the celebrity's followers straight into SQL, with their
	// inboxes materialized; the stream users through the API, each
	// following the celebrity and having read its feed once.
	setup := time.Now()
	celeb, celebTok := api.newUser(s.admin, "celebrity")
	fans := s.followers(celeb, followers)
	w := newChaosWorld(t, s, serve, celeb, celebTok, streamUsers)
	w.liking = true
	t.Logf("setup: %d followers with inboxes and %d stream users in %v", followers, streamUsers, time.Since(setup).Round(time.Millisecond))

	// The load runs until stop; the chaos runs on the test goroutine.
	loadCtx, stop := context.WithCancel(ctx)
	var load errgroup.Group
	load.Go(func() error { return w.celebPosts(loadCtx, 2500*time.Millisecond) })
	for g := range 6 {
		load.Go(func() error { return w.streamOps(loadCtx, rand.New(rand.NewPCG(uint64(g), 7))) })
	}
	// Readers of a sample of the followers: after the flush their reads
	// rebuild their inboxes, which later posts must then reach by fan-out.
	sample := make([]int64, 0, 5000)
	for i := 0; i < followers; i += followers / cap(sample) {
		sample = append(sample, fans[i])
	}
	sampleToks := w.sign(s.env["FEEDD_JWT_SECRET"], sample)
	for g := range 2 {
		load.Go(func() error { return w.readLoop(loadCtx, sampleToks[g*len(sampleToks)/2:(g+1)*len(sampleToks)/2]) })
	}

	start := time.Now()
	at := func(d time.Duration, what string) {
		time.Sleep(time.Until(start.Add(d)))
		t.Logf("chaos at %v: %s", time.Since(start).Round(100*time.Millisecond), what)
	}
	kill := func(p *proc) {
		p.signal(syscall.SIGKILL)
		if st := p.wait(10 * time.Second); !killedBy(st, syscall.SIGKILL) {
			t.Fatalf("%s ended with %v; want killed by SIGKILL", p.name, st)
		}
	}
	// The flush comes first, so that the inboxes the readers rebuild after
	// it live through the kills and the cut that follow.
	at(3*time.Second, "flush Redis (every key under the test's prefix)")
	t.Logf("flush deleted %d keys", s.flushRedis())
	w.flushed.Store(true)

	at(7*time.Second, "kill -9 work 1 (work 2 runs on); start work 3")
	kill(work[0])
	work = append(work, startReady(t, "work 3", env, "work"))

	at(10*time.Second, "cut every RabbitMQ connection")
	mq.Cut()
	at(13*time.Second, "restore RabbitMQ")
	mq.Restore()

	at(16*time.Second, "kill -9 serve 1; start serve 2 on the same address")
	kill(serve)
	serve = startReady(t, "serve 2", serveEnv, "serve")

	at(20*time.Second, "kill -9 work 2; start work 4")
	kill(work[1])
	work = append(work, startReady(t, "work 4", env, "work"))

	at(loadFor, "stop the load")
	stop()
	if err := load.Wait(); err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Logf("load: %d celebrity posts, %d stream posts, %d follows (%d repeated), %d likes (%d repeated), %d feed reads; %d requests retried after a transport error, %d answered 429/503",
		len(w.posts[celeb]), w.streamPostCount(), w.followCount(), w.repeatFollows.Load(), w.likeCount(), w.repeatLikes.Load(), w.reads.Load(), w.retried.Load(), w.shed.Load())

	// Let the fan-out finish: nothing unsent in the outbox, nothing
	// waiting in the queues.
	settle := time.Now()
	testenv.Eventually(t, 90*time.Second, "the outbox and the queues are empty", func() bool {
		n, err := s.store.OutboxBacklog(ctx)
		return err == nil && n == 0 && s.queued("posts") == 0 && s.queued("tasks") == 0
	})

	// SQL: every post answered 201 exactly once, every follow answered
	// 204, and the counts equal the edges; every like answered 200, and
	// the like counts, in SQL and through the API.
	w.checkSQL(ctx, s)
	w.checkLikes(ctx, s)

	// Redis: every inbox that exists holds exactly its owner's feed.
	// Flushed inboxes of followers nobody read since are absent, which is
	// right: their next read rebuilds them.
	wantFan := reversed(slices.Sorted(slices.Values(w.posts[celeb])))
	present := s.waitExistingInboxes(fans, wantFan, 60*time.Second)
	t.Logf("fan-out settled %v after the load; %d of %d follower inboxes are in Redis (read since the flush) and all hold the %d celebrity posts exactly once",
		time.Since(settle).Round(time.Millisecond), present, followers, len(wantFan))
	// As many as the sample's readers read since the flush (each rebuilt
	// its inbox), up to 100: a loaded machine reads fewer.
	if want := min(100, int(w.rebuilt.Load())); present < want {
		t.Errorf("only %d follower inboxes exist after the load; want the readers' rebuilt ones (at least %d) among them", present, want)
	}

	// The API: every feed, whole.
	items := w.checkFeeds(ctx, s, fans, wantFan)
	s.requireNoDeadLetters()
	t.Logf("checked: %d posts and %d follow edges in SQL; %d feeds read whole through the API, %d feed items, each post exactly once; 0 dead letters",
		w.streamPostCount()+len(w.posts[celeb]), w.followCount()+streamUsers+followers, followers+streamUsers, items)
}

// chaosWorld is the load's record of what the API accepted: the truth the
// end state is checked against.
type chaosWorld struct {
	t    *testing.T
	base string
	http *http.Client

	celeb    int64
	celebTok string
	stream   []int64
	tokens   []string

	// seen, if set, hears of every answer (status 0: a transport error)
	// and how long it took.
	seen func(method, path string, status int, body []byte, took time.Duration)

	mu      sync.Mutex
	posts   map[int64][]int64        // author → ids answered 201, ascending
	all     []int64                  // every post answered 201
	follows map[int64]map[int64]bool // follower → followees answered 204
	likes   map[int64]map[int64]bool // user → posts whose like was answered 200
	// liking: the stream users like posts too.
	liking bool

	reads, retried, shed, repeatFollows, repeatLikes atomic.Int64
	// flushed is set once Redis was flushed; rebuilt counts the sample's
	// reads begun after it, each of which rebuilt its reader's inbox.
	flushed atomic.Bool
	rebuilt atomic.Int64
	// noRetryAfter counts the 503s that did not say when to retry.
	noRetryAfter atomic.Int64
}

// newChaosWorld creates n stream users through serve, each following the
// celebrity and having read its feed once (which materializes its inbox).
func newChaosWorld(t *testing.T, s *stack, serve *proc, celeb int64, celebTok string, n int) *chaosWorld {
	t.Helper()
	api := serve.api()
	w := &chaosWorld{
		t: t, base: serve.url(), http: &http.Client{Timeout: 30 * time.Second},
		celeb: celeb, celebTok: celebTok,
		posts:   map[int64][]int64{},
		follows: map[int64]map[int64]bool{},
		likes:   map[int64]map[int64]bool{},
	}
	for i := range n {
		id, tok := api.newUser(s.admin, "stream "+strconv.Itoa(i))
		api.must(204, "PUT", "/v1/me/following/"+feed.FormatID(celeb), tok, nil)
		api.feed(tok)
		w.stream = append(w.stream, id)
		w.tokens = append(w.tokens, tok)
		w.follows[id] = map[int64]bool{celeb: true}
		w.likes[id] = map[int64]bool{}
	}
	return w
}

// call sends one request, retrying what did not reach a verdict: transport
// errors (a killed serve process), 429/503 (shedding, a backend down) and
// 409 idempotency_key_in_flight, as package client does, for up to 60s:
// after the answer's Retry-After, or 50 ms without one.
// Any other status is returned. POST bodies carry their Idempotency-Key in
// hdr, so a retry of a post that was stored returns that post.
func (w *chaosWorld) call(ctx context.Context, method, path, token string, body any, hdr ...string) (int, []byte, error) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		wait := 50 * time.Millisecond
		req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), method, w.base+path, bytes.NewReader(raw))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		sent := time.Now()
		res, err := w.http.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == 503 && res.Header.Get("Retry-After") == "" {
				w.noRetryAfter.Add(1)
			}
			if w.seen != nil {
				w.seen(method, path, res.StatusCode, b, time.Since(sent))
			}
			if rerr == nil && res.StatusCode != 429 && res.StatusCode != 503 && !inFlight(res.StatusCode, b) {
				return res.StatusCode, b, nil
			}
			if rerr == nil {
				w.shed.Add(1)
			}
			if secs, perr := strconv.Atoi(res.Header.Get("Retry-After")); perr == nil && secs > 0 {
				wait = time.Duration(secs) * time.Second
			}
			err = fmt.Errorf("status %d, read %v", res.StatusCode, rerr)
		} else {
			if w.seen != nil {
				w.seen(method, path, 0, nil, time.Since(sent))
			}
			w.retried.Add(1)
		}
		if time.Now().After(deadline) {
			return 0, nil, fmt.Errorf("%s %s: no answer within 60s: %w", method, path, err)
		}
		time.Sleep(wait)
	}
}

// publish posts as author until it gets a verdict and records the id.
func (w *chaosWorld) publish(ctx context.Context, author int64, token, content string) error {
	key := "chaos-" + testenv.RandHex(8)
	status, b, err := w.call(ctx, "POST", "/v1/posts", token, map[string]any{"content": content}, "Idempotency-Key", key)
	if err != nil {
		return err
	}
	if status != 201 {
		return fmt.Errorf("publish by %d: status %d; want 201; body %s", author, status, b)
	}
	var p struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("publish by %d: %v: %s", author, err, b)
	}
	id, err := feed.ParseID(p.ID)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.posts[author] = append(w.posts[author], id)
	w.all = append(w.all, id)
	w.mu.Unlock()
	return nil
}

// inFlight reports a 409 idempotency_key_in_flight: the key's first
// request is not done, so the client is to retry shortly.
func inFlight(status int, body []byte) bool {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	return status == 409 && json.Unmarshal(body, &e) == nil && e.Error.Code == "idempotency_key_in_flight"
}

// celebPosts publishes a celebrity post every interval: each is a
// 50,000-inbox fan-out.
func (w *chaosWorld) celebPosts(ctx context.Context, every time.Duration) error {
	for i := 0; ctx.Err() == nil; i++ {
		if err := w.publish(ctx, w.celeb, w.celebTok, fmt.Sprintf("celebrity post %d", i)); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
	return nil
}

// streamOps is one client of the stream users: publishes, follows, likes
// and reads at random.
func (w *chaosWorld) streamOps(ctx context.Context, rng *rand.Rand) error {
	n := len(w.stream)
	for ctx.Err() == nil {
		i := rng.IntN(n)
		me, tok := w.stream[i], w.tokens[i]
		switch r := rng.IntN(100); {
		case r < 15 && w.liking:
			if err := w.like(ctx, rng, me, tok); err != nil {
				return err
			}
		case r < 60:
			if err := w.publish(ctx, me, tok, "stream post "+testenv.RandHex(4)); err != nil {
				return err
			}
		case r < 85:
			other := w.stream[rng.IntN(n)]
			if other == me {
				continue
			}
			w.mu.Lock()
			again := w.follows[me][other]
			w.mu.Unlock()
			if again {
				w.repeatFollows.Add(1) // idempotent: must not count twice
			}
			status, b, err := w.call(ctx, "PUT", "/v1/me/following/"+feed.FormatID(other), tok, nil)
			if err != nil {
				return err
			}
			if status != 204 {
				return fmt.Errorf("%d follows %d: status %d; want 204; body %s", me, other, status, b)
			}
			w.mu.Lock()
			w.follows[me][other] = true
			w.mu.Unlock()
		default:
			status, b, err := w.call(ctx, "GET", "/v1/me/feed?limit=50", tok, nil)
			if err != nil {
				return err
			}
			if status != 200 {
				return fmt.Errorf("feed of %d: status %d; want 200; body %s", me, status, b)
			}
			w.reads.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// like likes a random post of the world as me, until it gets a verdict,
// and records it.
func (w *chaosWorld) like(ctx context.Context, rng *rand.Rand, me int64, tok string) error {
	w.mu.Lock()
	if len(w.all) == 0 {
		w.mu.Unlock()
		return nil
	}
	post := w.all[rng.IntN(len(w.all))]
	again := w.likes[me][post]
	w.mu.Unlock()
	if again {
		w.repeatLikes.Add(1) // idempotent: must not count twice
	}
	status, b, err := w.call(ctx, "PUT", "/v1/posts/"+feed.FormatID(post)+"/like", tok, nil)
	if err != nil {
		return err
	}
	var st struct {
		LikedByMe bool `json:"liked_by_me"`
	}
	if status != 200 || json.Unmarshal(b, &st) != nil || !st.LikedByMe {
		return fmt.Errorf("%d likes %d: status %d; want 200 and liked_by_me; body %s", me, post, status, b)
	}
	w.mu.Lock()
	w.likes[me][post] = true
	w.mu.Unlock()
	return nil
}

// readLoop reads the first page of the given feeds round and round.
func (w *chaosWorld) readLoop(ctx context.Context, tokens []string) error {
	for i := 0; ctx.Err() == nil; i++ {
		after := w.flushed.Load()
		status, b, err := w.call(ctx, "GET", "/v1/me/feed?limit=20", tokens[i%len(tokens)], nil)
		if err != nil {
			return err
		}
		if status != 200 {
			return fmt.Errorf("follower feed: status %d; want 200; body %s", status, b)
		}
		w.reads.Add(1)
		if after && i < len(tokens) { // a reader's first read since the flush
			w.rebuilt.Add(1)
		}
	}
	return nil
}

// sign makes user tokens the way feedd does (HS256, sub, exp), without
// 50,000 calls to the admin API.
func (w *chaosWorld) sign(secret string, users []int64) []string {
	w.t.Helper()
	out := make([]string, len(users))
	exp := time.Now().Add(time.Hour).Unix()
	for i, u := range users {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"sub": feed.FormatID(u), "iat": time.Now().Unix(), "exp": exp,
		}).SignedString([]byte(secret))
		if err != nil {
			w.t.Fatal(err)
		}
		out[i] = tok
	}
	return out
}

func (w *chaosWorld) streamPostCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for a, ps := range w.posts {
		if a != w.celeb {
			n += len(ps)
		}
	}
	return n
}

// followCount is the number of distinct follows among stream users.
func (w *chaosWorld) followCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, f := range w.follows {
		n += len(f) - 1 // the celebrity, followed at setup
	}
	return n
}

// likeCount is the number of distinct likes answered 200.
func (w *chaosWorld) likeCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.likes {
		n += len(l)
	}
	return n
}

// likers returns each liked post's number of likers, as answered.
func (w *chaosWorld) likers() map[int64]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[int64]int64{}
	for _, l := range w.likes {
		for post := range l {
			out[post]++
		}
	}
	return out
}

// wantFeed is a stream user's feed: its own posts and every post of everyone it follows,
// newest first.
func (w *chaosWorld) wantFeed(user int64) []int64 {
	ids := slices.Clone(w.posts[user]) // a home feed holds the reader's own posts too
	for followee := range w.follows[user] {
		if followee != user {
			ids = append(ids, w.posts[followee]...)
		}
	}
	slices.Sort(ids)
	return reversed(ids)
}

// checkSQL compares SQL with what the API accepted.
func (w *chaosWorld) checkSQL(ctx context.Context, s *stack) {
	t := w.t
	t.Helper()
	db := s.store.DB()
	for author, want := range w.posts {
		got := queryIDs(ctx, t, db, "SELECT id FROM posts WHERE author_id = ? ORDER BY id", author)
		if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Fatalf("SQL posts of %d = %d %v; want the %d answered 201 %v, each once", author, len(got), got, len(want), want)
		}
	}
	for _, u := range w.stream {
		got := queryIDs(ctx, t, db, "SELECT followee_id FROM follows WHERE follower_id = ? ORDER BY followee_id", u)
		want := slices.Sorted(maps.Keys(w.follows[u]))
		if !slices.Equal(got, want) {
			t.Fatalf("SQL follows of %d = %v; want %v", u, got, want)
		}
	}
	// Counts equal the edges: no follow counted twice, repeats included.
	var bad int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM users u WHERE
		u.following_count <> (SELECT COUNT(*) FROM follows f WHERE f.follower_id = u.id) OR
		u.follower_count  <> (SELECT COUNT(*) FROM follows f WHERE f.followee_id = u.id)`).Scan(&bad)
	if err != nil || bad != 0 {
		t.Fatalf("users whose counts differ from their edges: %d (%v); want 0", bad, err)
	}
}

// checkLikes compares the likes in SQL, and the like counts in SQL and
// through the API, with the likes the API answered 200. Likes reach SQL
// in batches a little after their answer, so it polls until a deadline.
func (w *chaosWorld) checkLikes(ctx context.Context, s *stack) {
	t := w.t
	t.Helper()
	db := s.store.DB()
	want := w.likers()
	var diff string
	deadline := time.Now().Add(60 * time.Second)
	for {
		diff = ""
		for _, u := range w.stream {
			got := queryIDs(ctx, t, db, "SELECT post_id FROM likes WHERE user_id = ? AND liked = 1 ORDER BY post_id", u)
			if want := slices.Sorted(maps.Keys(w.likes[u])); !slices.Equal(got, want) {
				diff = fmt.Sprintf("SQL likes of %d = %v; want the %d answered 200 %v", u, got, len(want), want)
				break
			}
		}
		if diff == "" {
			// Every post's stored count equals its likes, and every liked
			// post has a count.
			var bad int
			err := db.QueryRowContext(ctx, `SELECT
				(SELECT COUNT(*) FROM post_stats s WHERE s.like_count <> (SELECT COUNT(*) FROM likes l WHERE l.post_id = s.post_id AND l.liked = 1)) +
				(SELECT COUNT(DISTINCT l.post_id) FROM likes l WHERE l.liked = 1 AND NOT EXISTS (SELECT 1 FROM post_stats s WHERE s.post_id = l.post_id))`).Scan(&bad)
			if err != nil || bad != 0 {
				diff = fmt.Sprintf("posts whose like_count differs from their likes: %d (%v); want 0", bad, err)
			}
		}
		if diff == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s: %s", diff)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Through the API, every liked post shows its exact count. A process
	// keeps a count it learned for a second, so a count may lag briefly.
	for post, n := range want {
		var got struct {
			LikeCount int64 `json:"like_count"`
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			status, b, err := w.call(ctx, "GET", "/v1/posts/"+feed.FormatID(post), w.tokens[0], nil)
			if err != nil || status != 200 || json.Unmarshal(b, &got) != nil {
				t.Fatalf("GET post %d: status %d, %v; want 200; body %s", post, status, err, b)
			}
			if got.LikeCount == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("post %d through the API: like_count %d; want %d, the likes answered 200%s", post, got.LikeCount, n, s.explainLikes(post))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func queryIDs(ctx context.Context, t *testing.T, db *sql.DB, query string, args ...any) []int64 {
	t.Helper()
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// checkFeeds reads every feed whole through the API, 16 at a time, and
// compares it with the truth; it returns how many items it checked. A feed
// may lag its last post by the fan-out's tail, so a mismatch is read again
// until a deadline.
func (w *chaosWorld) checkFeeds(ctx context.Context, s *stack, fans []int64, wantFan []int64) int64 {
	t := w.t
	t.Helper()
	users := slices.Concat(fans, w.stream)
	toks := w.sign(s.env["FEEDD_JWT_SECRET"], users)
	want := func(i int) []int64 {
		if i < len(fans) {
			return wantFan
		}
		return w.wantFeed(users[i])
	}
	var items atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range users {
		g.Go(func() error {
			deadline := time.Now().Add(30 * time.Second)
			for {
				got, err := w.feedAll(gctx, toks[i])
				if err != nil {
					return fmt.Errorf("feed of %d: %w", users[i], err)
				}
				if slices.Equal(got, want(i)) {
					items.Add(int64(len(got)))
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("feed of %d through the API = %d posts (%d distinct); want %d posts, each once:%s",
						users[i], len(got), len(slices.Compact(slices.Sorted(slices.Values(got)))), len(want(i)), s.explainFeed(users[i], got, want(i)))
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return items.Load()
}

// feedAll pages through a whole feed, 100 a page.
func (w *chaosWorld) feedAll(ctx context.Context, token string) ([]int64, error) {
	var ids []int64
	cursor := ""
	for range 1000 {
		status, b, err := w.call(ctx, "GET", "/v1/me/feed?limit=100&cursor="+url.QueryEscape(cursor), token, nil)
		if err != nil {
			return nil, err
		}
		if status != 200 {
			return nil, fmt.Errorf("status %d; want 200; body %s", status, b)
		}
		var page struct {
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			id, err := feed.ParseID(it.ID)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		if page.NextCursor == nil {
			return ids, nil
		}
		cursor = *page.NextCursor
	}
	return nil, fmt.Errorf("paging does not end")
}

// waitExistingInboxes waits until every reader's inbox that exists holds
// exactly want, and returns how many exist.
func (s *stack) waitExistingInboxes(readers, want []int64, within time.Duration) int {
	s.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for {
		var present, wrong atomic.Int64
		var example atomic.Value
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for chunk := range slices.Chunk(readers, 1000) {
			g.Go(func() error {
				for _, r := range chunk {
					pg, err := s.cache.InboxPage(gctx, r, 0, len(want)+10)
					if err != nil {
						return err
					}
					if !pg.Exists {
						continue
					}
					present.Add(1)
					if !slices.Equal(pg.IDs, want) {
						wrong.Add(1)
						example.Store(fmt.Sprintf("inbox of %d = %v", r, pg.IDs))
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			s.t.Fatalf("read inboxes: %v", err)
		}
		if wrong.Load() == 0 {
			return int(present.Load())
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("after %v, %d of %d existing inboxes are not exactly the %d posts %v; e.g. %v",
				within, wrong.Load(), present.Load(), len(want), want, example.Load())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// queued returns how many messages queue (unprefixed) holds, ready or
// unacked; a queue not declared yet holds none.
func (s *stack) queued(queue string) int {
	s.t.Helper()
	// Declare-ok counts ready messages only, not those a consumer holds;
	// the checks after this one therefore poll until their deadline.
	return s.inspect(queue).Messages
}

// flushRedis deletes every key feedd keeps in Redis, which is what a
// Redis restart without persistence (or FLUSHALL) does to feedd, and
// returns how many there were. It deletes by the test's prefix rather than
// flushing a database: the server is shared with other suites and other
// people's runs, which an actual FLUSHDB would hit too. It deletes them in
// one script, so that, as in a restart, every key goes at the same instant:
// a flush in batches while the load runs would leave states no restart
// leaves (a post's counter without the pending moves it holds).
func (s *stack) flushRedis() int {
	s.t.Helper()
	opt, err := redis.ParseURL(s.env["FEEDD_REDIS_URL"])
	if err != nil {
		s.t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	n, err := flushScript.Run(context.Background(), c, nil, s.env["FEEDD_REDIS_PREFIX"]+"*").Int()
	if err != nil {
		s.t.Fatalf("flush: %v", err)
	}
	return n
}

// flushScript deletes the keys matching ARGV[1]; it runs on one server
// (SCAN from a script names keys it was not given, which a Cluster would
// refuse).
var flushScript = redis.NewScript(`
local cursor, n = "0", 0
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 5000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    redis.call('UNLINK', k)
    n = n + 1
  end
until cursor == "0"
return n
`)

// explainLikes describes a post's like counter for a failure message: the
// cached counter, its tally and pending moves and move marks, and what
// SQL has.
func (s *stack) explainLikes(post int64) string {
	ctx := context.Background()
	c := s.redis
	var b strings.Builder
	key := func(kind string) string {
		return s.env["FEEDD_REDIS_PREFIX"] + "likes:" + kind + ":{" + strconv.FormatInt(post, 10) + "}"
	}
	n, _ := c.Get(ctx, key("n")).Result()
	tally, _ := c.HGetAll(ctx, key("t")).Result()
	pending, _ := c.ZRangeWithScores(ctx, key("p"), 0, -1).Result()
	marks, _ := c.ZRangeWithScores(ctx, key("m"), 0, -1).Result()
	fmt.Fprintf(&b, "\n  cache: counter %q, tally %v, pending %v, marks %v", n, tally, pending, marks)
	var count, seq int64
	_ = s.store.DB().QueryRowContext(ctx, "SELECT like_count, like_seq FROM post_stats WHERE post_id = ?", post).Scan(&count, &seq)
	fmt.Fprintf(&b, "\n  SQL: like_count %d, like_seq %d; rows:", count, seq)
	rows, err := s.store.DB().QueryContext(ctx, "SELECT user_id, liked, version FROM likes WHERE post_id = ? ORDER BY version", post)
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var user, liked, version int64
			if rows.Scan(&user, &liked, &version) == nil {
				fmt.Fprintf(&b, " (user %d liked %d version %d)", user, liked, version)
			}
		}
	}
	return b.String()
}

// explainFeed describes how a feed differs from what it should be, for a
// failure message: the posts missing and extra with their authors and
// times, when the reader followed those authors, and the reader's inbox.
func (s *stack) explainFeed(reader int64, got, want []int64) string {
	ctx := context.Background()
	var b strings.Builder
	describe := func(label string, ids []int64) {
		for _, id := range ids {
			var author int64
			_ = s.store.DB().QueryRowContext(ctx, "SELECT author_id FROM posts WHERE id = ?", id).Scan(&author)
			var followed int64
			_ = s.store.DB().QueryRowContext(ctx, "SELECT created_at FROM follows WHERE follower_id = ? AND followee_id = ?", reader, author).Scan(&followed)
			fmt.Fprintf(&b, "\n  %s post %d at %s by %d, followed at %s",
				label, id, feed.IDTime(id).Format("15:04:05.000"), author, time.UnixMilli(followed).UTC().Format("15:04:05.000"))
		}
	}
	describe("missing", slices.DeleteFunc(slices.Clone(want), func(id int64) bool { return slices.Contains(got, id) }))
	describe("extra", slices.DeleteFunc(slices.Clone(got), func(id int64) bool { return slices.Contains(want, id) }))
	pg, err := s.cache.InboxPage(ctx, reader, 0, 2000)
	fmt.Fprintf(&b, "\n  inbox: exists %v complete %v, %d ids (err %v); missing ones in it: ", pg.Exists, pg.Complete, len(pg.IDs), err)
	for _, id := range want {
		if !slices.Contains(got, id) {
			fmt.Fprintf(&b, "%v ", slices.Contains(pg.IDs, id))
		}
	}
	if len(pg.IDs) > 0 {
		fmt.Fprintf(&b, "\n  inbox from %s to %s", feed.IDTime(pg.IDs[len(pg.IDs)-1]).Format("15:04:05.000"), feed.IDTime(pg.IDs[0]).Format("15:04:05.000"))
	}
	return b.String()
}
