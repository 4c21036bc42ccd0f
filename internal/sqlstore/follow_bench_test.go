package sqlstore

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// BenchmarkFollow measures what migration 0004's index on
// users(follower_count) costs the write path on MySQL / MariaDB: every
// Follow and Unfollow moves the followee's follower_count, so InnoDB
// moves its entry in that index too. index=without is the baseline, the
// same database with the index dropped, in the same run.
//
// One op is a Follow of a new edge then its Unfollow, so the graph keeps
// its size: 100,000 users who follow 10 each, followees drawn from a Zipf
// law, counts equal to the edges. followee=one sends every follow to the
// most followed user (a hot row) from many distinct followers;
// followee=many to a different followee each time. conc=16 runs 16 of
// them at once (GOMAXPROCS permitting), as real follows come. follows/s
// counts ops, each a follow and its unfollow; ns/follow and ns/unfollow
// are the mean latency of each call; retries/op the deadlocks write
// retried. Subtests are unanchored regexps: index=with$ runs one variant.
// A followee's count swings between two values here, where a growing
// account's climbs; the index entry moves within one leaf page either way.
//
//	go test -run x -bench 'Follow/index=with$' -benchtime 3s ./internal/sqlstore/
func BenchmarkFollow(b *testing.B) {
	const (
		users     = 100_000
		following = 10
	)
	newDB := setupMySQL(b)
	g := zipfGraph(users, following)

	for _, variant := range []struct {
		name string
		drop bool
	}{{"index=with", false}, {"index=without", true}} {
		b.Run(variant.name, func(b *testing.B) {
			ctx := b.Context()
			s := newDB(b).open(b)
			if err := s.Migrate(ctx); err != nil {
				b.Fatalf("Migrate: %v", err)
			}
			// The graph goes in through the bulk API: one transaction
			// of multi-row INSERTs, counts as given.
			if err := s.BulkLoadUsers(ctx, g.users); err != nil {
				b.Fatal(err)
			}
			if err := s.BulkLoadFollows(ctx, g.edges); err != nil {
				b.Fatal(err)
			}
			if variant.drop {
				if _, err := s.DB().ExecContext(ctx, "ALTER TABLE users DROP INDEX users_follower_count"); err != nil {
					b.Fatal(err)
				}
			}
			var indexed int
			if err := s.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.statistics
				WHERE table_schema = DATABASE() AND table_name = 'users' AND index_name = 'users_follower_count'`).Scan(&indexed); err != nil {
				b.Fatal(err)
			}
			if (indexed > 0) == variant.drop {
				b.Fatalf("index users_follower_count: got %d entries in the catalog; want it dropped: %v", indexed, variant.drop)
			}

			for _, shape := range []struct {
				name  string
				pairs [][2]int64
			}{{"one", g.hotPairs()}, {"many", g.spreadPairs()}} {
				b.Run("followee="+shape.name+",conc=1", func(b *testing.B) {
					m := startFollowMetrics(s)
					n := 0
					for b.Loop() {
						if err := followUnfollow(b, s, shape.pairs[n%len(shape.pairs)], m); err != nil {
							b.Fatal(err)
						}
						n++
					}
					m.report(b, s, n)
				})
				perProc := max(1, 16/runtime.GOMAXPROCS(0))
				b.Run(fmt.Sprintf("followee=%s,conc=%d", shape.name, perProc*runtime.GOMAXPROCS(0)), func(b *testing.B) {
					m := startFollowMetrics(s)
					var next atomic.Int64
					b.SetParallelism(perProc)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							i := next.Add(1) - 1
							if err := followUnfollow(b, s, shape.pairs[i%int64(len(shape.pairs))], m); err != nil {
								b.Error(err)
								return
							}
						}
					})
					m.report(b, s, int(next.Load()))
				})
			}
		})
	}
}

// followMetrics sums the latencies of one sub-benchmark's calls.
type followMetrics struct {
	follow, unfollow atomic.Int64 // nanoseconds
	rollbacks        int64        // at the start
}

func startFollowMetrics(s *Store) *followMetrics {
	return &followMetrics{rollbacks: rollbacks(s)}
}

func (m *followMetrics) report(b *testing.B, s *Store, n int) {
	if n == 0 {
		return
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "follows/s")
	b.ReportMetric(float64(m.follow.Load())/float64(n), "ns/follow")
	b.ReportMetric(float64(m.unfollow.Load())/float64(n), "ns/unfollow")
	b.ReportMetric(float64(rollbacks(s)-m.rollbacks)/float64(n), "retries/op")
}

// rollbacks counts the transactions s rolled back: in this benchmark only
// write's deadlock retries do.
func rollbacks(s *Store) int64 {
	var n int64
	for _, c := range s.Statements() {
		if c.Verb == "rollback" {
			n += c.N
		}
	}
	return n
}

// followUnfollow makes p[0] follow p[1] and unfollow them again, both of
// which must change the graph.
func followUnfollow(b *testing.B, s *Store, p [2]int64, m *followMetrics) error {
	ctx := b.Context()
	t0 := time.Now()
	added, err := s.Follow(ctx, p[0], p[1])
	if err != nil || !added {
		return fmt.Errorf("Follow(%d, %d): got %v, %v; want a new edge", p[0], p[1], added, err)
	}
	t1 := time.Now()
	removed, err := s.Unfollow(ctx, p[0], p[1])
	if err != nil || !removed {
		return fmt.Errorf("Unfollow(%d, %d): got %v, %v; want the edge removed", p[0], p[1], removed, err)
	}
	m.follow.Add(int64(t1.Sub(t0)))
	m.unfollow.Add(int64(time.Since(t1)))
	return nil
}

// benchGraph is a synthetic follow graph: user i+1 follows follows[i].
type benchGraph struct {
	users   []feed.User
	edges   [][2]int64 // by follower, then followee
	follows [][]int64  // sorted
}

// zipfGraph makes n users who follow k each; user 1 is the most
// followed, and popularity falls with the id by a Zipf law.
func zipfGraph(n, k int) *benchGraph {
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, uint64(n-1))
	g := &benchGraph{users: make([]feed.User, n), follows: make([][]int64, n)}
	for i := range g.users {
		g.users[i] = feed.User{ID: int64(i + 1), Name: fmt.Sprintf("user %d", i+1)}
	}
	for i := range n {
		me := int64(i + 1)
		for len(g.follows[i]) < k {
			to := int64(z.Uint64()) + 1
			if to != me && !slices.Contains(g.follows[i], to) {
				g.follows[i] = append(g.follows[i], to)
			}
		}
		slices.Sort(g.follows[i])
		for _, to := range g.follows[i] {
			g.edges = append(g.edges, [2]int64{me, to})
			g.users[i].FollowingCount++
			g.users[to-1].FollowerCount++
		}
	}
	return g
}

func (g *benchGraph) follow(from, to int64) bool {
	_, ok := slices.BinarySearch(g.follows[from-1], to)
	return ok
}

// hotPairs are edges to user 1 from every user who does not follow them,
// in random order.
func (g *benchGraph) hotPairs() [][2]int64 {
	var pairs [][2]int64
	for _, u := range g.users[1:] {
		if !g.follow(u.ID, 1) {
			pairs = append(pairs, [2]int64{u.ID, 1})
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	return pairs
}

// spreadPairs are new edges, one to every user in random order, each from
// a random follower.
func (g *benchGraph) spreadPairs() [][2]int64 {
	r := rand.New(rand.NewPCG(5, 6))
	n := int64(len(g.users))
	pairs := make([][2]int64, 0, n)
	for _, i := range r.Perm(int(n)) {
		to := int64(i + 1)
		for {
			from := r.Int64N(n) + 1
			if from != to && !g.follow(from, to) {
				pairs = append(pairs, [2]int64{from, to})
				break
			}
		}
	}
	return pairs
}
