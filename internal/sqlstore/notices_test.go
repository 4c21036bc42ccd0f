package sqlstore

import (
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// testNotices checks the groups a recipient reads as likes, unlikes and
// follows are written: one group per post with its exact count and newest
// actors, the undo, the window, hidden actors left out of both.
func testNotices(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	s.SetNoticeWindow(time.Hour)
	mustUsers(t, s, 1, 2, 3, 4, 5, 6)
	post := mustPost(t, s, 1<<20, 1).ID
	t0 := time.Now().Add(-10 * time.Hour)
	like := func(user int64, liked bool, at time.Time) {
		t.Helper()
		if _, err := s.ApplyLikes(ctx, []feed.LikeEvent{{User: user, Post: post, Liked: liked, Version: at.UnixMicro()}}); err != nil {
			t.Fatalf("ApplyLikes(%d, %v): %v", user, liked, err)
		}
	}
	page := func(q feed.NoticeQuery) []feed.NoticeGroup {
		t.Helper()
		if q.N == 0 {
			q.N = 20
		}
		gs, _, err := s.NoticePage(ctx, 1, q)
		if err != nil {
			t.Fatalf("NoticePage: %v", err)
		}
		return gs
	}
	want := func(what string, g feed.NoticeGroup, kind feed.NoticeKind, count int64, actors ...int64) {
		t.Helper()
		if g.Kind != kind || g.ActorCount != count || !slices.Equal(g.Actors, actors) {
			t.Fatalf("%s: got %s ×%d %v; want %s ×%d %v", what, g.Kind, g.ActorCount, g.Actors, kind, count, actors)
		}
	}
	for i, u := range []int64{2, 3, 4, 5} {
		like(u, true, t0.Add(time.Duration(i)*time.Minute))
	}
	like(1, true, t0.Add(5*time.Minute)) // one's own like tells nobody
	gs := page(feed.NoticeQuery{})
	if len(gs) != 1 {
		t.Fatalf("after 4 likes: %d groups; want 1", len(gs))
	}
	want("4 likes", gs[0], feed.NoticeLike, 4, 5, 4, 3)
	like(5, false, t0.Add(6*time.Minute))
	gs = page(feed.NoticeQuery{})
	want("unliked by 5", gs[0], feed.NoticeLike, 3, 4, 3, 2)
	if wantID := (feed.Notice{Recipient: 1, Actor: 4, Kind: feed.NoticeLike, Post: post, At: t0.Add(2 * time.Minute)}).ID(); gs[0].ID != wantID {
		t.Fatalf("group id after its newest actor left: got %d; want 4's notification %d", gs[0].ID, wantID)
	}
	like(5, true, t0.Add(7*time.Minute))
	like(5, true, t0.Add(8*time.Minute)) // a like written again counts once
	want("liked again by 5", page(feed.NoticeQuery{})[0], feed.NoticeLike, 4, 5, 4, 3)
	want("hiding 4", page(feed.NoticeQuery{Hide: []int64{4}})[0], feed.NoticeLike, 3, 5, 3, 2)
	// Past the window a like starts a group of its own.
	like(6, true, t0.Add(2*time.Hour))
	gs = page(feed.NoticeQuery{})
	if len(gs) != 2 {
		t.Fatalf("after a like past the window: %d groups; want 2", len(gs))
	}
	want("the new group", gs[0], feed.NoticeLike, 1, 6)
	// Follows group apart from likes.
	for _, f := range []int64{2, 3} {
		if _, err := s.Follow(ctx, f, 1); err != nil {
			t.Fatal(err)
		}
	}
	gs = page(feed.NoticeQuery{Kinds: []feed.NoticeKind{feed.NoticeFollow}})
	if len(gs) != 1 {
		t.Fatalf("follows: %d groups; want 1", len(gs))
	}
	want("2 follows", gs[0], feed.NoticeFollow, 2, 3, 2)
	if _, err := s.Unfollow(ctx, 3, 1); err != nil {
		t.Fatal(err)
	}
	want("unfollowed by 3", page(feed.NoticeQuery{Kinds: []feed.NoticeKind{feed.NoticeFollow}})[0], feed.NoticeFollow, 1, 2)
	// Paging: one group a page, each once.
	var ids []int64
	q := feed.NoticeQuery{N: 1}
	for {
		gs, more, err := s.NoticePage(ctx, 1, q)
		if err != nil || len(gs) != 1 {
			t.Fatalf("page below %d: %d groups, %v", q.Before, len(gs), err)
		}
		ids = append(ids, gs[0].ID)
		if !more {
			break
		}
		q.Before = gs[0].ID
	}
	if len(ids) != 3 {
		t.Fatalf("paging one by one: %d groups; want 3", len(ids))
	}
	if n, capped, err := s.UnreadNotices(ctx, 1, ids[1], nil, 10); err != nil || n != 1 || capped {
		t.Fatalf("UnreadNotices after the second group: %d, %v, %v; want 1", n, capped, err)
	}
	if n, capped, err := s.UnreadNotices(ctx, 1, 0, nil, 2); err != nil || n != 2 || !capped {
		t.Fatalf("UnreadNotices capped at 2: %d, %v, %v; want 2, capped", n, capped, err)
	}
	// A group of hidden actors only is no group, and no unread one.
	if n, _, err := s.UnreadNotices(ctx, 1, 0, []int64{2, 6}, 10); err != nil || n != 1 {
		t.Fatalf("UnreadNotices hiding 2 and 6: %d, %v; want 1 (the first likes)", n, err)
	}
	if m, err := s.SetNoticeMarker(ctx, 1, ids[0], time.Now()); err != nil || m.LastReadID != ids[0] {
		t.Fatalf("SetNoticeMarker: %+v, %v", m, err)
	}
	if m, err := s.SetNoticeMarker(ctx, 1, ids[2], time.Now()); err != nil || m.LastReadID != ids[0] {
		t.Fatalf("SetNoticeMarker back: %+v, %v; want it where it was", m, err)
	}
	// Another source's entry point: a reply is a group of its own.
	for _, reply := range []int64{101, 102} {
		if err := s.AddNotice(ctx, feed.Notice{Recipient: 1, Actor: 3, Kind: feed.NoticeReply, Post: reply, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if gs := page(feed.NoticeQuery{Kinds: []feed.NoticeKind{feed.NoticeReply}}); len(gs) != 2 {
		t.Fatalf("two replies: %d groups; want 2", len(gs))
	}
	if err := s.RemoveNotice(ctx, feed.Notice{Recipient: 1, Actor: 3, Kind: feed.NoticeReply, Post: 101}); err != nil {
		t.Fatal(err)
	}
	if gs := page(feed.NoticeQuery{Kinds: []feed.NoticeKind{feed.NoticeReply}}); len(gs) != 1 || gs[0].Post != 102 {
		t.Fatalf("a reply undone: %+v; want the other", gs)
	}
	// A deleted account's purge takes its notifications out, made and
	// received.
	if _, _, err := s.DeleteUser(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if u, ok, err := s.ClaimPurge(ctx, "w", time.Minute); err != nil || !ok || u != 3 {
		t.Fatalf("ClaimPurge: %d, %v, %v", u, ok, err)
	}
	for {
		r, err := s.PurgeBatch(ctx, 3, "w", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if r.Done {
			break
		}
	}
	gs = page(feed.NoticeQuery{Kinds: []feed.NoticeKind{feed.NoticeLike}})
	want("after 3's purge", gs[len(gs)-1], feed.NoticeLike, 3, 5, 4, 2)
	if gs := page(feed.NoticeQuery{Kinds: []feed.NoticeKind{feed.NoticeReply}}); len(gs) != 0 {
		t.Fatalf("3's reply after its purge: %+v; want none", gs)
	}
}

// BenchmarkNoticePage reads a page of notifications whose first group
// has a million actors, beside one whose groups have a few: the page
// costs the same (docs/notifications.md). go test -run '^$' -bench
// NoticePage ./internal/sqlstore/
func BenchmarkNoticePage(b *testing.B) {
	for _, actors := range []int{3, 1_000_000} {
		b.Run(fmt.Sprintf("actors=%d", actors), func(b *testing.B) {
			ctx := b.Context()
			s := setupSQLite(b)(b).open(b)
			if err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			t0 := time.Now().Add(-time.Hour)
			// 20 small groups, then one of actors on top.
			var ns []feed.Notice
			for i := range 20 {
				for a := range 3 {
					ns = append(ns, feed.Notice{Recipient: 1, Actor: int64(10 + a), Kind: feed.NoticeLike, Post: int64(1000 + i), At: t0.Add(time.Duration(i) * time.Second)})
				}
			}
			for a := range actors {
				ns = append(ns, feed.Notice{Recipient: 1, Actor: int64(100 + a), Kind: feed.NoticeLike, Post: 1, At: t0.Add(time.Minute + time.Duration(a)*time.Microsecond)})
			}
			for chunk := range slices.Chunk(ns, 50_000) {
				if err := s.write(ctx, func(tx *sql.Tx) error { return s.addNotices(ctx, tx, chunk) }); err != nil {
					b.Fatal(err)
				}
			}
			hide := []int64{100, 101}
			b.ResetTimer()
			for b.Loop() {
				gs, _, err := s.NoticePage(ctx, 1, feed.NoticeQuery{N: 20, Hide: hide})
				if err != nil || len(gs) != 20 {
					b.Fatalf("NoticePage: %d groups, %v", len(gs), err)
				}
				if gs[0].Post == 1 && gs[0].ActorCount != int64(actors-2) {
					b.Fatalf("the big group counts %d; want %d", gs[0].ActorCount, actors-2)
				}
			}
		})
	}
}

// testNoticeBurst: likes of 600 posts of one author in one millisecond,
// in one batch, make 600 groups with 600 ids. The notification ids of a
// millisecond differ by a 12-bit hash only (about 20 pairs of the 600
// share one), so some groups' first ids would collide without freeGID,
// and the batch fail on the key.
func testNoticeBurst(t *testing.T, e *env) {
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	at := time.Now().UnixMicro()
	var evs []feed.LikeEvent
	for i := range int64(600) {
		p := mustPost(t, s, 1<<20+i, 1).ID
		evs = append(evs, feed.LikeEvent{User: 2, Post: p, Liked: true, Version: at})
	}
	if _, err := s.ApplyLikes(t.Context(), evs); err != nil {
		t.Fatalf("ApplyLikes of 600 posts' likes in one millisecond: %v", err)
	}
	ids := map[int64]bool{}
	var cursor int64
	for {
		gs, more, err := s.NoticePage(t.Context(), 1, feed.NoticeQuery{N: 100, Before: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			ids[g.ID] = true
		}
		if !more || len(gs) == 0 {
			break
		}
		cursor = gs[len(gs)-1].ID
	}
	if len(ids) != 600 {
		t.Fatalf("groups with distinct ids: %d; want 600", len(ids))
	}
}
