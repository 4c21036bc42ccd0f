package replies

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// world is a thread in memory: posts by id, children by parent.
type world struct {
	posts    map[int64]feed.Post
	children map[int64][]int64
	hidden   feed.Hidden
}

func newWorld() *world {
	return &world{posts: map[int64]feed.Post{}, children: map[int64][]int64{}}
}

func (w *world) add(id, author, parent int64) {
	w.posts[id] = feed.Post{ID: id, AuthorID: author, InReplyToID: parent}
	if parent != 0 {
		w.children[parent] = append(w.children[parent], id)
	}
}

func (w *world) PostCounts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	out := map[int64]feed.Counts{}
	for _, id := range ids {
		if n := len(w.children[id]); n > 0 {
			out[id] = feed.Counts{Replies: int64(n)}
		}
	}
	return out, nil
}

func (w *world) PostCountsPrimary(ctx context.Context, ids []int64) (map[int64]feed.Counts, error) {
	return w.PostCounts(ctx, ids)
}

func (w *world) RepostedAmong(ctx context.Context, user int64, ids []int64) ([]int64, error) {
	return nil, nil
}

func (w *world) ReplyIDs(ctx context.Context, parent, after int64, n int) ([]int64, error) {
	var out []int64
	for _, id := range w.children[parent] {
		if id > after && len(out) < n {
			out = append(out, id)
		}
	}
	return out, nil
}

func (w *world) ChildReplies(ctx context.Context, parents []int64, n int) (map[int64][]int64, error) {
	out := map[int64][]int64{}
	for _, p := range slices.Sorted(slices.Values(parents)) {
		for _, c := range w.children[p] {
			if n == 0 {
				return out, nil
			}
			out[p] = append(out[p], c)
			n--
		}
	}
	return out, nil
}

func (w *world) Posts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	out := map[int64]feed.Post{}
	for _, id := range ids {
		if p, ok := w.posts[id]; ok {
			out[id] = p
		}
	}
	return out, nil
}

func (w *world) Post(ctx context.Context, id int64) (feed.Post, error) {
	p, ok := w.posts[id]
	if !ok || p.Deleted {
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	return p, nil
}

func (w *world) LivePosts(ctx context.Context, ids []int64) ([]feed.Post, error) {
	var out []feed.Post
	for _, id := range ids {
		if p, ok := w.posts[id]; ok && !p.Deleted {
			out = append(out, p)
		}
	}
	return out, nil
}

func (w *world) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) { return w.hidden, nil }

func ids(posts []feed.Post) []int64 {
	out := []int64{}
	for _, p := range posts {
		out = append(out, p.ID)
	}
	return out
}

// TestThread: descendants depth first, oldest first at each level, at
// most MaxDescendants; ancestors from the root, the nearest MaxAncestors;
// deleted and muted posts left out, their replies kept.
func TestThread(t *testing.T) {
	ctx := t.Context()
	w := newWorld()
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)), Config{}, w, w)
	w.add(1, 7, 0)
	w.add(2, 8, 1)
	w.add(3, 9, 1)
	w.add(4, 7, 2)
	w.add(5, 8, 4)
	w.add(6, 9, 3)
	th, err := s.Thread(ctx, 7, 1)
	if err != nil || !slices.Equal(ids(th.Descendants), []int64{2, 4, 5, 3, 6}) || len(th.Ancestors) != 0 {
		t.Fatalf("Thread(1) = %v / %v, %v; want [] / [2 4 5 3 6]", ids(th.Ancestors), ids(th.Descendants), err)
	}
	p := w.posts[4]
	p.Deleted = true
	w.posts[4] = p
	w.hidden = feed.NewHidden([]int64{9}, nil)
	if th, _ := s.Thread(ctx, 7, 1); !slices.Equal(ids(th.Descendants), []int64{2, 5}) {
		t.Fatalf("Thread(1) with 4 deleted and 9 muted = %v; want [2 5]", ids(th.Descendants))
	}
	if th, _ := s.Thread(ctx, 7, 5); !slices.Equal(ids(th.Ancestors), []int64{1, 2}) {
		t.Fatalf("ancestors of 5 under deleted 4 = %v; want [1 2]", ids(th.Ancestors))
	}
	if _, err := s.Thread(ctx, 7, 4); feed.ErrorCode(err) != feed.ENOTFOUND {
		t.Fatalf("Thread of a deleted post: %v; want ENOTFOUND", err)
	}

	w = newWorld()
	s = New(slog.New(slog.NewTextHandler(io.Discard, nil)), Config{}, w, w)
	w.add(100, 7, 0)
	for i := int64(101); i <= 400; i++ {
		w.add(i, 8, 100)
	}
	if th, _ := s.Thread(ctx, 7, 100); len(th.Descendants) != MaxDescendants || th.Descendants[0].ID != 101 {
		t.Fatalf("300 replies: %d descendants from %d; want %d from 101", len(th.Descendants), th.Descendants[0].ID, MaxDescendants)
	}
	for i := int64(1000); i < 1045; i++ {
		parent := i - 1
		if i == 1000 {
			parent = 0
		}
		w.add(i, 8, parent)
	}
	th, _ = s.Thread(ctx, 7, 1044)
	if got := ids(th.Ancestors); len(got) != MaxAncestors || got[0] != 1004 || got[len(got)-1] != 1043 {
		t.Fatalf("a chain of 45: %d ancestors %v…; want the nearest %d, 1004 to 1043", len(got), got[:2], MaxAncestors)
	}
}

// TestRepliesPage: pages are full past hidden authors and end with no
// cursor.
func TestRepliesPage(t *testing.T) {
	ctx := t.Context()
	w := newWorld()
	s := New(slog.New(slog.NewTextHandler(io.Discard, nil)), Config{}, w, w)
	w.add(1, 7, 0)
	for i := int64(2); i < 40; i++ {
		w.add(i, 8+i%3, 1) // authors 8, 9, 10
	}
	w.hidden = feed.NewHidden([]int64{9, 10}, nil)
	var got []int64
	after := int64(0)
	for range 20 {
		pg, err := s.Replies(ctx, 7, 1, after, 4)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(pg.Posts)...)
		if !pg.More() {
			break
		}
		if len(pg.Posts) != 4 {
			t.Fatalf("a page of %d before the end", len(pg.Posts))
		}
		after = pg.Next
	}
	var want []int64
	for i := int64(2); i < 40; i++ {
		if 8+i%3 == 8 {
			want = append(want, i)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("replies past muted authors = %v; want %v", got, want)
	}
}
