package timeline

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// ListFeed returns up to n live posts of the members of reader's list id
// with ids below before (0: from the newest), newest first, and whether
// more exist; ENOTFOUND when reader has no such list. Members reader mutes
// or a block stands between are left out. The page is read from SQL (one
// range on posts_author per member, merged), so it holds a member's posts
// from the moment they are added and none once they are removed; ids are
// unique and ordered, so one id is the whole cursor, as on the home feed.
func (s *Service) ListFeed(ctx context.Context, reader, list, before int64, n int) (feed.Page, error) {
	members, err := s.store.ListMembers(ctx, reader, list, 0, feed.MaxListMembers)
	if err != nil {
		return feed.Page{}, fmt.Errorf("timeline: members of list %d: %w", list, err)
	}
	hidden, err := s.Hidden(ctx, reader)
	if err != nil {
		return feed.Page{}, err
	}
	authors := members[:0]
	for _, m := range members {
		if !hidden.InList(m) {
			authors = append(authors, m)
		}
	}
	var posts []feed.Post
	pos := before
	// A deleted post the query did not skip (a user's deletion, which
	// marks no post) makes a page read on, as the home feed does.
	for range maxReadRounds {
		want := n - len(posts) + 1
		ids, err := s.store.AuthorsPostIDs(ctx, authors, pos, want)
		if err != nil {
			return feed.Page{}, fmt.Errorf("timeline: posts of list %d: %w", list, err)
		}
		live, _, err := s.hydrate(ctx, ids, withSQL)
		if err != nil {
			return feed.Page{}, err
		}
		for _, p := range live {
			if len(posts) == n {
				return feed.PageOf(posts, true), nil
			}
			posts = append(posts, p)
		}
		if len(ids) < want {
			return feed.PageOf(posts, false), nil
		}
		pos = ids[len(ids)-1]
	}
	return feed.PageOf(posts, true), nil
}
