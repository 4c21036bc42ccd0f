package shards_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
)

// Moving shard 1 of 4 from the first server to the second while writers
// create, edit and delete users' posts on it and on the other shards:
// every write the router acknowledged is at the new place, once; no
// writer sees an error (the router runs the writes the fence refused
// again at the new place); the writes pause for under 2 s; the old place
// refuses writes; a second process that only reads follows within a few
// seconds; the outbox's ids go on above the old place's.
func TestMoveShardOnline(t *testing.T) {
	feedtest.RequireServices(t)
	for _, pg := range []bool{false, true} {
		name := "mysql"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) { testMoveShardOnline(t, pg) })
	}
}

func testMoveShardOnline(t *testing.T, pg bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const n, moving = 4, 1
	s := openSharded(t, n, pg)
	m := s.Map()
	from := m.DSN(moving)
	to := movePlace(t, pg, moving)

	// History on the moving shard, so that the copy takes a while.
	var users []feed.User
	var posts []feed.Post
	gen := feed.NewIDGen(nil)
	for i := range int64(1000) {
		id := i*n + moving
		users = append(users, feed.User{ID: id, Name: "old", CreatedAt: time.Now()})
		for range 10 {
			posts = append(posts, feed.Post{ID: gen.NextOn(id, n), AuthorID: id, Content: "old", CreatedAt: time.Now()})
		}
	}
	if err := s.BulkCreateUsers(ctx, users); err != nil {
		t.Fatal(err)
	}
	if err := s.BulkLoadPosts(ctx, posts); err != nil {
		t.Fatal(err)
	}
	// Follows among them: more than a page of the copy, under a key of
	// two columns.
	var edges [][2]int64
	for _, u := range users {
		for _, d := range []int64{1, 2, 3} {
			if v := u.ID + d*n; v < int64(len(users))*n {
				edges = append(edges, [2]int64{u.ID, v})
			}
		}
	}
	if err := s.BulkLoadFollows(ctx, edges); err != nil {
		t.Fatal(err)
	}

	// A second process that only reads.
	reader, err := shards.Open(ctx, m, sqlstore.Pools{Write: 4}, sqlstore.DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go reader.WatchMoves(watchCtx, time.Second)

	l := newLedger()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var nextUser atomic.Int64
	nextUser.Store(10_000)
	for w := range 4 {
		// One generator for all: two would hand out the same id now and
		// then (each starts a millisecond at a random point).
		wg.Go(func() { write(ctx, t, s, l, gen, &nextUser, n, moving, w, stop) })
	}
	time.Sleep(300 * time.Millisecond)
	before := s.Shard(moving)
	rep, err := shards.Move(ctx, m, moving, to, t.Logf)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("move: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // the writers go on at the new place
	close(stop)
	wg.Wait()

	t.Logf("moved shard %d in %s: %d rows copied, %d changes replayed in %d rounds, writes paused %s; rows %v",
		moving, rep.Took.Round(time.Millisecond), rep.Copied, rep.Replayed, rep.Rounds, rep.Pause, rep.Rows)
	t.Logf("writers: %d writes acknowledged (%d on shard %d), slowest %s", l.acked, l.ackedMoving, moving, l.slowest)
	if rep.Pause <= 0 || rep.Pause >= 2*time.Second {
		t.Errorf("the writes paused %s; want more than 0 and under 2 s", rep.Pause)
	}
	if l.ackedMoving == 0 {
		t.Fatal("no write on the moving shard was acknowledged")
	}
	if s.Shard(moving) == before {
		t.Error("the writers' router still writes shard 1 at its old place")
	}
	if _, err := shards.Move(ctx, m, moving, to, nil); err == nil {
		t.Error("a second move of the shard from its old place went through")
	}
	if got := rep.Rows["follows"]; got < int64(len(edges)) {
		t.Errorf("moved %d follows, want the %d of the history and those the writers made before the switch", got, len(edges))
	}
	if got, want := rep.Map.DSN(moving), to; got != want {
		t.Errorf("the new map places shard %d elsewhere than the target", moving)
	}
	for k := range n {
		if k != moving && rep.Map.DSN(k) != m.DSN(k) {
			t.Errorf("the new map moved shard %d too", k)
		}
	}

	// Every acknowledged write is at the new place, and nothing else.
	dstDSN, _, _, _ := shards.ShardDSN(to, moving)
	dst := rawDB(t, dstDSN, pg)
	l.check(ctx, t, dst, n, moving, len(users), len(posts))

	// The old place refuses writes for good.
	srcDSN, _, _, _ := shards.ShardDSN(from, moving)
	src := openOne(ctx, t, srcDSN, pg)
	_, err = src.CreateUser(ctx, feed.User{ID: 999_999*n + moving, Name: "late", CreatedAt: time.Now()})
	if !sqlstore.IsMoving(err) {
		t.Errorf("a write at the old place after the move: %v, want the move's refusal", err)
	}

	// The outbox's ids go on above the old place's.
	var srcTop, dstTop int64
	rawDB(t, srcDSN, pg).QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM outbox").Scan(&srcTop)
	author := int64(5*n + moving)
	p := feed.Post{ID: gen.NextOn(author, n), AuthorID: author, Content: "after", CreatedAt: time.Now()}
	if _, _, err := s.CreatePost(ctx, p, feed.Idempotency{}); err != nil {
		t.Fatalf("a post after the move: %v", err)
	}
	if err := dst.QueryRowContext(ctx, "SELECT MAX(id) FROM outbox").Scan(&dstTop); err != nil || dstTop <= srcTop {
		t.Errorf("the new place's newest outbox id is %d (%v); want above the old place's %d", dstTop, err, srcTop)
	}

	// A relay of the shard's outbox relays at the new place.
	relayed, err := s.Outbox(moving).RelayOutbox(ctx, 100_000, func(context.Context, []feed.OutboxEvent) error { return nil })
	if err != nil || relayed == 0 {
		t.Errorf("relayed %d events of shard %d after the move (%v); want its waiting events", relayed, moving, err)
	}

	// The reader follows within a few seconds, and sees the post.
	readerSees(ctx, t, reader, p.ID, "after")

	// And back: the old place forgets it moved and takes the shard again;
	// both routers follow.
	var there int64
	if err := dst.QueryRowContext(ctx, "SELECT COUNT(*) FROM posts").Scan(&there); err != nil {
		t.Fatal(err)
	}
	back, err := shards.Move(ctx, rep.Map, moving, from, t.Logf)
	if err != nil {
		t.Fatalf("move back: %v", err)
	}
	if back.Rows["posts"] != there {
		t.Errorf("moved back %d posts, want %d", back.Rows["posts"], there)
	}
	p2 := feed.Post{ID: gen.NextOn(author, n), AuthorID: author, Content: "back", CreatedAt: time.Now()}
	if _, _, err := s.CreatePost(ctx, p2, feed.Idempotency{}); err != nil {
		t.Fatalf("a post after the move back: %v", err)
	}
	var at int
	if err := rawDB(t, srcDSN, pg).QueryRowContext(ctx, rebindPG(dst, "SELECT COUNT(*) FROM posts WHERE id = ?"), p2.ID).Scan(&at); err != nil || at != 1 {
		t.Errorf("the post after the move back is not at the first place: %d (%v)", at, err)
	}
	readerSees(ctx, t, reader, p2.ID, "back")
}

// readerSees waits up to 4 s for reader to read post id with content:
// a process that only reads follows a move within WatchMoves' interval.
func readerSees(ctx context.Context, t *testing.T, reader *shards.Store, id int64, content string) {
	t.Helper()
	start := time.Now()
	for {
		got, err := reader.Post(ctx, id)
		if err == nil && got.Content == content {
			t.Logf("the reading process saw post %d after %s", id, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 4*time.Second {
			t.Fatalf("the reading process still does not see post %d: %v", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// movePlace is a place on the second server, under a prefix of the
// test's own, for shard k to move to; its database goes when t ends.
func movePlace(t *testing.T, pg bool, k int) string {
	t.Helper()
	prefix := "feedd_mv_" + testenv.RandHex(4)
	server, driver := testenv.ShardMySQLDSN(), "mysql"
	var place string
	if pg {
		server, driver = testenv.ShardPostgresDSN(), "pgx"
		u, err := url.Parse(server)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + prefix
		place = u.String()
	} else {
		cfg, err := mysql.ParseDSN(server)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DBName = prefix
		place = cfg.FormatDSN()
	}
	t.Cleanup(func() {
		db, err := sql.Open(driver, server)
		if err != nil {
			return
		}
		defer db.Close()
		stmt := "DROP DATABASE IF EXISTS " + shards.DatabaseName(prefix, k)
		if pg {
			stmt += " WITH (FORCE)"
		}
		db.Exec(stmt)
	})
	return place
}

func rawDB(t *testing.T, dsn string, pg bool) *sql.DB {
	t.Helper()
	driver := "mysql"
	if pg {
		driver = "pgx"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openOne(ctx context.Context, t *testing.T, dsn string, pg bool) *sqlstore.Store {
	t.Helper()
	var st *sqlstore.Store
	var err error
	if pg {
		st, err = sqlstore.OpenPostgres(ctx, dsn)
	} else {
		st, err = sqlstore.OpenMySQL(ctx, dsn)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// ledger is what the router acknowledged to the writers.
type ledger struct {
	mu          sync.Mutex
	users       map[int64]bool
	posts       map[int64]wantPost
	markers     map[int64]int64
	keys        map[int64]int64 // post -> author, of the posts made with a key
	follows     map[[2]int64]bool
	acked       int
	ackedMoving int
	slowest     time.Duration
}

type wantPost struct {
	author  int64
	content string
	deleted bool
}

func newLedger() *ledger {
	return &ledger{users: map[int64]bool{}, posts: map[int64]wantPost{}, markers: map[int64]int64{}, keys: map[int64]int64{}, follows: map[[2]int64]bool{}}
}

func (l *ledger) ack(shard, moving int, took time.Duration, f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked++
	if shard == moving {
		l.ackedMoving++
	}
	l.slowest = max(l.slowest, took)
	f()
}

// write creates users, and posts that it edits and deletes, half on the
// moving shard, until stop; every error is the test's failure.
func write(ctx context.Context, t *testing.T, s *shards.Store, l *ledger, gen *feed.IDGen, nextUser *atomic.Int64, n, moving, w int, stop chan struct{}) {
	rnd := rand.New(rand.NewPCG(uint64(w), 7))
	var elsewhere int64 // the writer's last user off the moving shard
	do := func(shard int, what string, f func() error, ok func()) bool {
		start := time.Now()
		if err := f(); err != nil {
			t.Errorf("writer %d: %s on shard %d: %v", w, what, shard, err)
			return false
		}
		l.ack(shard, moving, time.Since(start), ok)
		return true
	}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		shard := moving
		if rnd.IntN(2) == 0 {
			shard = []int{0, 2, 3}[rnd.IntN(3)]
		}
		id := nextUser.Add(1)*int64(n) + int64(shard)
		if !do(shard, "create user", func() error {
			_, err := s.CreateUser(ctx, feed.User{ID: id, Name: "w", CreatedAt: time.Now()})
			return err
		}, func() { l.users[id] = true }) {
			return
		}
		var ids []int64
		for j := range 3 {
			p := feed.Post{ID: gen.NextOn(id, n), AuthorID: id, Content: fmt.Sprintf("p%d", j), CreatedAt: time.Now()}
			// The first post of each user with an idempotency key: a
			// table whose key holds a string.
			var idem feed.Idempotency
			if j == 0 {
				sum := sha256.Sum256([]byte(p.Content))
				idem = feed.Idempotency{Key: fmt.Sprintf("key-%d", p.ID), Fingerprint: sum[:], TTL: time.Hour}
			}
			if !do(shard, "create post", func() error {
				_, _, err := s.CreatePost(ctx, p, idem)
				return err
			}, func() {
				l.posts[p.ID] = wantPost{author: id, content: p.Content}
				if idem.Key != "" {
					l.keys[p.ID] = id
				}
			}) {
				return
			}
			ids = append(ids, p.ID)
		}
		edited := fmt.Sprintf("edited %d", i)
		if !do(shard, "edit post", func() error {
			_, err := s.EditPost(ctx, ids[0], id, feed.PostEdit{Content: &edited})
			return err
		}, func() { l.posts[ids[0]] = wantPost{author: id, content: edited} }) {
			return
		}
		if !do(shard, "delete post", func() error { return s.DeletePost(ctx, ids[1], id) }, func() {
			p := l.posts[ids[1]]
			p.deleted = true
			l.posts[ids[1]] = p
		}) {
			return
		}
		if !do(shard, "set marker", func() error {
			_, err := s.SetMarker(ctx, id, ids[2], time.Now())
			return err
		}, func() { l.markers[id] = ids[2] }) {
			return
		}
		// A follow between the moving shard and another: its truth on
		// the follower's shard, its mirror synced onto the followee's,
		// one of them the moving shard's.
		edge := [2]int64{id, int64(rnd.IntN(1000))*int64(n) + int64(moving)} // a history user
		if shard == moving {
			edge[1] = elsewhere
		} else {
			elsewhere = id
		}
		if edge[1] != 0 && !do(shard, "follow", func() error {
			_, err := s.Follow(ctx, edge[0], edge[1])
			return err
		}, func() { l.follows[edge] = true }) {
			return
		}
	}
}

// check finds every acknowledged write of the moving shard in db, its
// new database, and nothing more: history users and posts plus the
// acknowledged ones.
func (l *ledger) check(ctx context.Context, t *testing.T, db *sql.DB, n, moving, oldUsers, oldPosts int) {
	t.Helper()
	wantUsers, wantPosts, wantMarkers := oldUsers, oldPosts, 0
	for id := range l.users {
		if int(id)%n == moving {
			wantUsers++
			var got int
			if err := db.QueryRowContext(ctx, rebindPG(db, "SELECT COUNT(*) FROM users WHERE id = ?"), id).Scan(&got); err != nil || got != 1 {
				t.Errorf("user %d: %d rows at the new place (%v), want 1", id, got, err)
			}
		}
	}
	for id, want := range l.posts {
		if int(want.author)%n != moving {
			continue
		}
		wantPosts++
		var content string
		var deleted sql.NullInt64
		err := db.QueryRowContext(ctx, rebindPG(db, "SELECT content, deleted_at FROM posts WHERE id = ?"), id).Scan(&content, &deleted)
		if err != nil || content != want.content || deleted.Valid != want.deleted {
			t.Errorf("post %d at the new place: %q deleted %v (%v); want %q deleted %v", id, content, deleted.Valid, err, want.content, want.deleted)
		}
	}
	for id, last := range l.markers {
		if int(id)%n != moving {
			continue
		}
		wantMarkers++
		var got int64
		if err := db.QueryRowContext(ctx, rebindPG(db, "SELECT last_read_id FROM markers WHERE user_id = ?"), id).Scan(&got); err != nil || got != last {
			t.Errorf("marker of %d at the new place: %d (%v), want %d", id, got, err, last)
		}
	}
	wantKeys := 0
	for post, author := range l.keys {
		if int(author)%n != moving {
			continue
		}
		wantKeys++
		var got int64
		err := db.QueryRowContext(ctx, rebindPG(db, "SELECT post_id FROM idempotency WHERE idem_key = ?"), fmt.Sprintf("key-%d", post)).Scan(&got)
		if err != nil || got != post {
			t.Errorf("idempotency key of post %d at the new place: %d (%v)", post, got, err)
		}
	}
	// Each acknowledged follow, its truth or its mirror, is there once.
	for e := range l.follows {
		var got int
		q := fmt.Sprintf("SELECT COUNT(*) FROM follows WHERE follower_id = %d AND followee_id = %d", e[0], e[1])
		if err := db.QueryRowContext(ctx, q).Scan(&got); err != nil || got != 1 {
			t.Errorf("follow %d -> %d: %d rows at the new place (%v), want 1", e[0], e[1], got, err)
		}
	}
	for table, want := range map[string]int{"users": wantUsers, "posts": wantPosts, "markers": wantMarkers, "idempotency": wantKeys} {
		var got int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&got); err != nil || got != want {
			t.Errorf("%s at the new place: %d rows (%v), want %d", table, got, err, want)
		}
	}
}

// rebindPG turns a query's one ? into $1 for a raw PostgreSQL handle.
func rebindPG(db *sql.DB, q string) string {
	if _, ok := db.Driver().(*mysql.MySQLDriver); ok {
		return q
	}
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			return q[:i] + "$1" + q[i+1:]
		}
	}
	return q
}

func TestMapWith(t *testing.T) {
	m, err := shards.Parse(8, "0-3=a@tcp(h1)/f;4-7=a@tcp(h2)/f")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k    int
		to   string
		want string
	}{
		{1, "a@tcp(h3)/f", "0=a@tcp(h1)/f;1=a@tcp(h3)/f;2-3=a@tcp(h1)/f;4-7=a@tcp(h2)/f"},
		{3, "a@tcp(h2)/f", "0-2=a@tcp(h1)/f;3-7=a@tcp(h2)/f"},
		{0, "a@tcp(h3)/f", "0=a@tcp(h3)/f;1-3=a@tcp(h1)/f;4-7=a@tcp(h2)/f"},
	} {
		got := m.With(c.k, c.to).Spec()
		if got != c.want {
			t.Errorf("shard %d to %s: %s; want %s", c.k, c.to, got, c.want)
		}
		if _, err := shards.Parse(8, got); err != nil {
			t.Errorf("%s does not parse: %v", got, err)
		}
	}
}

// A move that stops half way (here its context ends during the copy)
// gives the shard back: writes go on at the old place, and a later move
// starts over and finishes.
func TestMoveStoppedGivesBack(t *testing.T) {
	feedtest.RequireServices(t)
	ctx := context.Background()
	const n, moving = 4, 1
	s := openSharded(t, n, false)
	m := s.Map()
	to := movePlace(t, false, moving)
	for id := int64(1); id <= 40; id++ {
		if _, err := s.CreateUser(ctx, feed.User{ID: id, Name: "u", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	stopCtx, stop := context.WithCancel(ctx)
	_, err := shards.Move(stopCtx, m, moving, to, func(format string, a ...any) {
		if msg := fmt.Sprintf(format, a...); strings.Contains(msg, "copied posts") {
			stop()
		}
	})
	if err == nil {
		t.Fatal("a move whose context ended during the copy finished")
	}
	t.Logf("the stopped move: %v", err)
	before := s.Shard(moving)
	if _, err := s.CreateUser(ctx, feed.User{ID: 41*n + moving, Name: "after", CreatedAt: time.Now()}); err != nil {
		t.Fatalf("a write after the stopped move: %v", err)
	}
	if s.Shard(moving) != before {
		t.Error("the router left the old place after a stopped move")
	}
	rep, err := shards.Move(ctx, m, moving, to, nil)
	if err != nil {
		t.Fatalf("the move after a stopped one: %v", err)
	}
	if got := rep.Rows["users"]; got != 11 {
		t.Errorf("moved %d users of shard 1, want 11", got)
	}
}
