package shards_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/shards"
	"github.com/feedd/feedd/internal/sqlstore"
)

// On 4 shards a user's shard is id & 3: 100 and 104 share shard 0, 101 is
// on 1, 102 on 2, 103 on 3.

// backends runs a test on MariaDB and on PostgreSQL, 4 shards on 2
// servers each.
func backends(t *testing.T, test func(t *testing.T, s *shards.Store)) {
	feedtest.RequireServices(t)
	for _, pg := range []bool{false, true} {
		name := "mariadb"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) { test(t, openSharded(t, 4, pg)) })
	}
}

func createUsers(t *testing.T, s *shards.Store, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := s.Shard(s.Map().Of(id)).CreateUser(context.Background(), feed.User{ID: id, Name: fmt.Sprint("u", id)}); err != nil {
			t.Fatal(err)
		}
	}
}

// counts returns a user's follower and following counts from their shard.
func counts(t *testing.T, s *shards.Store, id int64) (followers, following int64) {
	t.Helper()
	u, err := s.Shard(s.Map().Of(id)).User(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return u.FollowerCount, u.FollowingCount
}

func wantCounts(t *testing.T, s *shards.Store, id, followers, following int64) {
	t.Helper()
	if gf, gg := counts(t, s, id); gf != followers || gg != following {
		t.Errorf("user %d: %d followers, %d following; want %d, %d", id, gf, gg, followers, following)
	}
}

// followersOf and followingOf read the lists where the router reads them:
// the user's own shard.
func followersOf(t *testing.T, s *shards.Store, id int64) []int64 {
	t.Helper()
	ids, err := s.Shard(s.Map().Of(id)).Followers(context.Background(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func followingOf(t *testing.T, s *shards.Store, id int64) []int64 {
	t.Helper()
	ids, err := s.Shard(s.Map().Of(id)).Following(context.Background(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func edges(pairs [][2]int64) []feed.Edge {
	out := make([]feed.Edge, len(pairs))
	for i, p := range pairs {
		out[i] = feed.Edge{Follower: p[0], Followee: p[1]}
	}
	return out
}

func wantIDs(t *testing.T, what string, got []int64, want ...int64) {
	t.Helper()
	if want == nil {
		want = []int64{}
	}
	if got == nil {
		got = []int64{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// journalRows counts the journal rows left on every shard.
func journalRows(t *testing.T, s *shards.Store) int {
	t.Helper()
	total := 0
	for k := range s.N() {
		var n int
		if err := s.Shard(k).DB().QueryRowContext(context.Background(), "SELECT COUNT(*) FROM shard_syncs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

func TestFollowAcrossShards(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102, 104)
		for _, e := range [][2]int64{{100, 101}, {100, 104}, {102, 101}, {101, 100}} {
			added, err := s.Follow(ctx, e[0], e[1])
			if err != nil || !added {
				t.Fatalf("follow %v: %v, %v", e, added, err)
			}
		}
		if added, err := s.Follow(ctx, 100, 101); err != nil || added {
			t.Fatalf("follow again: %v, %v; want false, nil", added, err)
		}
		wantCounts(t, s, 100, 1, 2)
		wantCounts(t, s, 101, 2, 1)
		wantCounts(t, s, 102, 0, 1)
		wantCounts(t, s, 104, 1, 0)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 100, 102)
		wantIDs(t, "following of 100", followingOf(t, s, 100), 101, 104)
		wantIDs(t, "followers of 100", followersOf(t, s, 100), 101)
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left after the syncs", n)
		}

		if removed, err := s.Unfollow(ctx, 100, 101); err != nil || !removed {
			t.Fatalf("unfollow: %v, %v", removed, err)
		}
		if removed, err := s.Unfollow(ctx, 100, 101); err != nil || removed {
			t.Fatalf("unfollow again: %v, %v; want false, nil", removed, err)
		}
		wantCounts(t, s, 100, 1, 1)
		wantCounts(t, s, 101, 1, 1)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 102)

		for _, e := range [][2]int64{{100, 999}, {999, 101}} {
			if _, err := s.Follow(ctx, e[0], e[1]); feed.ErrorCode(err) != feed.ENOTFOUND {
				t.Errorf("follow %v: %v, want ENOTFOUND", e, err)
			}
		}
		if _, err := s.Follow(ctx, 101, 101); feed.ErrorCode(err) != feed.EINVALID {
			t.Errorf("follow oneself: %v, want EINVALID", err)
		}
		wantCounts(t, s, 101, 1, 1)
	})
}

// TestFollowSyncRepaired: a process that dies between the truth's commit
// and the sync leaves the journal row, which the repairer runs.
func TestFollowSyncRepaired(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102)
		// The truth halves alone: what a write commits before it syncs.
		for _, f := range []int64{100, 102} {
			if _, err := s.Shard(s.Map().Of(f)).FollowOut(ctx, f, 101); err != nil {
				t.Fatal(err)
			}
		}
		wantCounts(t, s, 100, 0, 1)
		wantCounts(t, s, 101, 0, 0) // the mirror lags
		wantIDs(t, "followers of 101 before the repair", followersOf(t, s, 101))

		// Not due yet.
		if n, err := shards.SyncDueAt(ctx, s, time.Now()); err != nil || n != 0 {
			t.Fatalf("sync before due: %d, %v", n, err)
		}
		n, err := shards.SyncDueAt(ctx, s, time.Now().Add(sqlstore.SyncDelay+time.Second))
		if err != nil || n != 2 {
			t.Fatalf("sync due: %d, %v; want 2", n, err)
		}
		wantCounts(t, s, 101, 2, 0)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 100, 102)
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left after the repair", n)
		}
		// A second pass, and a sync run twice, change nothing.
		if _, err := s.Shard(0).SyncMirror(ctx, s.Shard(0), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Shard(1).SyncMirror(ctx, s.Shard(0), []sqlstore.Sync{{Kind: sqlstore.SyncFollow, A: 100, B: 101}}); err != nil {
			t.Fatal(err)
		}
		wantCounts(t, s, 101, 2, 0)

		// An unfollow whose sync was lost, then repaired.
		if _, err := s.Shard(0).UnfollowOut(ctx, 100, 101); err != nil {
			t.Fatal(err)
		}
		if n, err := shards.SyncDueAt(ctx, s, time.Now().Add(sqlstore.SyncDelay+time.Second)); err != nil || n != 1 {
			t.Fatalf("sync due: %d, %v; want 1", n, err)
		}
		wantCounts(t, s, 101, 1, 0)
		wantCounts(t, s, 100, 0, 0)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 102)
	})
}

// TestFollowRacesUnfollow: follows and unfollows of the same cross-shard
// pairs from many goroutines end with the mirror equal to the truth and
// exact counts on both sides.
func TestFollowRacesUnfollow(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		followee := int64(101)
		followers := []int64{100, 102, 103, 104}
		createUsers(t, s, append(followers, followee)...)
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for _, f := range followers {
			for g := range 3 {
				wg.Go(func() {
					for i := range 15 {
						var err error
						if (i+g)%2 == 0 {
							_, err = s.Follow(ctx, f, followee)
						} else {
							_, err = s.Unfollow(ctx, f, followee)
						}
						if err != nil {
							errs <- err
						}
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Whatever the truth ended as, the mirror and counts agree with it.
		var truth []int64
		for _, f := range followers {
			following := followingOf(t, s, f)
			if slices.Contains(following, followee) {
				truth = append(truth, f)
				wantCounts(t, s, f, 0, 1)
			} else {
				wantCounts(t, s, f, 0, 0)
			}
		}
		slices.Sort(truth)
		wantIDs(t, "followers of 101", followersOf(t, s, followee), truth...)
		wantCounts(t, s, followee, int64(len(truth)), 0)
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left", n)
		}
		checkExact(t, s)
	})
}

func TestFollowBatchAcrossShards(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102, 103, 104)
		follow := edges([][2]int64{{100, 101}, {100, 104}, {102, 101}, {100, 999}, {103, 100}, {100, 101}})
		unfollow := edges([][2]int64{{102, 101}, {101, 100}})
		f, u, err := s.FollowBatch(ctx, follow, unfollow)
		if err != nil {
			t.Fatal(err)
		}
		wantF := []string{feed.EdgeCreated, feed.EdgeCreated, feed.EdgeCreated, feed.EdgeUnknownUser, feed.EdgeCreated, feed.EdgeExists}
		wantU := []string{feed.EdgeRemoved, feed.EdgeAbsent}
		if !slices.Equal(f, wantF) || !slices.Equal(u, wantU) {
			t.Fatalf("outcomes %v %v, want %v %v", f, u, wantF, wantU)
		}
		wantCounts(t, s, 100, 1, 2)
		wantCounts(t, s, 101, 1, 0)
		wantCounts(t, s, 102, 0, 0)
		wantCounts(t, s, 103, 0, 1)
		wantCounts(t, s, 104, 1, 0)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 100)
		wantIDs(t, "followers of 100", followersOf(t, s, 100), 103)
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left", n)
		}
	})
}

