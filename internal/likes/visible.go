package likes

import (
	"context"

	"github.com/feedd/feedd/internal/feed"
)

// Blocks and the likes. A block hides each user from the other like a
// user who does not exist: a post of the other side cannot be liked and
// its likers are not listed (ENOTFOUND, as for a missing post), the other
// side's likes are not listed, and lists (likers, a user's likes, the top
// posts) leave the other's entries out. A post's like count stays the true
// count. Lists read on past the entries they leave out with the read-ahead
// of every filtered page (feed.ReadAhead).

// Visibility says what a viewer does not see (the timeline service): its
// mutes and its blocks either way; viewer 0, the admin, sees everything.
type Visibility interface {
	Hidden(ctx context.Context, viewer int64) (feed.Hidden, error)
}

// visiblePost returns ENOTFOUND when a block stands between viewer and
// post's author. Only a viewer with blocks pays the post lookup.
func (s *Service) visiblePost(ctx context.Context, h feed.Hidden, post int64) error {
	if !h.HasBlocks() {
		return nil
	}
	p, err := s.livePost(ctx, post)
	if err != nil {
		return err
	}
	if h.Blocked(p.AuthorID) {
		return feed.Errorf(feed.ENOTFOUND, "post %d does not exist", post)
	}
	return nil
}

// filtered reads one page of n items a viewer may see out of a list read
// in rounds from pos (next returns up to want items after pos and whether
// more exist): it keeps the items keep accepts, and while filter is on
// reads on for feed.MaxFilteredRounds rounds, ahead by feed.ReadAhead. It
// returns the items kept, the position of the last item the page covers
// (where the next page starts) and whether more may exist past it.
func filtered[T, P any](n int, pos P, filter bool, next func(pos P, want int) ([]T, bool, error), posOf func(T) P, keep func(T) bool) ([]T, P, bool, error) {
	rounds := 1
	if filter {
		rounds = feed.MaxFilteredRounds
	}
	kept := make([]T, 0, n)
	read, shown := 0, 0
	for round := 0; round < rounds; round++ {
		need := n - len(kept)
		want := need
		if round > 0 {
			want = feed.ReadAhead(need, read, shown)
		}
		items, more, err := next(pos, want)
		if err != nil {
			return nil, pos, false, err
		}
		for i, it := range items {
			pos = posOf(it)
			read++
			if !keep(it) {
				continue
			}
			kept = append(kept, it)
			shown++
			if len(kept) == n {
				return kept, pos, more || i < len(items)-1, nil
			}
		}
		if !more || len(items) == 0 {
			return kept, pos, false, nil
		}
	}
	// The rounds ran out before the page filled: more may exist past pos.
	return kept, pos, true, nil
}
