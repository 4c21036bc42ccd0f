package sqlstore

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestLikes runs the likes tests on every backend.
func TestLikes(t *testing.T) {
	for _, b := range []backend{{name: "sqlite", setup: setupSQLite}, {name: "mysql", setup: setupMySQL}, {name: "postgres", setup: setupPostgres}} {
		t.Run(b.name, func(t *testing.T) {
			e := &env{backend: b.name, newDB: b.setup(t)}
			t.Run("ApplyIdempotent", func(t *testing.T) { testApplyIdempotent(t, e) })
			t.Run("ApplyAnyOrder", func(t *testing.T) { testApplyAnyOrder(t, e) })
			t.Run("ApplyRandom", func(t *testing.T) { testApplyRandom(t, e) })
			t.Run("ApplyConcurrent", func(t *testing.T) { testApplyConcurrent(t, e) })
			t.Run("Reads", func(t *testing.T) { testLikeReads(t, e) })
			t.Run("LikedPosts", func(t *testing.T) { testLikedPosts(t, e) })
		})
	}
}

func like(user, post, version int64, liked bool) feed.LikeEvent {
	return feed.LikeEvent{User: user, Post: post, Liked: liked, Version: version}
}

func mustApply(t *testing.T, s *Store, evs ...feed.LikeEvent) (map[int64]int64, int) {
	t.Helper()
	w, err := s.ApplyLikes(t.Context(), evs)
	if err != nil {
		t.Fatalf("ApplyLikes: %v", err)
	}
	return w.Deltas, w.Writes
}

// wantLikes checks post's stats row and its liked rows.
func wantLikes(t *testing.T, s *Store, post, want int64) {
	t.Helper()
	counts, err := s.LikeCounts(t.Context(), []int64{post})
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	if err := s.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM likes WHERE post_id = ? AND liked = 1", post).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if counts[post] != want || rows != want {
		t.Errorf("post %d: stats count %d, liked rows %d; want %d", post, counts[post], rows, want)
	}
}

func testApplyIdempotent(t *testing.T, e *env) {
	s := e.store(t)
	batch := []feed.LikeEvent{like(1, 10, 5, true), like(2, 10, 5, true), like(3, 10, 5, true), like(3, 11, 6, true)}
	d, w := mustApply(t, s, batch...)
	if d[10] != 3 || d[11] != 1 || w != 2 {
		t.Errorf("first apply: deltas %v, %d writes; want 10:3 11:1 in 2 writes", d, w)
	}
	d, w = mustApply(t, s, batch...)
	if len(d) != 0 || w != 0 {
		t.Errorf("redelivered batch: deltas %v, %d writes; want nothing", d, w)
	}
	wantLikes(t, s, 10, 3)
	wantLikes(t, s, 11, 1)
	// An unlike delivered twice counts once; unliking what was never
	// liked changes no count.
	mustApply(t, s, like(1, 10, 7, false), like(1, 10, 7, false), like(9, 10, 7, false))
	mustApply(t, s, like(1, 10, 7, false))
	wantLikes(t, s, 10, 2)
}