func TestBlockAcrossShards(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102)
		for _, e := range [][2]int64{{100, 101}, {101, 100}, {102, 101}} {
			if _, err := s.Follow(ctx, e[0], e[1]); err != nil {
				t.Fatal(err)
			}
		}
		added, err := s.Block(ctx, 101, 100)
		if err != nil || !added {
			t.Fatalf("block: %v, %v", added, err)
		}
		wantCounts(t, s, 100, 0, 0)
		wantCounts(t, s, 101, 1, 0)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 102)
		wantIDs(t, "followers of 100", followersOf(t, s, 100))
		for _, e := range [][2]int64{{100, 101}, {101, 100}} {
			if _, err := s.Follow(ctx, e[0], e[1]); feed.ErrorCode(err) != feed.EBLOCKED {
				t.Errorf("follow %v after the block: %v, want EBLOCKED", e, err)
			}
		}
		// Both users' hidden sets see the block, each on its own shard.
		for _, id := range []int64{100, 101} {
			h, err := s.Shard(s.Map().Of(id)).Hidden(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if other := 201 - id; !h.Blocked(other) {
				t.Errorf("user %d's hidden set misses the block with %d", id, other)
			}
		}
		f, _, err := s.FollowBatch(ctx, edges([][2]int64{{100, 101}, {101, 100}}), nil)
		if err != nil || !slices.Equal(f, []string{feed.EdgeBlocked, feed.EdgeBlocked}) {
			t.Errorf("batch follows after the block: %v, %v", f, err)
		}
		if removed, err := s.Unblock(ctx, 101, 100); err != nil || !removed {
			t.Fatalf("unblock: %v, %v", removed, err)
		}
		if _, err := s.Follow(ctx, 100, 101); err != nil {
			t.Errorf("follow after the unblock: %v", err)
		}
		wantCounts(t, s, 101, 2, 0)
		if _, err := s.Block(ctx, 100, 999); feed.ErrorCode(err) != feed.ENOTFOUND {
			t.Errorf("block of a missing user: %v, want ENOTFOUND", err)
		}
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left", n)
		}
	})
}

