package timeline

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
)

// maxReadRounds bounds how often one page goes back for more ids when the
// ones it read turned out deleted, so a pathological inbox cannot make a
// read unbounded.
const maxReadRounds = 8

// outboxFetchers bounds the concurrent cache reads of one merged page.
const outboxFetchers = 16

// source is one stream of a reader's feed: post ids strictly below a
// position, newest first. exhausted means it has nothing below the last
// id it returned.
type source interface {
	next(ctx context.Context, pos int64, want int) (ids []int64, exhausted bool, err error)
	// forget is told the deleted posts among the ids it returned, to
	// remove them from its cache (lazy delete).
	forget(ctx context.Context, dead []int64)
}

// Feed returns up to n live posts of reader's home feed with ids below
// before (0: from the newest), newest first, and whether more exist.
//
// Push: the page comes from the inbox; a missing inbox is rebuilt from
// SQL; a first page is refreshed against SQL at most once per
// RefreshInterval; when the inbox runs out before the page is full and is
// not complete, the page continues from SQL below the last id seen. Pull:
// the page comes from SQL. Hybrid: the inbox is merged with the outboxes
// of the pulled authors the reader follows. Ids are unique and totally
// ordered, so every seam between sources is exact, one id is the whole
// cursor, and duplicates across sources are merged away.
//
// When SQL is unavailable (the breaker is open, or a call failed) the page
// comes from the cache alone and is marked degraded (cachedFeed). Switch
// L4 serves the reader's last good first page; L2 drops the pulled
// authors from hybrid reads.
func (s *Service) Feed(ctx context.Context, reader, before int64, n int) ([]feed.Post, bool, error) {
	if s.switches.On(degrade.L4) && before == 0 {
		return s.cachedFeed(ctx, reader, before, n, true)
	}
	if s.breaker != nil && s.breaker.Open() {
		return s.cachedFeed(ctx, reader, before, n, false)
	}
	posts, more, err := s.feed(ctx, reader, before, n)
	if err != nil && sqlUnavailable(err) {
		s.logger.WarnContext(ctx, "SQL unavailable: serving the feed from the cache alone", "reader", reader, "err", err)
		return s.cachedFeed(ctx, reader, before, n, false)
	}
	if err == nil && before == 0 && s.lastSaved != nil {
		s.saveLastGood(ctx, reader, posts, more)
	}
	return posts, more, err
}

func (s *Service) feed(ctx context.Context, reader, before int64, n int) ([]feed.Post, bool, error) {
	in := &inboxSource{s: s, reader: reader, fromInbox: s.cfg.Policy.Mode != feed.ModePull, path: pathInbox}
	if !in.fromInbox {
		in.path = pathSQL
	}
	srcs := []source{in}
	if s.merges() && !s.switches.On(degrade.L2) {
		pullees, err := s.pullees(ctx, reader)
		if err != nil {
			return nil, false, fmt.Errorf("timeline: pulled followees of %d: %w", reader, err)
		}
		srcs = append(srcs, pulledSources(s, pullees)...)
	}

	out := make([]feed.Post, 0, n+1)
	pos := before
	// Ask for one more than the page so that "more exist" is known
	// without a second request returning an empty page.
	for round := 0; len(out) <= n && round < maxReadRounds; round++ {
		want := n + 1 - len(out)
		if round > 0 {
			want += want / 2 // deleted posts were met: read a little further ahead
		}
		lists, err := fetchAll(ctx, srcs, pos, want)
		if err != nil {
			return nil, false, err
		}
		ids := mergeK(lists, want)
		live, dead, err := s.hydrate(ctx, ids)
		if err != nil {
			return nil, false, err
		}
		if len(dead) > 0 {
			s.metrics.lazyDeletes.Add(float64(len(dead)))
			for i, src := range srcs {
				if d := intersect(dead, lists[i]); len(d) > 0 {
					src.forget(ctx, d)
				}
			}
		}
		out = append(out, live...)
		if len(ids) < want {
			break // every source is exhausted below pos
		}
		pos = ids[len(ids)-1]
	}
	path := in.path
	if len(srcs) > 1 {
		path = pathMerged
	}
	s.metrics.reads.WithLabelValues(path).Inc()
	if len(out) > n {
		return out[:n], true, nil
	}
	return out, false, nil
}

