package timeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/feedd/feedd/internal/feed"
)

// Reposts in pages (docs/reposts.md). A repost is a post of the
// reposter's that names its original, so the inboxes, author lists and
// SQL reads carry it as any post; what a page adds is its original,
// hydrated through the same caches (attachOriginals), and the home feed's
// rules: the reader's own posts reposted, the followees whose reposts the
// reader hides and the authors it mutes or a block stands between
// (feed.Hidden.HomeHidesRepost), and the dedupe (dedupe).

// DedupeWindow is how many items below a repost the home feed looks at
// for its original or another repost of it (Mastodon's rule).
const DedupeWindow = 40

// attachOriginals gives each repost among live its original
// (feed.Post.RepostOf), hydrated as live is (sql as hydrate's). A repost
// whose original is deleted, or whose author is gone, is dead: the
// original's delete removes its reposts everywhere, and the sources
// forget them as they do deleted posts. One whose original is unknown
// without SQL is left out, not dead.
func (s *Service) attachOriginals(ctx context.Context, live []feed.Post, sql bool) ([]feed.Post, []int64, error) {
	var ids []int64
	for _, p := range live {
		if p.IsRepost() {
			ids = append(ids, p.RepostOfID)
		}
	}
	if len(ids) == 0 {
		return live, nil, nil
	}
	originals, deadOriginals, err := s.hydrate(ctx, ids, sql)
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[int64]*feed.Post, len(originals))
	for i := range originals {
		byID[originals[i].ID] = &originals[i]
	}
	deadSet := make(map[int64]bool, len(deadOriginals))
	for _, id := range deadOriginals {
		deadSet[id] = true
	}
	kept := make([]feed.Post, 0, len(live))
	var dead []int64
	for _, p := range live {
		if !p.IsRepost() {
			kept = append(kept, p)
			continue
		}
		o, ok := byID[p.RepostOfID]
		switch {
		case ok && !o.IsRepost():
			p.RepostOf = o
			kept = append(kept, p)
		case ok || deadSet[p.RepostOfID]:
			dead = append(dead, p.ID)
		}
	}
	return kept, dead, nil
}

// repostRule returns live without the reposts reader's home feed leaves
// out by their fields alone (feed.Hidden.HomeHidesRepost).
func repostRule(reader int64, hidden feed.Hidden, live []feed.Post) []feed.Post {
	kept := live[:0]
	for _, p := range live {
		if !hidden.HomeHidesRepost(reader, p) {
			kept = append(kept, p)
		}
	}
	return kept
}

// dedupe leaves out of a home page the reposts whose original, or
// another repost of it, is among the DedupeWindow items below them. The
// items are the feed's live posts as its sources give them, before the
// reader's filters, so that the rule depends only on what lies below and
// every page decides alike wherever it starts: one more read of the
// sources below the page's newest repost (at most feed.MaxRoundIDs ids,
// the page's span and the window), only for a page that holds a repost.
func (s *Service) dedupe(ctx context.Context, srcs []source, pg feed.Page) (feed.Page, error) {
	first := -1
	for i, p := range pg.Posts {
		if p.IsRepost() {
			first = i
			break
		}
	}
	if first < 0 {
		return pg, nil
	}
	want := min(feed.MaxRoundIDs, 2*(len(pg.Posts)-first)+DedupeWindow)
	lists, err := fetchAll(ctx, srcs, pg.Posts[first].ID, want)
	if err != nil {
		return feed.Page{}, fmt.Errorf("timeline: read below a page's reposts: %w", err)
	}
	items, _, err := s.hydrate(ctx, mergeK(lists, want), withSQL)
	if err != nil {
		return feed.Page{}, err
	}
	at := make(map[int64]int, len(items))
	for i, q := range items {
		at[q.ID] = i
	}
	kept := pg.Posts[:first:first]
	for _, p := range pg.Posts[first:] {
		if p.IsRepost() {
			// Below pg.Posts[first]: items start right under it.
			from := 0
			if i, ok := at[p.ID]; ok {
				from = i + 1
			}
			if seenBelow(p.RepostOfID, items[min(from, len(items)):min(len(items), from+DedupeWindow)]) {
				continue
			}
		}
		kept = append(kept, p)
	}
	pg.Posts = kept
	return pg, nil
}

// seenBelow reports whether original, or a repost of it, is among items.
func seenBelow(original int64, items []feed.Post) bool {
	for _, q := range items {
		if q.ID == original || q.RepostOfID == original {
			return true
		}
	}
	return false
}

// dedupeUnread is dedupe for the unread count's posts: the window below
// a repost reaches past the marker, so it reads sources not cut there,
// made only when the posts hold a repost.
func (s *Service) dedupeUnread(ctx context.Context, reader int64, hidden feed.Hidden, live []feed.Post) ([]feed.Post, error) {
	if !slices.ContainsFunc(live, feed.Post.IsRepost) {
		return live, nil
	}
	_, srcs, err := s.sources(ctx, reader, 0, hidden)
	if err != nil {
		return nil, err
	}
	pg, err := s.dedupe(ctx, srcs, feed.Page{Posts: live})
	return pg.Posts, err
}
