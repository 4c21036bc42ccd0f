package shards_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
)

// rowsNaming counts the rows of every shard that name user.
func rowsNaming(t *testing.T, s *shards.Store, user int64) map[string]int {
	t.Helper()
	out := map[string]int{}
	for k := range s.N() {
		for what, q := range map[string]string{
			"follows": "SELECT COUNT(*) FROM follows WHERE follower_id = ? OR followee_id = ?",
			"likes":   "SELECT COUNT(*) FROM likes WHERE user_id = ? OR user_id = ?",
			"blocks":  "SELECT COUNT(*) FROM blocks WHERE blocker_id = ? OR blocked_id = ?",
			"mutes":   "SELECT COUNT(*) FROM mutes WHERE user_id = ? OR target_id = ?",
			"posts":   "SELECT COUNT(*) FROM posts WHERE author_id = ? OR author_id = ?",
			"users":   "SELECT COUNT(*) FROM users WHERE id = ? OR id = ?",
		} {
			var n int
			if err := s.Shard(k).DB().QueryRowContext(context.Background(), rebind(s, k, q), user, user).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out[what] += n
		}
	}
	return out
}

// rebind turns ? into $n for a PostgreSQL shard's raw pool.
func rebind(s *shards.Store, k int, q string) string {
	if shards.BackendOf(s.Map().DSN(k)) != shards.Postgres {
		return q
	}
	out := make([]byte, 0, len(q)+8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			out = append(out, '$', byte('0'+n))
			continue
		}
		out = append(out, q[i])
	}
	return string(out)
}