// testApplyAnyOrder: like, unlike, like of one pair, delivered one batch
// each in every order and with every event twice, ends liked and counted
// once; the same with the sequence ending unliked.
func testApplyAnyOrder(t *testing.T, e *env) {
	s := e.store(t)
	seqs := map[bool][]feed.LikeEvent{}
	perms := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	post := int64(100)
	for _, endLiked := range []bool{true, false} {
		for i, perm := range perms {
			user := int64(1000*btoi(endLiked) + i + 1)
			seq := []feed.LikeEvent{like(user, post, 10, true), like(user, post, 20, false), like(user, post, 30, endLiked)}
			if !endLiked {
				seq = []feed.LikeEvent{like(user, post, 10, false), like(user, post, 20, true), like(user, post, 30, false)}
			}
			seqs[endLiked] = seq
			for _, j := range perm {
				mustApply(t, s, seq[j])
			}
			for _, j := range perm { // redelivery of everything
				mustApply(t, s, seq[j])
			}
		}
	}
	wantLikes(t, s, post, int64(len(perms)))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// testApplyRandom compares random batches, reordered and redelivered,
// with a model: each pair ends in its newest action, each count is the
// pairs that end liked.
func testApplyRandom(t *testing.T, e *env) {
	s := e.store(t)
	r := rand.New(rand.NewPCG(1, 2))
	type pair struct{ user, post int64 }
	final := map[pair]feed.LikeEvent{}
	var evs []feed.LikeEvent
	version := int64(1)
	for range 600 {
		p := pair{int64(r.IntN(30) + 1), int64(r.IntN(6) + 1)}
		version++
		ev := like(p.user, p.post, version, r.IntN(2) == 0)
		evs = append(evs, ev)
		final[p] = ev
	}
	// Deliver in shuffled batches, a third of the events twice.
	deliveries := slices.Clone(evs)
	for _, ev := range evs {
		if r.IntN(3) == 0 {
			deliveries = append(deliveries, ev)
		}
	}
	r.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	for len(deliveries) > 0 {
		n := min(len(deliveries), 1+r.IntN(80))
		mustApply(t, s, deliveries[:n]...)
		deliveries = deliveries[n:]
	}
	want := map[int64]int64{}
	for _, ev := range final {
		if ev.Liked {
			want[ev.Post]++
		}
	}
	for post := int64(1); post <= 6; post++ {
		wantLikes(t, s, post, want[post])
	}
}

// testApplyConcurrent: writers in several "processes" apply overlapping
// batches at once (on MySQL they lock, may deadlock and retry); counts end
// exact.
func testApplyConcurrent(t *testing.T, e *env) {
	db := e.newDB(t)
	s := db.open(t)
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	const users, writers = 200, 4
	var wg sync.WaitGroup
	for w := range writers {
		st := db.open(t)
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			// Every writer delivers every user's like, in its own order
			// and batches: the redelivery of each event to 4 consumers.
			evs := make([]feed.LikeEvent, users)
			for u := range users {
				evs[u] = like(int64(u+1), 7, 50, true)
			}
			r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
			for len(evs) > 0 {
				n := min(len(evs), 1+r.IntN(60))
				if _, err := st.ApplyLikes(t.Context(), evs[:n]); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				evs = evs[n:]
			}
		})
	}
	wg.Wait()
	wantLikes(t, s, 7, users)
}

func testLikeReads(t *testing.T, e *env) {
	s := e.store(t)
	ctx := t.Context()
	mustUsers(t, s, 1, 2, 3, 4)
	now := time.Now()
	old := feed.MinIDAt(now.Add(-48*time.Hour)) + 1
	recent := feed.MinIDAt(now.Add(-time.Hour)) + 1
	p1 := mustPost(t, s, old, 1)
	p2 := mustPost(t, s, recent, 1)
	p3 := mustPost(t, s, recent+1, 2)
	// Users 2 and 3 like p2 with the same version: the likers' cursor
	// needs the user id to page exactly.
	mustApply(t, s, like(2, p2.ID, 100, true), like(3, p2.ID, 100, true), like(4, p2.ID, 90, true),
		like(4, p1.ID, 95, true), like(4, p3.ID, 96, false), like(2, p3.ID, 101, true))

	users, versions, err := s.PostLikers(ctx, p2.ID, 0, 0, 2)
	if err != nil || !slices.Equal(users, []int64{3, 2}) || !slices.Equal(versions, []int64{100, 100}) {
		t.Errorf("likers page 1 = %v %v, %v; want [3 2] [100 100]", users, versions, err)
	}
	users, _, err = s.PostLikers(ctx, p2.ID, 100, 2, 2)
	if err != nil || !slices.Equal(users, []int64{4}) {
		t.Errorf("likers page 2 = %v, %v; want [4]", users, err)
	}

	liked, err := s.UserLikes(ctx, 4, 0, 10)
	if err != nil || len(liked) != 2 || liked[0].Post != p1.ID || liked[1].Post != p2.ID {
		t.Errorf("likes of 4 = %+v, %v; want p1 then p2 (p3 was unliked)", liked, err)
	}
	liked, err = s.UserLikes(ctx, 4, 95, 10)
	if err != nil || len(liked) != 1 || liked[0].Post != p2.ID {
		t.Errorf("likes of 4 before 95 = %+v, %v; want p2", liked, err)
	}

	rec, complete, on, err := s.UserLikeEntries(ctx, 4, 2, []int64{p3.ID, p2.ID, 999})
	if err != nil {
		t.Fatalf("entries: %v", err)
	}
	if complete || len(rec) != 2 || rec[0].Post != p3.ID || rec[0].Liked || rec[1].Post != p1.ID {
		t.Errorf("recent of 4 (2) = %+v complete %v; want p3 (unliked) then p1, incomplete", rec, complete)
	}
	if !on[p2.ID].Liked || on[p3.ID].Liked || on[p3.ID].Version != 96 || len(on) != 2 {
		t.Errorf("on = %+v; want p2 liked, p3 unliked at 96", on)
	}
	if _, complete, _, _ := s.UserLikeEntries(ctx, 4, 10, nil); !complete {
		t.Error("3 actions of 10: want complete")
	}

	ids, counts, err := s.TopLiked(ctx, now.Add(-24*time.Hour), 10)
	if err != nil || !slices.Equal(ids, []int64{p2.ID, p3.ID}) || counts[p2.ID] != 3 || counts[p3.ID] != 1 {
		t.Errorf("top 24h = %v %v, %v; want p2 (3), p3 (1); p1 is too old", ids, counts, err)
	}
	if err := s.DeletePost(ctx, p2.ID, 1); err != nil {
		t.Fatal(err)
	}
	ids, _, _ = s.TopLiked(ctx, now.Add(-24*time.Hour), 10)
	if !slices.Equal(ids, []int64{p3.ID}) {
		t.Errorf("top after deleting p2 = %v; want p3", ids)
	}
}