// pulledSources reads the first MaxMergedOutboxes pulled authors from
// their cached outboxes and the rest with one SQL query per page.
func pulledSources(s *Service, authors []int64) []source {
	var srcs []source
	k := min(len(authors), s.cfg.MaxMergedOutboxes)
	for _, a := range authors[:k] {
		srcs = append(srcs, outboxSource{s: s, author: a})
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
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(outboxFetchers)
	for i, src := range srcs {
		g.Go(func() error {
			ids, _, err := src.next(gctx, pos, want)
			lists[i] = ids
			return err
		})
	}
	return lists, g.Wait()
}

// inboxSource walks one reader's feed downwards: first the inbox, then
// SQL (FeedPostIDs: every followee) once the inbox runs out and is not
// complete. In pull mode it is SQL from the start.
type inboxSource struct {
	s         *Service
	reader    int64
	fromInbox bool
	complete  bool // the inbox holds everything below its newest entry
	started   bool
	path      string
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
	more, err := r.s.store.FeedPostIDs(ctx, r.reader, 0, pos, want-len(ids))
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
		if err != nil && sqlUnavailable(err) {
			// The inbox is served without the refresh: it may miss the
			// newest posts a fan-out has not delivered yet.
			feed.MarkDegraded(ctx)
		}
		if err != nil {
			s.cacheFailed("smart refresh", err)
		} else if len(added) > 0 {
			pg.IDs = mergeDesc(pg.IDs, added, want)
		}
	}
	return pg, nil
}

// inboxFeedIDs returns up to n ids newer than after of what reader's inbox
// holds: the whole feed, or in hybrid mode the pushed authors' part of it.
// Pulled authors' posts are merged from their outboxes at read time;
// copying them into each reader's inbox on every rebuild and refresh would
// spend the memory hybrid exists to save. (Paging past an inbox's end reads
// every followee: the merge drops the duplicates.)
func (s *Service) inboxFeedIDs(ctx context.Context, reader, after int64, n int) ([]int64, error) {
	if !s.merges() {
		return s.store.FeedPostIDs(ctx, reader, after, 0, n)
	}
	low, high := s.cfg.Policy.Band()
	return s.store.PushedFeedPostIDs(ctx, reader, high, low, after, 0, n)
}

// merges reports whether reads merge pulled authors' outboxes into the
// inbox (hybrid mode).
func (s *Service) merges() bool {
	return s.cfg.Policy.Mode == feed.ModeHybrid && s.outboxes != nil
}

// rebuild fills reader's inbox from SQL. Concurrent rebuilds of one inbox
// in this process collapse into one query.
func (s *Service) rebuild(ctx context.Context, reader int64) ([]int64, bool, error) {
	type result struct {
		ids      []int64
		complete bool
	}
	v, err, _ := s.rebuilds.Do(strconv.FormatInt(reader, 10), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		ids, err := s.inboxFeedIDs(ctx, reader, 0, s.cfg.InboxMax)
		if err != nil {
			return nil, fmt.Errorf("timeline: rebuild inbox of %d: %w", reader, err)
		}
		s.metrics.rebuilds.Inc()
		complete := len(ids) < s.cfg.InboxMax
		ttl := s.cfg.InboxTTL
		if len(ids) == 0 {
			ttl = s.cfg.EmptyTTL
		}
		if err := s.cache.FillInbox(ctx, reader, ids, complete, ttl); err != nil {
			s.cacheFailed("fill inbox", err)
			return result{ids, complete}, nil
		}
		// A fan-out that ran between the query and the fill skipped this
		// (then absent) inbox: catch its posts now. Fan-outs after the
		// fill see the inbox and push.
		var newest int64
		if len(ids) > 0 {
			newest = ids[0]
		}
		late, err := s.inboxFeedIDs(ctx, reader, newest, s.cfg.InboxMax)
		if err == nil && len(late) > 0 {
			if err := s.cache.AddToInbox(ctx, reader, late, false); err != nil {
				s.cacheFailed("fill inbox", err)
			}
			ids = mergeDesc(late, ids, s.cfg.InboxMax)
		}
		// The inbox is as fresh as SQL: no refresh needed for a while.
		_ = s.gateRefresh(ctx, reader)
		return result{ids, complete}, nil
	})
	if err != nil {
		return nil, false, err
	}
	res := v.(result)
	return res.ids, res.complete, nil
}

