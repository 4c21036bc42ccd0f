package sqlstore

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

func testFollowBatch(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2, 3, 4, 5, 6)
	mustFollow(t, s, 1, 3) // there before the batch
	mustFollow(t, s, 4, 1)
	if _, err := s.Block(ctx, 5, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeleteUser(ctx, 6); err != nil {
		t.Fatal(err)
	}
	E := func(a, b int64) feed.Edge { return feed.Edge{Follower: a, Followee: b} }

	follow := []feed.Edge{
		E(1, 2),  // new
		E(1, 3),  // there already
		E(1, 2),  // repeated in the batch
		E(2, 5),  // 5 blocks 2
		E(5, 2),  // and the other way
		E(1, 99), // unknown
		E(6, 1),  // deleted
		E(2, 1),  // new
		E(3, 1),  // new, then unfollowed below
	}
	unfollow := []feed.Edge{
		E(4, 1),  // there
		E(4, 1),  // gone by now
		E(3, 1),  // followed above
		E(2, 3),  // never was
		E(99, 1), // unknown
		E(2, 2),  // oneself: nothing to undo
	}
	f, u, err := s.FollowBatch(ctx, follow, unfollow)
	if err != nil {
		t.Fatal(err)
	}
	wantF := []string{"created", "exists", "exists", "blocked", "blocked", "unknown_user", "unknown_user", "created", "created"}
	wantU := []string{"removed", "absent", "removed", "absent", "unknown_user", "absent"}
	if !slices.Equal(f, wantF) || !slices.Equal(u, wantU) {
		t.Fatalf("FollowBatch: got\n%v\n%v\nwant\n%v\n%v", f, u, wantF, wantU)
	}
	for _, c := range []struct {
		a, b int64
		want bool
	}{{1, 2, true}, {1, 3, true}, {2, 1, true}, {3, 1, false}, {4, 1, false}, {2, 5, false}, {5, 2, false}} {
		if got, err := isFollowing(ctx, s, c.a, c.b); err != nil || got != c.want {
			t.Errorf("%d follows %d: got %v, %v; want %v", c.a, c.b, got, err, c.want)
		}
	}
	wantCounts(t, s, 1, 1, 2) // followed by 2; follows 2, 3
	wantCounts(t, s, 2, 1, 1)
	wantCounts(t, s, 3, 1, 0)
	wantCounts(t, s, 4, 0, 0)
	wantCounts(t, s, 5, 0, 0)

	// The same batch again changes nothing and says so.
	f, u, err = s.FollowBatch(ctx, follow[:2], unfollow[:1])
	if err != nil || !slices.Equal(f, []string{"exists", "exists"}) || !slices.Equal(u, []string{"absent"}) {
		t.Fatalf("FollowBatch again: got %v %v %v", f, u, err)
	}
	wantCounts(t, s, 1, 1, 2)

	// Bad batches are refused whole.
	wantCode(t, func() error { _, _, err := s.FollowBatch(ctx, []feed.Edge{E(1, 4), E(2, 2)}, nil); return err }(), feed.EINVALID)
	wantCode(t, func() error { _, _, err := s.FollowBatch(ctx, []feed.Edge{E(1, 4), E(0, 2)}, nil); return err }(), feed.EINVALID)
	wantCode(t, func() error {
		_, _, err := s.FollowBatch(ctx, make([]feed.Edge, 600), make([]feed.Edge, 401))
		return err
	}(), feed.EBATCHTOOLARGE)
	if got, _ := isFollowing(ctx, s, 1, 4); got {
		t.Fatal("a refused batch made a follow")
	}
	// A full batch of 1,000 pairs, each with a follower of its own, both
	// ways: more terms than one statement may name.
	var many []feed.Edge
	fans := make([]feed.User, 1000)
	for i := range fans {
		fans[i] = feed.User{ID: int64(1001 + i), Name: "fan"}
		many = append(many, E(fans[i].ID, 3))
	}
	if err := s.BulkCreateUsers(ctx, fans); err != nil {
		t.Fatal(err)
	}
	for round, want := range []string{"created", "removed"} {
		follow, unfollow := many, []feed.Edge(nil)
		if round == 1 {
			follow, unfollow = nil, many
		}
		f, u, err := s.FollowBatch(ctx, follow, unfollow)
		if err != nil {
			t.Fatalf("full batch %d: %v", round, err)
		}
		for _, r := range slices.Concat(f, u) {
			if r != want {
				t.Fatalf("full batch %d: a result %q; want all %q", round, r, want)
			}
		}
		wantCounts(t, s, 3, int64(1+1000*(1-round)), 0)
		wantCounts(t, s, 1999, 0, int64(1-round))
	}

	// An empty batch is nothing to do.
	if f, u, err := s.FollowBatch(ctx, nil, nil); err != nil || len(f) != 0 || len(u) != 0 {
		t.Fatalf("empty batch: got %v %v %v", f, u, err)
	}
}