// testLikedPosts: the export's listing of what a user likes, by post id,
// live posts only, in keyset pages.
func testLikedPosts(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	for id := int64(10); id <= 15; id++ {
		mustPost(t, s, id, 2)
	}
	if err := s.DeletePost(ctx, 13, 2); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, like(1, 14, 1, true), like(1, 10, 2, true), like(1, 12, 3, true), like(1, 11, 4, false),
		like(1, 13, 5, true), like(1, 15, 6, true), like(2, 11, 7, true))
	var got []int64
	for after := int64(0); ; {
		page, err := s.LikedPosts(ctx, 1, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			if p.AuthorID != 2 || p.Content == "" {
				t.Errorf("liked post %+v: want the whole post", p)
			}
			got = append(got, p.ID)
		}
		if len(page) < 2 {
			break
		}
		after = page[len(page)-1].ID
	}
	if want := []int64{10, 12, 14, 15}; !slices.Equal(got, want) {
		t.Fatalf("LikedPosts: got %v; want %v (live, liked, by id)", got, want)
	}
}

// BenchmarkApplyLikes measures the like writer's batches on MySQL and
// PostgreSQL in the same run: one op likes 500 new pairs (500 users, a
// few posts each, as a storm spread over a page of posts) in one batch,
// then unlikes them in a second batch, which meets the rows the first
// wrote. events/s counts both.
//
//	go test -run x -bench ApplyLikes -benchtime 20x ./internal/sqlstore/
func BenchmarkApplyLikes(b *testing.B) {
	for _, be := range []backend{{name: "mysql", setup: setupMySQL}, {name: "postgres", setup: setupPostgres}} {
		b.Run(be.name, func(b *testing.B) {
			ctx := b.Context()
			s := be.setup(b)(b).open(b)
			if err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			const users, posts = 500, 20
			us := make([]feed.User, users)
			for i := range us {
				us[i] = feed.User{ID: int64(i + 1), Name: "bench"}
			}
			if err := s.BulkCreateUsers(ctx, us); err != nil {
				b.Fatal(err)
			}
			version := time.Now().UnixMicro()
			batch := func(op int, liked bool) []feed.LikeEvent {
				evs := make([]feed.LikeEvent, users)
				for i := range evs {
					version++
					evs[i] = feed.LikeEvent{User: int64(i + 1), Post: int64(1000 + (op*7+i)%posts), Liked: liked, Version: version}
				}
				return evs
			}
			b.ResetTimer()
			for op := range b.N {
				for _, liked := range []bool{true, false} {
					if _, err := s.ApplyLikes(ctx, batch(op, liked)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(2*users*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
