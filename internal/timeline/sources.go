package timeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// source is one stream of a reader's feed: post ids strictly below a
// position, newest first. exhausted means it has nothing below the last
// id it returned.
type source interface {
	next(ctx context.Context, pos int64, want int) (ids []int64, exhausted bool, err error)
	// forget is told the deleted posts among the ids it returned, to
	// remove them from its cache (lazy delete).
	forget(ctx context.Context, dead []int64)
}

// sourceFetchers bounds the concurrent reads of one merged page's sources.
const sourceFetchers = 16

// quickSource is a source that can often answer from the process's memory
// (an author list's head): quick returns its ids then, false when only
// next, with its I/O, can. A list of 500 members is 500 sources, nearly
// all of them answered from memory: asked one after another in the
// request's goroutine, they cost no goroutine and no contended lock each.
type quickSource interface {
	quick(pos int64, want int) (ids []int64, ok bool)
}

// pulledSources reads the first MaxMergedAuthorLists pulled authors from
// their author lists and the rest with one SQL query per page.
func pulledSources(s *Service, authors []int64, after int64) []source {
	var srcs []source
	k := min(len(authors), s.cfg.MaxMergedAuthorLists)
	for _, a := range authors[:k] {
		srcs = append(srcs, authorListSource{s: s, author: a, after: after})
	}
	if rest := authors[k:]; len(rest) > 0 {
		srcs = append(srcs, authorsSQLSource{s: s, authors: rest})
	}
	return srcs
}

// fetchAll reads want ids below pos from every source: the first (the
// inbox) at once, the others concurrently with a bound.
func fetchAll(ctx context.Context, srcs []source, pos int64, want int) ([][]int64, error) {
	lists := make([][]int64, len(srcs))
	if len(srcs) == 1 {
		ids, _, err := srcs[0].next(ctx, pos, want)
		lists[0] = ids
		return lists, err
	}
	slow := make([]int, 0, len(srcs))
	for i, src := range srcs {
		if q, ok := src.(quickSource); ok {
			if ids, ok := q.quick(pos, want); ok {
				lists[i] = ids
				continue
			}
		}
		slow = append(slow, i)
	}
	if len(slow) == 0 {
		return lists, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sourceFetchers)
	for _, i := range slow {
		g.Go(func() error {
			ids, _, err := srcs[i].next(gctx, pos, want)
			lists[i] = ids
			return err
		})
	}
	return lists, g.Wait()
}

// inboxSource walks one reader's feed downwards: first the inbox, then
// SQL (FeedPostIDs: every followee, and the reader's own posts) once the
// inbox runs out and is not complete. In pull mode it is SQL from the
// start.
type inboxSource struct {
	s         *Service
	reader    int64
	after     int64 // SQL reads stop here (0: at the feed's end)
	fromInbox bool
	complete  bool // the inbox holds everything below its newest entry
	started   bool
	path      string
	// degraded is set when the inbox was served without its refresh
	// against SQL: the page may miss the newest posts.
	degraded bool
}

func (r *inboxSource) next(ctx context.Context, pos int64, want int) ([]int64, bool, error) {
	var ids []int64
	if r.fromInbox {
		pg, err := r.inboxPage(ctx, pos, want)
		if err != nil {
			// The cache is down: the reader gets the same feed from SQL.
			r.s.cacheFailed("read inbox", err)
			r.fromInbox, r.path = false, pathSQL
		} else {
			r.complete = pg.Complete
			if len(pg.IDs) == want || pg.Complete {
				return pg.IDs, len(pg.IDs) < want, nil
			}
			// Past the inbox's trimmed end: continue in SQL without a seam.
			ids = pg.IDs
			if len(ids) > 0 {
				pos = ids[len(ids)-1]
			}
			r.path = pathSQL
		}
	}
	more, err := r.s.store.FeedPostIDs(ctx, r.reader, r.after, pos, want-len(ids))
	if err != nil {
		return nil, false, fmt.Errorf("timeline: feed of %d from SQL: %w", r.reader, err)
	}
	ids = append(ids[:len(ids):len(ids)], more...)
	return ids, len(ids) < want, nil
}