// TestFollowRacesBlock: follows both ways racing a block end with no
// edge between the two and exact counts.
func TestFollowRacesBlock(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101)
		for round := range 10 {
			var wg sync.WaitGroup
			for _, e := range [][2]int64{{100, 101}, {101, 100}} {
				wg.Go(func() {
					if _, err := s.Follow(ctx, e[0], e[1]); err != nil && feed.ErrorCode(err) != feed.EBLOCKED {
						t.Error(err)
					}
				})
			}
			wg.Go(func() {
				if _, err := s.Block(ctx, 100+int64(round%2), 101-int64(round%2)); err != nil {
					t.Error(err)
				}
			})
			wg.Wait()
			wantCounts(t, s, 100, 0, 0)
			wantCounts(t, s, 101, 0, 0)
			wantIDs(t, "followers of 100", followersOf(t, s, 100))
			wantIDs(t, "followers of 101", followersOf(t, s, 101))
			if _, err := s.Unblock(ctx, 100+int64(round%2), 101-int64(round%2)); err != nil {
				t.Fatal(err)
			}
		}
		checkExact(t, s)
	})
}

func TestMuteAcrossShards(t *testing.T) {
	feedtest.RequireServices(t)
	s := openSharded(t, 4, false)
	ctx := context.Background()
	createUsers(t, s, 100, 101)
	if added, err := s.Mute(ctx, 100, 101); err != nil || !added {
		t.Fatalf("mute: %v, %v", added, err)
	}
	if added, err := s.Mute(ctx, 100, 101); err != nil || added {
		t.Fatalf("mute again: %v, %v; want false, nil", added, err)
	}
	if _, err := s.Mute(ctx, 100, 999); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Errorf("mute of a missing user: %v, want ENOTFOUND", err)
	}
	if _, err := s.Mute(ctx, 998, 101); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Errorf("mute by a missing user: %v, want ENOTFOUND", err)
	}
	h, err := s.Shard(0).Hidden(ctx, 100)
	if err != nil || !h.InFeed(101) {
		t.Errorf("100's hidden set: %v; want 101 muted", err)
	}
	if removed, err := s.Unmute(ctx, 100, 101); err != nil || !removed {
		t.Fatalf("unmute: %v, %v", removed, err)
	}
}

// TestBlockRepaired: a block whose writer died right after its commit is
// finished by the repairer: its mirror, and the edges both ways.
func TestBlockRepaired(t *testing.T) {
	backends(t, func(t *testing.T, s *shards.Store) {
		ctx := context.Background()
		createUsers(t, s, 100, 101, 102)
		for _, e := range [][2]int64{{100, 101}, {101, 100}, {102, 101}} {
			if _, err := s.Follow(ctx, e[0], e[1]); err != nil {
				t.Fatal(err)
			}
		}
		// The truth half alone, on the blocker's shard.
		if _, err := s.Shard(s.Map().Of(101)).BlockOut(ctx, 101, 100); err != nil {
			t.Fatal(err)
		}
		// The blocked user's edge goes with the mirror, whose sync
		// journals that edge's own: two passes.
		for range 2 {
			if _, err := shards.SyncDueAt(ctx, s, time.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		wantCounts(t, s, 100, 0, 0)
		wantCounts(t, s, 101, 1, 0)
		wantIDs(t, "followers of 101", followersOf(t, s, 101), 102)
		if _, err := s.Follow(ctx, 100, 101); feed.ErrorCode(err) != feed.EBLOCKED {
			t.Errorf("follow by the blocked user: %v, want EBLOCKED", err)
		}
		if n := journalRows(t, s); n != 0 {
			t.Errorf("%d journal rows left", n)
		}
		checkExact(t, s)
	})
}
