package pages

import (
	"context"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// fakes answer with fixed values: a timeline whose feed page and a likes
// service whose states may each be degraded.
type fakeTimeline struct {
	page   feed.Page
	hidden feed.Hidden
}

func (f fakeTimeline) Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error) {
	return f.page, nil
}
func (f fakeTimeline) RankedFeed(ctx context.Context, reader, pos int64, n int) (feed.Page, error) {
	return f.page, nil
}
func (f fakeTimeline) ListFeed(ctx context.Context, reader, list, before int64, n int) (feed.Page, error) {
	return f.page, nil
}
func (f fakeTimeline) RankedListFeed(ctx context.Context, reader, list, pos int64, n int) (feed.Page, error) {
	return f.page, nil
}
func (f fakeTimeline) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, bool, error) {
	return f.page.Posts, true, nil
}
func (f fakeTimeline) Post(ctx context.Context, id int64) (feed.Post, error) {
	return f.page.Posts[0], nil
}
func (f fakeTimeline) EditPost(ctx context.Context, actor, id int64, e feed.PostEdit) (feed.Post, error) {
	return f.page.Posts[0], nil
}
func (f fakeTimeline) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	return f.hidden, nil
}

type fakeLikes struct{ degraded bool }

func (f fakeLikes) LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (map[int64]feed.LikeState, bool, error) {
	out := map[int64]feed.LikeState{}
	for _, p := range posts {
		out[p.ID] = feed.LikeState{Count: 1, LikedByMe: viewer == 7}
	}
	return out, f.degraded, nil
}
func (fakeLikes) UserLikes(ctx context.Context, viewer, user, before int64, n int) (feed.Page, error) {
	return feed.Page{}, nil
}
func (fakeLikes) TopPosts(ctx context.Context, viewer int64, window string, n int) ([]feed.Post, error) {
	return nil, nil
}

// TestFeedJoin: a feed page keeps the timeline's cursor, gets its posts'
// likes as its reader sees them, and is degraded when its posts or their
// likes came from the cache alone; other pages do not say.
func TestFeedJoin(t *testing.T) {
	posts := []feed.Post{{ID: 30, AuthorID: 2}, {ID: 20, AuthorID: 3}}
	for _, tt := range []struct{ posts, likes, want bool }{{false, false, false}, {true, false, true}, {false, true, true}} {
		s := New(fakeTimeline{page: feed.Page{Posts: posts, Next: 5, Degraded: tt.posts}}, fakeLikes{degraded: tt.likes})
		pg, err := s.Feed(t.Context(), 7, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if pg.Next != 5 || len(pg.Posts) != 2 || !pg.States[30].LikedByMe || pg.Degraded != tt.want {
			t.Errorf("posts degraded %v, likes degraded %v: page %+v; want next 5, liked, degraded %v", tt.posts, tt.likes, pg, tt.want)
		}
		if ap, _ := s.AuthorPosts(t.Context(), 7, 2, 0, 2); ap.Degraded {
			t.Errorf("an author page says degraded: %+v", ap)
		}
	}
}

// TestBlockedIsNotFound: a post or an author's posts on the other side of
// a block are not found, as if they did not exist.
func TestBlockedIsNotFound(t *testing.T) {
	tl := fakeTimeline{page: feed.Page{Posts: []feed.Post{{ID: 30, AuthorID: 2}}}, hidden: feed.NewHidden(nil, []int64{2})}
	s := New(tl, fakeLikes{})
	if _, err := s.Post(t.Context(), 7, 30); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Errorf("a blocked author's post: %v; want not found", err)
	}
	if _, err := s.AuthorPosts(t.Context(), 7, 2, 0, 10); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Errorf("a blocked author's posts: %v; want not found", err)
	}
	if pg, err := s.AuthorPosts(t.Context(), 7, 3, 0, 10); err != nil || len(pg.Posts) != 1 {
		t.Errorf("another author's posts: %+v, %v; want the page", pg, err)
	}
}

func (f fakeTimeline) Replies(ctx context.Context, viewer, parent, after int64, n int) (feed.Page, error) {
	return feed.Page{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", parent)
}

func (f fakeTimeline) Thread(ctx context.Context, viewer, id int64) (feed.Thread, error) {
	return feed.Thread{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
}