func (r *inboxSource) forget(ctx context.Context, dead []int64) {
	if !r.fromInbox {
		return
	}
	if err := r.s.cache.RemoveFromInbox(ctx, r.reader, dead); err != nil {
		r.s.cacheFailed("lazy delete", err)
	}
}

func (r *inboxSource) inboxPage(ctx context.Context, pos int64, want int) (feed.InboxPage, error) {
	s := r.s
	first := !r.started
	r.started = true
	pg, err := s.cache.InboxPage(ctx, r.reader, pos, want)
	if err != nil {
		return pg, err
	}
	if first {
		s.metrics.cacheLookups.WithLabelValues("inbox", hitOrMiss(pg.Exists)).Inc()
	}
	if !pg.Exists {
		if !first {
			// Expired between two rounds of one page: read on from SQL.
			return pg, fmt.Errorf("timeline: inbox of %d vanished mid-page", r.reader)
		}
		ids, complete, err := s.rebuild(ctx, r.reader)
		if err != nil {
			return pg, err
		}
		r.path = pathRebuilt
		return pageBelow(ids, pos, want, complete), nil
	}
	if first && pos == 0 {
		added, err := s.refresh(ctx, r.reader, pg.IDs)
		if err != nil && sqlbreaker.IsUnavailable(err) {
			// The inbox is served without the refresh: it may miss the
			// newest posts a fan-out has not delivered yet.
			r.degraded = true
		}
		if err != nil {
			s.cacheFailed("smart refresh", err)
		} else if len(added) > 0 {
			pg.IDs = mergeDesc(pg.IDs, added, want)
		}
	}
	return pg, nil
}

// authorListSource reads one pulled author's posts: its author list,
// rebuilt from SQL when missing, continued in SQL past its trimmed end.
type authorListSource struct {
	s      *Service
	author int64
	after  int64 // SQL reads stop here (0: at the author's first post)
	// head is the head of the author's list as the page found it (a
	// list's page looks up all its members' at once, memberHeads); the
	// zero value: look it up.
	head listHead
}

// listHeadTTL is how old a process's copy of the head of a pulled
// author's list may be, and so how late a pulled author's new post may
// reach a merged page; listHeads bounds how many authors' heads a process
// keeps.
const (
	listHeadTTL = time.Second
	listHeads   = 16384 // at most 100 ids a head: about 13 MB
)

// listHead is a process's copy of the newest ids of a pulled author's
// list. A celebrity's list is read by every page of every one of its
// followers, the hottest keys there are, and a hot key is best answered by
// a short-lived copy in each process: a hundred processes cost the cache
// a hundred reads a second, not one per page. With it a merged page costs
// no cache call per pulled author (bench: 20 per page for readers of 20
// celebrities).
type listHead struct {
	ids      []int64 // newest first; shared, never modified
	complete bool    // ids are all the author's posts
}

// head returns the head of author's list, at most listHeadTTL old, and
// false when the list is absent or unreadable (the caller takes the long
// way).
func (s *Service) head(ctx context.Context, author int64) (listHead, bool) {
	if h, ok := s.heads.Get(author); ok {
		s.metrics.headHits.Inc()
		return h, true
	}
	s.metrics.headMisses.Inc()
	v, err, _ := s.headLoads.Do(strconv.FormatInt(author, 10), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		pg, err := s.authorLists.InboxPage(ctx, author, 0, s.cfg.AuthorListMax)
		if err != nil || !pg.Exists {
			return nil, errNoHead
		}
		h := listHead{ids: pg.IDs, complete: pg.Complete}
		s.heads.Put(author, h)
		return h, nil
	})
	if err != nil {
		return listHead{}, false
	}
	return v.(listHead), true
}

var errNoHead = errors.New("timeline: no author list head")

