package likes

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestListsLeaveOutBlocked: a post's likers, as a viewer who blocked most
// of them sees them, come in full pages that read past the blocked ones
// (the read-ahead of every filtered page, feed.ReadAhead), never repeat,
// and end; a user's likes and the top posts leave out the posts of users a
// block stands between, and a blocked user's likes list and a blocked
// author's post are not found.
func TestListsLeaveOutBlocked(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	const viewer = 3
	post := f.posts[0].ID
	var evs []feed.LikeEvent
	var want []int64
	for i := range 40 {
		u := int64(100 + i)
		if _, err := f.store.CreateUser(ctx, feed.User{ID: u, Name: fmt.Sprint("fan", i)}); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, feed.LikeEvent{User: u, Post: post, Liked: true, Version: int64(i + 1)})
		if i < 30 && i != 5 {
			if _, err := f.store.Block(ctx, viewer, u); err != nil {
				t.Fatal(err)
			}
		} else {
			want = append([]int64{u}, want...)
		}
	}
	if _, err := f.store.ApplyLikes(ctx, evs); err != nil {
		t.Fatal(err)
	}
	var got []int64
	var version, user int64
	for page := 0; ; page++ {
		if page > 20 {
			t.Fatal("the likers do not end")
		}
		pg, err := f.svc.PostLikers(ctx, viewer, post, version, user, 3)
		if err != nil {
			t.Fatal(err)
		}
		if pg.More() && len(pg.Likers) < 3 {
			t.Errorf("page %d: %d likers and more; want full pages past the blocked", page, len(pg.Likers))
		}
		for _, l := range pg.Likers {
			got = append(got, l.User.ID)
		}
		if !pg.More() {
			break
		}
		version, user = pg.Next.Version, pg.Next.User.ID
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("likers as the viewer sees them = %v; want %v", got, want)
	}

	// The author of every post is blocked: nothing of theirs is found.
	if _, err := f.store.Block(ctx, viewer, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.PostLikers(ctx, viewer, post, 0, 0, 3); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Errorf("likers of a blocked author's post: %v; want not found", err)
	}
	if _, err := f.svc.Like(ctx, viewer, post); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Errorf("like of a blocked author's post: %v; want not found", err)
	}
	if _, err := f.svc.UserLikes(ctx, viewer, 100, 0, 10); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Errorf("likes of a blocked user: %v; want not found", err)
	}
	pg, err := f.svc.UserLikes(ctx, viewer, 135, 0, 10)
	if err != nil || len(pg.Posts) != 0 || pg.More() {
		t.Errorf("likes of a visible user, of a blocked author's post: %+v, %v; want none", pg, err)
	}
	if pg, err := f.svc.UserLikes(ctx, 0, 135, 0, 10); err != nil || len(pg.Posts) != 1 {
		t.Errorf("the admin's view of the same likes: %+v, %v; want the post", pg, err)
	}
}

// TestTopWindow: the top posts' window is one rule with one message: a Go
// duration or days, from 1s to the configured bound.
func TestTopWindow(t *testing.T) {
	s := New(slog.New(slog.DiscardHandler), Config{}, nil, nil, nil, nil, nil)
	for w, want := range map[string]time.Duration{"": DefaultTopWindow, "7d": 7 * 24 * time.Hour, "90m": 90 * time.Minute, "1s": time.Second, "30d": 30 * 24 * time.Hour} {
		if got, err := s.parseWindow(w); err != nil || got != want {
			t.Errorf("window %q = %v, %v; want %v", w, got, err, want)
		}
	}
	for _, w := range []string{"0s", "500ms", "-1h", "1x", "d", "0d", "+1d", "31d", "721h"} {
		_, err := s.parseWindow(w)
		if feed.ErrorCode(err) != feed.EINVALID || !strings.Contains(err.Error(), "from 1s to 30d, like 24h, 90m or 7d") {
			t.Errorf("window %q: %v; want the one invalid window message", w, err)
		}
	}
}
