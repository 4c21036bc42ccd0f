package replies

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/feedd/feedd/internal/feed"
)

// Limits of a thread (GET /v1/posts/{id}/context).
const (
	// MaxAncestors bounds the ancestors shown, nearest kept.
	MaxAncestors = 40
	// MaxDescendants bounds the descendants shown.
	MaxDescendants = 200
	// maxThreadIDs bounds the descendants' ids read, hidden and deleted
	// ones included, so that a thread of any size costs a bounded read.
	maxThreadIDs = 2000
)

// livePost returns post id if it lives and no block stands between its
// author and viewer: else ENOTFOUND, as for the single post.
func (s *Service) livePost(ctx context.Context, viewer, id int64, h feed.Hidden) (feed.Post, error) {
	p, err := s.posts.Post(ctx, id)
	if err == nil && h.Blocked(p.AuthorID) {
		err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	return p, err
}

// Replies returns a page of up to n of parent's live direct replies above
// after (0: from the oldest), oldest first, leaving out those of authors
// viewer mutes or a block stands between: the page reads ahead past them
// and past deleted replies (feed.ReadAhead), so it is full while more
// exist. An unknown or deleted parent is ENOTFOUND.
func (s *Service) Replies(ctx context.Context, viewer, parent, after int64, n int) (feed.Page, error) {
	h, err := s.posts.Hidden(ctx, viewer)
	if err != nil {
		return feed.Page{}, err
	}
	if _, err := s.livePost(ctx, viewer, parent, h); err != nil {
		return feed.Page{}, err
	}
	out := make([]feed.Post, 0, n)
	read := 0
	for round := 0; round < feed.MaxFilteredRounds; round++ {
		want := n - len(out)
		if round > 0 {
			want = feed.ReadAhead(want, read, len(out))
		}
		ids, err := s.store.ReplyIDs(ctx, parent, after, want)
		if err != nil {
			return feed.Page{}, fmt.Errorf("replies: page of %d: %w", parent, err)
		}
		read += len(ids)
		posts, err := s.posts.LivePosts(ctx, ids)
		if err != nil {
			return feed.Page{}, fmt.Errorf("replies: page of %d: %w", parent, err)
		}
		for _, p := range posts {
			if h.InList(p.AuthorID) {
				continue
			}
			out = append(out, p)
			if len(out) == n {
				// More may follow: the next page starts after this one.
				return feed.Page{Posts: out, Next: p.ID}, nil
			}
		}
		if len(ids) < want {
			return feed.Page{Posts: out}, nil
		}
		after = ids[len(ids)-1]
	}
	// The read bound: a short page, with a cursor at the last id read.
	return feed.Page{Posts: out, Next: after}, nil
}

// Thread returns post id's thread as viewer sees it: its ancestors from
// the root down (at most MaxAncestors, the nearest) and its descendants in
// thread order (at most MaxDescendants). Deleted posts and those of
// authors viewer mutes or a block stands between are left out (their
// replies stay). An unknown or deleted post, or one a block hides, is
// ENOTFOUND.
func (s *Service) Thread(ctx context.Context, viewer, id int64) (feed.Thread, error) {
	h, err := s.posts.Hidden(ctx, viewer)
	if err != nil {
		return feed.Thread{}, err
	}
	p, err := s.livePost(ctx, viewer, id, h)
	if err != nil {
		return feed.Thread{}, err
	}
	up, err := s.ancestors(ctx, p, h)
	if err != nil {
		return feed.Thread{}, err
	}
	down, err := s.descendants(ctx, id, h)
	if err != nil {
		return feed.Thread{}, err
	}
	return feed.Thread{Ancestors: up, Descendants: down}, nil
}

// ancestors walks up from p, one post lookup per level: the caches
// first, SQL for a deleted ancestor, whose record keeps its parent.
func (s *Service) ancestors(ctx context.Context, p feed.Post, h feed.Hidden) ([]feed.Post, error) {
	var up []feed.Post
	seen := map[int64]bool{p.ID: true}
	for parent := p.InReplyToID; parent != 0 && len(up) < MaxAncestors && !seen[parent]; {
		seen[parent] = true
		a, err := s.anyPost(ctx, parent)
		if err != nil {
			return nil, fmt.Errorf("replies: ancestors of %d: %w", p.ID, err)
		}
		if a.ID == 0 {
			break
		}
		if !a.Deleted && !h.InList(a.AuthorID) {
			up = append(up, a)
		}
		parent = a.InReplyToID
	}
	slices.Reverse(up)
	return up, nil
}

// anyPost returns post id live from the caches, or as SQL has it (a
// tombstone that keeps its parent); the zero Post if it is gone.
func (s *Service) anyPost(ctx context.Context, id int64) (feed.Post, error) {
	live, err := s.posts.LivePosts(ctx, []int64{id})
	if err != nil || len(live) == 1 {
		if len(live) == 1 {
			return live[0], nil
		}
		return feed.Post{}, err
	}
	posts, err := s.store.Posts(ctx, []int64{id})
	return posts[id], err
}

// descendants reads the thread below root level by level (one query per
// level and shard, maxThreadIDs ids in all), then lays it out depth
// first.
func (s *Service) descendants(ctx context.Context, root int64, h feed.Hidden) ([]feed.Post, error) {
	children := map[int64][]int64{}
	var all []int64
	level := []int64{root}
	for len(level) > 0 && len(all) < maxThreadIDs {
		next, err := s.store.ChildReplies(ctx, level, maxThreadIDs-len(all))
		if err != nil {
			return nil, fmt.Errorf("replies: thread of %d: %w", root, err)
		}
		level = level[:0:0]
		for _, parent := range slices.Sorted(maps.Keys(next)) {
			for _, c := range next[parent] {
				if _, dup := children[c]; dup || c == root {
					continue
				}
				children[c] = nil
				level = append(level, c)
				all = append(all, c)
			}
			children[parent] = next[parent]
		}
	}
	posts, err := s.posts.LivePosts(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("replies: thread of %d: %w", root, err)
	}
	live := make(map[int64]feed.Post, len(posts))
	for _, p := range posts {
		if !h.InList(p.AuthorID) {
			live[p.ID] = p
		}
	}
	out := make([]feed.Post, 0, min(len(live), MaxDescendants))
	// Depth first with an explicit stack: children pushed newest first,
	// so the oldest is visited first.
	stack := append([]int64(nil), reversed(children[root])...)
	for len(stack) > 0 && len(out) < MaxDescendants {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p, ok := live[id]; ok {
			out = append(out, p)
		}
		stack = append(stack, reversed(children[id])...)
	}
	return out, nil
}

func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}
