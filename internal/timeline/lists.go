package timeline

import (
	"context"
	"fmt"
	"math"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
)

// ListFeed returns up to n live posts of the members of reader's list id
// with ids below before (0: from the newest), newest first, and whether
// more exist; ENOTFOUND when reader has no such list. Members reader mutes
// or a block stands between are left out. Ids are unique and ordered, so
// one id is the whole cursor, as on the home feed, and a member's posts
// are in the page from the moment they are added, none once removed.
//
// A page comes from the members' author lists (membersSource): each
// author's newest post ids, shared by every list and by hybrid readers,
// held in process memory for a second; below what those lists hold, from
// SQL, one query over all the members. A list costs no Redis of its own.
func (s *Service) ListFeed(ctx context.Context, reader, list, before int64, n int) (feed.Page, error) {
	ctx, gaps := feed.WithGaps(ctx)
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
	src := &membersSource{s: s, members: authors}
	var posts []feed.Post
	pos := before
	// A deleted post a source still holds makes a page read on, as the
	// home feed does.
	for range maxReadRounds {
		want := n - len(posts) + 1
		ids, exhausted, err := src.next(ctx, pos, want)
		if err != nil {
			return feed.Page{}, fmt.Errorf("timeline: posts of list %d: %w", list, err)
		}
		live, _, err := s.hydrate(ctx, ids, withSQL)
		if err != nil {
			return feed.Page{}, err
		}
		for _, p := range live {
			if len(posts) == n {
				pg := feed.PageOf(posts, true)
				pg.Degraded = gaps.Any()
				return pg, nil
			}
			posts = append(posts, p)
		}
		if exhausted || len(ids) == 0 {
			return feed.Page{Posts: posts, Degraded: gaps.Any()}, nil
		}
		pos = ids[len(ids)-1]
	}
	pg := feed.PageOf(posts, true)
	pg.Degraded = gaps.Any()
	return pg, nil
}

// membersSource reads the posts of many authors, a list's members. Their
// author lists' heads (the newest AuthorListMax ids of each, listHead)
// answer a page down to the horizon: the highest oldest id of a list that
// does not hold all its author's posts, below which one author's posts may
// be missing from the heads. Past the horizon, SQL answers, one query over
// all the members, as a pull reader's page is read.
type membersSource struct {
	s       *Service
	members []int64
	heads   []listHead // loaded on the first call
	horizon int64
}

func (m *membersSource) next(ctx context.Context, pos int64, want int) ([]int64, bool, error) {
	if len(m.members) == 0 {
		return nil, true, nil
	}
	if m.s.authorLists == nil {
		// No author lists (a service built without them): SQL alone.
		m.heads, m.horizon = []listHead{}, math.MaxInt64
	}
	if m.heads == nil {
		if err := m.load(ctx); err != nil {
			return nil, false, err
		}
	}
	lists := make([][]int64, 0, len(m.heads))
	for _, h := range m.heads {
		below := h.ids
		if pos != 0 { // 0: from the newest; a post from before 2025 is below 0
			below = below[sort.Search(len(below), func(i int) bool { return below[i] < pos }):]
		}
		if len(below) > 0 {
			lists = append(lists, below)
		}
	}
	ids := mergeK(lists, want)
	valid := sort.Search(len(ids), func(i int) bool { return ids[i] < m.horizon })
	if valid == len(ids) && (len(ids) == want || m.horizon == math.MinInt64) {
		return ids, len(ids) < want, nil
	}
	ids, err := m.s.store.AuthorsPostIDs(ctx, m.members, pos, want)
	if err != nil {
		return nil, false, err
	}
	return ids, len(ids) < want, nil
}

// load reads every member's head, concurrently: from process memory, the
// cache, or, for a list the cache does not hold, SQL (which fills it).
func (m *membersSource) load(ctx context.Context) error {
	heads := make([]listHead, len(m.members))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sourceFetchers)
	for i, a := range m.members {
		g.Go(func() error {
			if h, ok := m.s.head(gctx, a); ok {
				heads[i] = h
				return nil
			}
			ids, err := m.s.rebuildAuthorList(gctx, a)
			if err != nil {
				return err
			}
			heads[i] = listHead{ids: ids, complete: len(ids) < m.s.cfg.AuthorListMax}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	m.heads, m.horizon = heads, math.MinInt64
	for _, h := range heads {
		switch {
		case h.complete:
		case len(h.ids) == 0:
			m.horizon = math.MaxInt64 // nothing known of this author: SQL for all
		default:
			m.horizon = max(m.horizon, h.ids[len(h.ids)-1])
		}
	}
	return nil
}

// ListMarker returns reader's marker of list id with its unread count: the
// live posts of the list newer than the marker, up to UnreadCap, as
// Marker counts the home feed's.
func (s *Service) ListMarker(ctx context.Context, reader, list int64) (feed.Marker, error) {
	m, err := s.store.ListMarker(ctx, reader, list)
	if err != nil {
		return feed.Marker{}, err
	}
	return s.withListUnread(ctx, reader, list, m)
}

// SetListMarker moves reader's marker of list id forward to lastRead, a
// post's id (a deleted post's too; a post of a user blocked either way is
// an unknown id), and returns it as ListMarker does.
func (s *Service) SetListMarker(ctx context.Context, reader, list, lastRead int64) (feed.Marker, error) {
	if err := s.checkMarkerPost(ctx, reader, lastRead); err != nil {
		return feed.Marker{}, err
	}
	m, err := s.store.SetListMarker(ctx, reader, list, lastRead, s.now())
	if err != nil {
		return feed.Marker{}, err
	}
	return s.withListUnread(ctx, reader, list, m)
}

// withListUnread counts the list's live posts above m, a page at a time,
// up to UnreadCap.
func (s *Service) withListUnread(ctx context.Context, reader, list int64, m feed.Marker) (feed.Marker, error) {
	var before int64
	for {
		pg, err := s.ListFeed(ctx, reader, list, before, min(s.cfg.UnreadCap+1-m.Unread, feed.MaxRoundIDs))
		if err != nil {
			return feed.Marker{}, err
		}
		for _, p := range pg.Posts {
			if m.LastReadID != 0 && p.ID <= m.LastReadID {
				return m, nil
			}
			if m.Unread == s.cfg.UnreadCap {
				m.UnreadCapped = true
				return m, nil
			}
			m.Unread++
		}
		if !pg.More() {
			return m, nil
		}
		before = pg.Next
	}
}