// refresh is note 000's "smart refresh" of a first page: one indexed SQL
// query for followee posts newer than the inbox's newest entry (minus a
// short lookback for fan-outs that finished out of order), added to the
// inbox. It runs at most once per RefreshInterval per reader, so a hot
// feed read a thousand times a second costs SQL one query per interval.
//
// The window never reaches back further than RefreshHorizon. The query
// either walks the posts in the window newest first (cost: every author's
// posts since the window opened) or the reader's followees' posts (cost:
// all of them, ever); the optimizer takes the cheaper. For a reader whose
// followees have been quiet while everyone else posted, both are large:
// a bench graph's reader of 5,000 accounts, with 14,000 newer posts by
// others, cost 85 ms a refresh alone and made the hybrid p99 441 ms under
// load. Bounded by the horizon, the first costs at most the posts of the
// last RefreshHorizon, and never more than RefreshMaxPosts: with a
// thousand posts a second even the one-minute lookback holds 60,000 posts;
// on the bench graph a refresh walking a million posts took 1.0 s, one
// walking 2,000 took 2.5–4.3 ms (scripts/refresh-walk.sh). A post older
// than the window which a fan-out has not delivered yet (a long broker
// outage) is not lost: the fan-out delivers it when it runs, and a rebuild
// reads everything.
func (s *Service) refresh(ctx context.Context, reader int64, page []int64) ([]int64, error) {
	if ok, err := s.gateRefreshOnce(ctx, reader); err != nil || !ok {
		return nil, err
	}
	s.metrics.refreshes.Inc()
	after := feed.MinIDAt(s.now().Add(-s.cfg.RefreshHorizon))
	if len(page) > 0 {
		after = max(after, feed.MinIDAt(feed.IDTime(page[0]).Add(-s.cfg.RefreshLookback)))
	}
	floor, err := s.refreshFloor(ctx)
	if err != nil {
		return nil, err
	}
	after = max(after, floor)
	ids, err := s.inboxFeedIDs(ctx, reader, after, s.cfg.InboxMax)
	if err != nil {
		return nil, fmt.Errorf("timeline: refresh feed of %d: %w", reader, err)
	}
	ids = missing(ids, page)
	if len(ids) == 0 {
		return nil, nil
	}
	s.metrics.refreshAdds.Add(float64(len(ids)))
	if err := s.cache.AddToInbox(ctx, reader, ids, false); err != nil {
		return nil, err
	}
	return ids, nil
}

// postsFloor is a NewestPostsFloor answer and until when it is used.
type postsFloor struct {
	id    int64
	until time.Time
}

// floorEvery is how long a process uses one NewestPostsFloor answer. Posts
// published meanwhile widen the window by that much time's worth: at 1,000
// posts a second, by up to 1,000.
const floorEvery = time.Second

// refreshFloor returns the lowest id a refresh's window may start at for
// RefreshMaxPosts: the id of that many-th newest post of all, asked of SQL
// at most once per floorEvery per process (a walk of that many primary
// key entries, a few ms).
func (s *Service) refreshFloor(ctx context.Context) (int64, error) {
	if f := s.floor.Load(); f != nil && s.now().Before(f.until) {
		return f.id, nil
	}
	v, err, _ := s.floorLoads.Do("", func() (any, error) {
		// Detached: the readers waiting on this load need its answer
		// even if the one that started it goes away.
		lctx, cancel := detached(ctx)
		defer cancel()
		id, err := s.store.NewestPostsFloor(lctx, s.cfg.RefreshMaxPosts)
		if err != nil {
			return int64(0), fmt.Errorf("timeline: the refresh window's floor: %w", err)
		}
		s.floor.Store(&postsFloor{id: id, until: s.now().Add(floorEvery)})
		return id, nil
	})
	return v.(int64), err
}