// below returns want ids of h below pos (0: from the newest; a post from
// before 2025 is below 0), sharing h's array, and whether they are all
// there are: false when h holds fewer and is not the whole list.
func (h listHead) below(pos int64, want int) ([]int64, bool) {
	ids := h.ids
	if pos != 0 {
		ids = ids[sort.Search(len(ids), func(i int) bool { return ids[i] < pos }):]
	}
	if len(ids) < want && !h.complete {
		return nil, false
	}
	k := min(want, len(ids))
	return ids[:k:k], true
}

// quick answers from the author's list head, the page's or the process's
// copy, when it reaches far enough.
func (o authorListSource) quick(pos int64, want int) ([]int64, bool) {
	if o.head.ids != nil || o.head.complete {
		return o.head.below(pos, want)
	}
	h, ok := o.s.heads.Get(o.author)
	if !ok {
		return nil, false
	}
	ids, ok := h.below(pos, want)
	if ok {
		o.s.metrics.headHits.Inc()
	}
	return ids, ok
}

func (o authorListSource) next(ctx context.Context, pos int64, want int) ([]int64, bool, error) {
	s := o.s
	if h, ok := s.head(ctx, o.author); ok {
		if ids, ok := h.below(pos, want); ok {
			return slices.Clone(ids), len(ids) < want, nil
		}
	}
	pg, err := s.authorLists.InboxPage(ctx, o.author, pos, want)
	if err == nil {
		s.metrics.cacheLookups.WithLabelValues("author_list", hitOrMiss(pg.Exists)).Inc()
	}
	if err == nil && !pg.Exists {
		ids, rerr := s.rebuildAuthorList(ctx, o.author)
		if rerr != nil {
			return nil, false, rerr
		}
		pg = pageBelow(ids, pos, want, len(ids) < s.cfg.AuthorListMax)
	}
	if err != nil {
		s.cacheFailed("read author list", err)
		pg = feed.InboxPage{}
	}
	ids := pg.IDs
	if len(ids) < want && !(pg.Exists && pg.Complete) {
		from := pos
		if len(ids) > 0 {
			from = ids[len(ids)-1]
		}
		more, err := s.store.AuthorPostIDs(ctx, o.author, o.after, from, want-len(ids))
		if err != nil {
			return nil, false, fmt.Errorf("timeline: posts of %d from SQL: %w", o.author, err)
		}
		ids = append(ids[:len(ids):len(ids)], more...)
	}
	return ids, len(ids) < want, nil
}

// rebuildAuthorList fills author's list from SQL and returns its ids. A
// celebrity's list is read by every one of its followers: when it expires,
// the concurrent misses rebuild it with one query.
func (s *Service) rebuildAuthorList(ctx context.Context, author int64) ([]int64, error) {
	v, err, _ := s.listFills.Do(strconv.FormatInt(author, 10), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		ids, err := s.store.AuthorPostIDs(ctx, author, 0, 0, s.cfg.AuthorListMax)
		if err != nil {
			return nil, fmt.Errorf("timeline: rebuild author list of %d: %w", author, err)
		}
		complete := len(ids) < s.cfg.AuthorListMax
		if ferr := s.authorLists.FillInbox(ctx, author, ids, complete, s.cfg.InboxTTL); ferr != nil {
			s.cacheFailed("fill author list", ferr)
		}
		return ids, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]int64), nil
}

func (o authorListSource) forget(ctx context.Context, dead []int64) {
	if err := o.s.authorLists.RemoveFromInbox(ctx, o.author, dead); err != nil {
		o.s.cacheFailed("lazy delete from author list", err)
	}
}

// authorsSQLSource reads many pulled authors at once from SQL: the
// overflow beyond MaxMergedAuthorLists.
type authorsSQLSource struct {
	s       *Service
	authors []int64
}

func (a authorsSQLSource) next(ctx context.Context, pos int64, want int) ([]int64, bool, error) {
	ids, err := a.s.store.AuthorsPostIDs(ctx, a.authors, pos, want)
	if err != nil {
		return nil, false, fmt.Errorf("timeline: posts of %d pulled authors: %w", len(a.authors), err)
	}
	return ids, len(ids) < want, nil
}

func (authorsSQLSource) forget(context.Context, []int64) {}
