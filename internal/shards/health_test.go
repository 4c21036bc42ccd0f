package shards_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
	"github.com/feedd/feedd/internal/testenv"
	"github.com/feedd/feedd/internal/testproxy"
)

// When the server of some shards dies, a read that may be partial (its
// context carries feed.Gaps) is answered by the other shards and says
// what it missed; a read that may not be partial fails; and once the
// server is back, reads are whole again.
func TestDeadShardServer(t *testing.T) {
	feedtest.RequireServices(t)
	ctx := context.Background()
	// Shards 2 and 3 on the second server, reached through a proxy that
	// the test cuts.
	spec := testenv.ShardSpec(t, 4, false)
	m, err := shards.Parse(4, spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mysql.ParseDSN(testenv.ShardMySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	target := cfg.Addr
	proxy, err := testproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	m.Places[1].DSN = strings.Replace(m.Places[1].DSN, target, proxy.Addr(), 1)
	if err := shards.Migrate(ctx, m); err != nil {
		t.Fatal(err)
	}
	s, err := shards.Open(ctx, m, sqlstore.Pools{Write: 8}, sqlstore.DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	watch, stop := context.WithCancel(ctx)
	defer stop()
	go s.Watch(watch, 100*time.Millisecond)

	var users []feed.User
	for id := int64(1); id <= 4; id++ {
		users = append(users, feed.User{ID: id, Name: "u", CreatedAt: time.Now()})
	}
	if err := s.BulkCreateUsers(ctx, users); err != nil {
		t.Fatal(err)
	}
	// 1 follows everyone: 2 and 3 live on the second server.
	if err := s.BulkLoadFollows(ctx, [][2]int64{{1, 2}, {1, 3}, {1, 4}}); err != nil {
		t.Fatal(err)
	}
	gen := feed.NewIDGen(nil)
	byAuthor := map[int64]int64{}
	var all []int64
	for author := int64(1); author <= 4; author++ {
		p := feed.Post{ID: gen.NextOn(author, 4), AuthorID: author, Content: "p", CreatedAt: time.Now()}
		if _, _, err := s.CreatePost(ctx, p, feed.Idempotency{}); err != nil {
			t.Fatal(err)
		}
		byAuthor[author] = p.ID
		all = append(all, p.ID)
	}
	slices.Reverse(all)

	proxy.Cut()
	gctx, gaps := feed.WithGaps(ctx)
	got, err := s.FeedPostIDs(gctx, 1, 0, 0, 10)
	if err != nil {
		t.Fatalf("partial feed with shards 2 and 3 down: %v", err)
	}
	want := []int64{byAuthor[4], byAuthor[1]} // shards 0 and 1
	slices.Sort(want)
	slices.Reverse(want)
	if !slices.Equal(got, want) || !gaps.Any() {
		t.Fatalf("partial feed = %v (gaps %v), want %v and gaps", got, gaps.Any(), want)
	}
	gctx, gaps = feed.WithGaps(ctx)
	posts, err := s.Posts(gctx, all)
	if err != nil || len(posts) != 2 {
		t.Fatalf("partial Posts = %v, %v; want the 2 posts of the live shards", posts, err)
	}
	if !gaps.Unknown(byAuthor[2]) || !gaps.Unknown(byAuthor[3]) || gaps.Unknown(byAuthor[1]) {
		t.Fatalf("gaps should name the posts of shards 2 and 3 as unknown, and only them")
	}
	if _, err := s.FeedPostIDs(ctx, 1, 0, 0, 10); err == nil {
		t.Fatal("a read that may not be partial succeeded with two shards down")
	}
	if s.Up(2) || !s.Up(0) {
		t.Fatalf("health: shard 2 up %v, shard 0 up %v", s.Up(2), s.Up(0))
	}
	// Writes on the live shards go on.
	p := feed.Post{ID: gen.NextOn(4, 4), AuthorID: 4, Content: "while 2 and 3 are down", CreatedAt: time.Now()}
	if _, _, err := s.CreatePost(ctx, p, feed.Idempotency{}); err != nil {
		t.Fatalf("publish on a live shard: %v", err)
	}

	proxy.Restore()
	testenv.Eventually(t, 10*time.Second, "shard 2 seen up again", func() bool { return s.Up(2) && s.Up(3) })
	gctx, gaps = feed.WithGaps(ctx)
	got, err = s.FeedPostIDs(gctx, 1, 0, 0, 10)
	if err != nil || len(got) != 5 || gaps.Any() {
		t.Fatalf("feed after the server's return = %v, %v (gaps %v); want all 5", got, err, gaps.Any())
	}
}
