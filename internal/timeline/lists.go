package timeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/feedd/feedd/internal/feed"
)

// ListFeed returns up to n live posts of the members of reader's list id
// with ids below before (0: from the newest), newest first, and whether
// more exist; ENOTFOUND when reader has no such list. Members reader mutes
// or a block stands between are left out. Ids are unique and ordered, so
// one id is the whole cursor, as on the home feed, and a member's posts
// are in the page from the moment they are added, none once removed.
//
// A page merges the members' author lists, as a hybrid page merges its
// pulled authors': each member's newest post ids, shared by every list and
// every hybrid reader, held in process memory for a second, continued in
// SQL past a list's trimmed end (authorListSource). A list costs no Redis
// of its own, and a first page usually no SQL at all.
func (s *Service) ListFeed(ctx context.Context, reader, list, before int64, n int) (feed.Page, error) {
	ctx, gaps := feed.WithGaps(ctx)
	st, err := s.listState(ctx, reader, list)
	if err != nil {
		return feed.Page{}, err
	}
	hidden, err := s.Hidden(ctx, reader)
	if err != nil {
		return feed.Page{}, err
	}
	members := slices.DeleteFunc(slices.Clone(st.members), hidden.InList)
	var srcs []source
	if s.authorLists == nil {
		// A service built without author lists: SQL alone.
		srcs = []source{authorsSQLSource{s: s, authors: members}}
	} else {
		heads := s.memberHeads(ctx, members)
		srcs = make([]source, len(members))
		for i, m := range members {
			srcs[i] = authorListSource{s: s, author: m, head: heads[i]}
		}
	}
	// A deleted post a list still holds makes a page read on, as the home
	// feed does, and leaves the list (lazy delete); so does a reply the
	// list's rule leaves out (it stays in the author's list), and a
	// member's repost of a post whose author the reader mutes or a block
	// stands between (docs/reposts.md).
	pg, err := s.readPage(ctx, srcs, before, n, feed.MaxFilteredRounds, func(live []feed.Post) ([]feed.Post, error) {
		return s.replyRule(ctx, reader, st.rule, slices.DeleteFunc(live, hidden.HidesRepost), true)
	})
	if err != nil {
		return feed.Page{}, fmt.Errorf("timeline: posts of list %d: %w", list, err)
	}
	pg.Degraded = gaps.Any()
	return pg, nil
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

// warmHeadIDs is how many ids of each member's list memberHeads reads.
const warmHeadIDs = 48

// memberHeads returns the heads of the authors' lists, in the authors'
// order: the process's copies, looked up at once, and in one round trip
// the ones it does not hold. An author whose head is not known (no list,
// a failed read) gets the zero listHead, which answers nothing: its
// source reads on its own.
func (s *Service) memberHeads(ctx context.Context, authors []int64) []listHead {
	out := make([]listHead, len(authors))
	if s.authorLists == nil {
		return out
	}
	found := make([]bool, len(authors))
	hits := 0
	s.heads.GetEach(authors, func(i int, h listHead) {
		out[i], found[i] = h, true
		hits++
	})
	s.metrics.headHits.Add(float64(hits))
	var cold []int64
	for i, a := range authors {
		if !found[i] {
			cold = append(cold, a)
		}
	}
	s.metrics.headMisses.Add(float64(len(cold)))
	if len(cold) < 2 {
		return out
	}
	// A first page and the next take 21 ids a member at the most; a
	// deeper page reads on from the author lists themselves.
	pages, err := s.authorLists.InboxPages(ctx, cold, warmHeadIDs)
	if err != nil {
		s.cacheFailed("read author lists", err)
		return out
	}
	for i, a := range authors {
		if pg, ok := pages[a]; ok && !found[i] && pg.Exists {
			out[i] = listHead{ids: pg.IDs, complete: pg.Complete}
			s.heads.Put(a, out[i])
		}
	}
	return out
}

// ListMemberIDs returns the members of reader's list id, ascending;
// ENOTFOUND for no such list. The slice is shared: read it, never change
// it.
func (s *Service) ListMemberIDs(ctx context.Context, reader, list int64) ([]int64, error) {
	st, err := s.listState(ctx, reader, list)
	return st.members, err
}

// listKey names a list: its owner's id and its own.
type listKey struct{ owner, list int64 }

// memberSets bounds the lists whose members a process keeps: 4 KB for a
// list of 500.
const memberSets = 8192

// listState is what a page of a list needs of it: its members,
// ascending, and its rule for replies.
type listState struct {
	members []int64
	rule    feed.ListReplyRule
}

// listState returns the members and reply rule of reader's list id. Every
// page of the list needs them: the process keeps them for HiddenTTL, as
// it keeps the reader's hidden set, so that a list read again and again
// (a scroll, a refresh) reads them from SQL once a second at most. A
// change made through this process shows at once (ListChanged), through
// another within HiddenTTL, or at once for its maker when reads follow
// writes (wroteSince).
func (s *Service) listState(ctx context.Context, reader, list int64) (listState, error) {
	k := listKey{reader, list}
	if st, ok := s.members.Get(k); ok && !s.wroteSince(ctx, 2*s.cfg.HiddenTTL) {
		return st, nil
	}
	l, err := s.store.List(ctx, reader, list)
	if err != nil {
		return listState{}, fmt.Errorf("timeline: list %d: %w", list, err)
	}
	m, err := s.store.ListMembers(ctx, reader, list, 0, feed.MaxListMembers)
	if err != nil {
		return listState{}, fmt.Errorf("timeline: members of list %d: %w", list, err)
	}
	st := listState{members: m, rule: feed.NewListReplyRule(l.Replies, m)}
	s.members.Put(k, st)
	return st, nil
}

// ListChanged drops the process's copy of the members of owner's list id:
// they changed, or the list was deleted.
func (s *Service) ListChanged(owner, list int64) {
	s.members.Delete(listKey{owner, list})
}

// ListFeedSince is FeedSince of reader's list id: up to n of its live
// posts with ids above after, newest first, read from SQL, and whether
// SQL had more. A list stream's resume reads it.
func (s *Service) ListFeedSince(ctx context.Context, reader, list, after int64, n int) ([]feed.Post, bool, error) {
	st, err := s.listState(ctx, reader, list)
	if err != nil {
		return nil, false, err
	}
	hidden, err := s.Hidden(ctx, reader)
	if err != nil {
		return nil, false, err
	}
	members := slices.DeleteFunc(slices.Clone(st.members), hidden.InList)
	ids, err := s.store.AuthorsPostIDs(ctx, members, 0, n)
	if err != nil {
		return nil, false, fmt.Errorf("timeline: list %d since %d: %w", list, after, err)
	}
	more := len(ids) == n
	if k := slices.IndexFunc(ids, func(id int64) bool { return id <= after }); k >= 0 {
		ids, more = ids[:k], false
	}
	posts, _, err := s.hydrate(ctx, ids, true)
	if err != nil {
		return nil, false, err
	}
	if posts, err = s.replyRule(ctx, reader, st.rule, posts, true); err != nil {
		return nil, false, err
	}
	return posts, more, nil
}