// testFollowBatchRace runs full-size batches between the same users in
// both directions, against single follows and unfollows, at once: with the
// locks taken in id order none deadlocks for good (a retry may happen),
// and the counts end equal to the edges.
func testFollowBatchRace(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	const users = 40
	ids := make([]int64, users)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	bulkUsers(t, s, ids)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			pair := func() feed.Edge {
				a := r.Int64N(users) + 1
				b := r.Int64N(users-1) + 1
				if b >= a {
					b++
				}
				return feed.Edge{Follower: a, Followee: b}
			}
			for range 4 {
				var f, u []feed.Edge
				for range feed.MaxFollowBatch / 2 {
					f, u = append(f, pair()), append(u, pair())
				}
				if _, _, err := s.FollowBatch(ctx, f, u); err != nil {
					errs <- err
					return
				}
				p := pair()
				if _, err := s.Follow(ctx, p.Follower, p.Followee); err != nil {
					errs <- err
					return
				}
				if _, err := s.Unfollow(ctx, p.Followee, p.Follower); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("racing batches: %v", err)
	}
	for _, id := range ids {
		followers, err := s.Followers(ctx, id, 0, users)
		if err != nil {
			t.Fatal(err)
		}
		following, err := s.Following(ctx, id, 0, users)
		if err != nil {
			t.Fatal(err)
		}
		wantCounts(t, s, id, int64(len(followers)), int64(len(following)))
	}
}

// BenchmarkFollowBatch compares FollowBatch with its baseline, the same
// pairs as single Follow and Unfollow calls, in the same run. One op
// follows 1,000 new pairs among 2,000 users and unfollows them again
// (way=batch: two batches; way=single: 2,000 calls); pairs/s counts
// follows and unfollows.
//
//	go test -run x -bench FollowBatch -benchtime 5x ./internal/sqlstore/
func BenchmarkFollowBatch(b *testing.B) {
	for _, be := range []backend{{name: "sqlite", setup: setupSQLite}, {name: "mysql", setup: setupMySQL}, {name: "postgres", setup: setupPostgres}} {
		b.Run(be.name, func(b *testing.B) {
			newDB := be.setup(b)
			for _, way := range []string{"batch", "single"} {
				b.Run("way="+way, func(b *testing.B) {
					ctx := b.Context()
					s := newDB(b).open(b)
					if err := s.Migrate(ctx); err != nil {
						b.Fatal(err)
					}
					const users = 2000
					us := make([]feed.User, users)
					for i := range us {
						us[i] = feed.User{ID: int64(i + 1), Name: "bench"}
					}
					if err := s.BulkCreateUsers(ctx, us); err != nil {
						b.Fatal(err)
					}
					r := rand.New(rand.NewPCG(1, 2))
					pairs := make([]feed.Edge, 0, feed.MaxFollowBatch)
					for i := range feed.MaxFollowBatch {
						// Distinct pairs: follower i, a random other followee.
						a := int64(i + 1)
						f := r.Int64N(users) + 1
						if f == a {
							f = a%users + 1
						}
						pairs = append(pairs, feed.Edge{Follower: a, Followee: f})
					}
					b.ResetTimer()
					for range b.N {
						if way == "batch" {
							if _, _, err := s.FollowBatch(ctx, pairs, nil); err != nil {
								b.Fatal(err)
							}
							if _, _, err := s.FollowBatch(ctx, nil, pairs); err != nil {
								b.Fatal(err)
							}
							continue
						}
						for _, p := range pairs {
							if _, err := s.Follow(ctx, p.Follower, p.Followee); err != nil {
								b.Fatal(err)
							}
						}
						for _, p := range pairs {
							if _, err := s.Unfollow(ctx, p.Follower, p.Followee); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.ReportMetric(float64(2*len(pairs)*b.N)/b.Elapsed().Seconds(), "pairs/s")
				})
			}
		})
	}
}