func TestPurgeAcrossShards(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102, 104)
		ids := feed.NewIDGen(nil)
		p0 := createPost(t, s, ids, 100)
		p1 := createPost(t, s, ids, 101)
		p4 := createPost(t, s, ids, 104)
		for _, e := range [][2]int64{{100, 101}, {100, 104}, {101, 100}, {102, 100}, {104, 100}, {102, 101}} {
			if _, err := s.Follow(ctx, e[0], e[1]); err != nil {
				t.Fatal(err)
			}
		}
		v := time.Now().UnixMicro()
		if _, err := s.ApplyLikes(ctx, []feed.LikeEvent{
			{User: 100, Post: p1, Liked: true, Version: v + 1},
			{User: 100, Post: p4, Liked: true, Version: v + 2},
			{User: 102, Post: p1, Liked: true, Version: v + 3},
			{User: 101, Post: p0, Liked: true, Version: v + 4},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Block(ctx, 100, 103); feed.ErrorCode(err) != feed.ENOTFOUND {
			t.Fatalf("block of a missing user: %v", err)
		}
		createUsers(t, s, 103)
		for _, b := range [][2]int64{{100, 103}, {103, 100}} {
			if _, err := s.Block(ctx, b[0], b[1]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Mute(ctx, 101, 100); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Mute(ctx, 100, 102); err != nil {
			t.Fatal(err)
		}

		if _, started, err := s.DeleteUser(ctx, 100); err != nil || !started {
			t.Fatalf("delete: %v, %v", started, err)
		}
		user, ok, err := s.ClaimPurge(ctx, "w1", time.Minute)
		if err != nil || !ok || user != 100 {
			t.Fatalf("claim: %d, %v, %v", user, ok, err)
		}
		for i := 0; ; i++ {
			b, err := s.PurgeBatch(ctx, 100, "w1", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if b.Done {
				break
			}
			if i > 50 {
				t.Fatal("the purge does not end")
			}
		}
		for what, n := range rowsNaming(t, s, 100) {
			if n != 0 {
				t.Errorf("%d %s rows name the purged user", n, what)
			}
		}
		wantCounts(t, s, 101, 1, 0)
		wantCounts(t, s, 102, 0, 1)
		wantCounts(t, s, 104, 0, 0)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 102)
		if got := likeCount(t, s, p1); got != 1 {
			t.Errorf("post %d: %d likes, want 1", p1, got)
		}
		if got := likeCount(t, s, p4); got != 0 {
			t.Errorf("post %d: %d likes, want 0", p4, got)
		}
		p, err := s.Purge(ctx, 100)
		if err != nil || !p.Done() {
			t.Fatalf("purge state: %+v, %v", p, err)
		}
		if p.Following != 2 || p.Followers != 3 || p.Likes != 2 || p.Posts != 1 {
			t.Errorf("progress %+v, want 2 following, 3 followers, 2 likes, 1 post", p)
		}
		if _, ok, err := s.ClaimPurge(ctx, "w1", time.Minute); err != nil || ok {
			t.Errorf("a second claim: %v, %v", ok, err)
		}
		checkExact(t, s)
		// A follow of the deleted user is refused.
		if _, err := s.Follow(ctx, 101, 100); feed.ErrorCode(err) != feed.ENOTFOUND {
			t.Errorf("follow of the purged user: %v, want ENOTFOUND", err)
		}
	})
}

// TestPurgeLeaseLost: a worker that lost the lease does nothing on any
// shard.
func TestPurgeLeaseLost(t *testing.T) {
	feedtest.RequireServices(t)
	s := openSharded(t, 4, false)
	ctx := context.Background()
	createUsers(t, s, 100, 101)
	if _, err := s.Follow(ctx, 101, 100); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeleteUser(ctx, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PurgeBatch(ctx, 100, "nobody", time.Minute); err == nil {
		t.Fatal("a batch without the lease ran")
	}
	wantCounts(t, s, 101, 0, 1)
}

// TestFollowRacesPurge: a follow whose truth commits after the followee's
// purge passed the follower's shard (the router saw the followee alive
// just before) is dropped by its sync, with the follower's count.
func TestFollowRacesPurge(t *testing.T) {
	feedtest.RequireServices(t)
	s := openSharded(t, 4, false)
	ctx := context.Background()
	createUsers(t, s, 100, 101)
	if _, _, err := s.DeleteUser(ctx, 101); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ClaimPurge(ctx, "w", time.Minute); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := s.PurgeBatch(ctx, 101, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if b.Done {
			break
		}
	}
	// The truth half of a follow that checked 101 before the deletion.
	if _, err := s.Shard(0).FollowOut(ctx, 100, 101); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, 100, 0, 1)
	if _, err := shards.SyncDueAt(ctx, s, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	wantCounts(t, s, 100, 0, 0)
	wantIDs(t, "following of 100", followingOf(t, s, 100))
	if n := journalRows(t, s); n != 0 {
		t.Errorf("%d journal rows left", n)
	}
}

// checkExact checks every shard against the invariants: each user's
// counts are the rows of their own shard, and each follows row between
// two shards is on both (truth and mirror) or on neither.
func checkExact(t *testing.T, s *shards.Store) {
	t.Helper()
	ctx := context.Background()
	rows := map[[2]int64]map[int]bool{} // edge → shards holding it
	for k := range s.N() {
		db := s.Shard(k).DB()
		r, err := db.QueryContext(ctx, rebind(s, k, `SELECT u.id, u.follower_count, u.following_count,
			(SELECT COUNT(*) FROM follows f WHERE f.followee_id = u.id),
			(SELECT COUNT(*) FROM follows f WHERE f.follower_id = u.id) FROM users u WHERE u.deleted_at IS NULL`))
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var id, fc, gc, fr, gr int64
			if err := r.Scan(&id, &fc, &gc, &fr, &gr); err != nil {
				t.Fatal(err)
			}
			if fc != fr || gc != gr {
				t.Errorf("user %d on shard %d: counts %d followers, %d following; rows %d, %d", id, k, fc, gc, fr, gr)
			}
		}
		r.Close()
		r, err = db.QueryContext(ctx, "SELECT follower_id, followee_id FROM follows")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var e [2]int64
			if err := r.Scan(&e[0], &e[1]); err != nil {
				t.Fatal(err)
			}
			if rows[e] == nil {
				rows[e] = map[int]bool{}
			}
			rows[e][k] = true
		}
		r.Close()
	}
	for e, on := range rows {
		a, b := s.Map().Of(e[0]), s.Map().Of(e[1])
		if !on[a] || !on[b] || len(on) != len(map[int]bool{a: true, b: true}) {
			t.Errorf("edge %d -> %d is on shards %v; want %d and %d", e[0], e[1], on, a, b)
		}
	}
}

// TestPurgeRacesFollows: a purge running while the other users follow and
// unfollow each other and the deleted user leaves every count exact.
func TestPurgeRacesFollows(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		others := []int64{100, 102, 103, 104, 105, 106}
		createUsers(t, s, append(others, 101)...)
		for _, f := range others {
			for _, e := range []int64{101, others[(int(f)+1)%len(others)]} {
				if f != e {
					if _, err := s.Follow(ctx, f, e); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := s.Follow(ctx, 101, f); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.DeleteUser(ctx, 101); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.ClaimPurge(ctx, "w", time.Minute); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				b, err := s.PurgeBatch(ctx, 101, "w", time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if b.Done {
					return
				}
			}
		})
		for i, f := range others {
			wg.Go(func() {
				for j := range 10 {
					e := others[(i+j)%len(others)]
					if e == f {
						e = 101
					}
					var err error
					if j%2 == 0 {
						_, err = s.Follow(ctx, f, e)
					} else {
						_, err = s.Unfollow(ctx, f, e)
					}
					if err != nil && feed.ErrorCode(err) != feed.ENOTFOUND {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if _, err := shards.SyncDueAt(ctx, s, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		checkExact(t, s)
		for what, n := range rowsNaming(t, s, 101) {
			if n != 0 {
				t.Errorf("%d %s rows name the purged user", n, what)
			}
		}
	})
}