func refreshKey(reader int64) string { return "refresh:{" + strconv.FormatInt(reader, 10) + "}" }

// refreshGates bounds the readers whose refresh gate a process remembers
// (gateRefreshOnce). A reader evicted from it is only asked of the cache
// again.
const refreshGates = 100_000

// gateRefreshOnce reports whether reader's smart refresh is due, and if so
// takes the gate for RefreshInterval, so that one process in the whole
// deployment refreshes. The cache's SET NX decides; in front of it, the
// process remembers until when it saw the gate taken (by itself, by a
// rebuild, or by another process), so a reader paging a hundred times in
// an interval costs the cache one call, not a hundred. The gate's value is
// the time it opens (Unix ms): a process that finds it taken by another
// reads it once, and waits no longer than the process that took it, so a
// refresh comes at most a round trip later than it would without the
// local gate.
func (s *Service) gateRefreshOnce(ctx context.Context, reader int64) (bool, error) {
	now := s.now()
	if until, ok := s.gates.Get(reader); ok && now.Before(until) {
		return false, nil
	}
	ok, err := s.cache.SetNX(ctx, refreshKey(reader), gateValue(now, s.cfg.RefreshInterval), s.cfg.RefreshInterval)
	if err != nil {
		return false, err
	}
	if ok {
		// Measured from after the call, the local gate ends no earlier
		// than the cache's key, set during the call (and at most a round
		// trip later): the SET NX it lets through next finds the key gone.
		s.gates.Put(reader, s.now().Add(s.cfg.RefreshInterval))
		return true, nil
	}
	v, found, err := s.cache.Get(ctx, refreshKey(reader))
	if err != nil || !found {
		return false, nil // not known: ask the cache again on the next page
	}
	opens, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false, nil // a gate of an older version ("1"): the same
	}
	now = s.now()
	if wait := time.UnixMilli(opens).Sub(now); wait > 0 {
		s.gates.Put(reader, now.Add(min(wait, s.cfg.RefreshInterval)))
	}
	return false, nil
}

// gateRefresh takes reader's refresh gate whether or not it was free: the
// inbox was just rebuilt from SQL and needs no refresh for an interval.
func (s *Service) gateRefresh(ctx context.Context, reader int64) error {
	err := s.cache.Set(ctx, refreshKey(reader), gateValue(s.now(), s.cfg.RefreshInterval), s.cfg.RefreshInterval)
	s.gates.Put(reader, s.now().Add(s.cfg.RefreshInterval))
	return err
}

// gateValue is the value of a refresh gate taken at now: when it opens.
func gateValue(now time.Time, interval time.Duration) string {
	return strconv.FormatInt(now.Add(interval).UnixMilli(), 10)
}

// pageBelow returns up to n of ids (newest first) below pos.
func pageBelow(ids []int64, pos int64, n int, complete bool) feed.InboxPage {
	start := 0
	if pos > 0 {
		start, _ = slices.BinarySearchFunc(ids, pos, func(a, b int64) int {
			// ids are descending: find the first id < pos.
			switch {
			case a >= b:
				return -1
			default:
				return 1
			}
		})
	}
	end := min(start+n, len(ids))
	return feed.InboxPage{IDs: ids[start:end], Exists: true, Complete: complete}
}

// mergeDesc merges two descending id lists into one without duplicates,
// keeping at most n.
func mergeDesc(a, b []int64, n int) []int64 {
	out := make([]int64, 0, min(len(a)+len(b), n))
	i, j := 0, 0
	for len(out) < n && (i < len(a) || j < len(b)) {
		var v int64
		switch {
		case j >= len(b) || (i < len(a) && a[i] > b[j]):
			v, i = a[i], i+1
		case i >= len(a) || b[j] > a[i]:
			v, j = b[j], j+1
		default: // equal
			v, i, j = a[i], i+1, j+1
		}
		out = append(out, v)
	}
	return out
}

// missing returns the ids of want that are not in have.
func missing(want, have []int64) []int64 {
	seen := make(map[int64]struct{}, len(have))
	for _, id := range have {
		seen[id] = struct{}{}
	}
	var out []int64
	for _, id := range want {
		if _, ok := seen[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}
