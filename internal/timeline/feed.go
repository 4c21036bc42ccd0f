package timeline

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
)

// maxReadRounds bounds how often one page goes back for more ids when the
// ones it read turned out deleted, so a pathological inbox cannot make a
// read unbounded.
const maxReadRounds = 8

// Feed returns up to n live posts of reader's home feed with ids below
// before (0: from the newest), newest first, and whether more exist.
//
// Push: the page comes from the inbox; a missing inbox is rebuilt from
// SQL; a first page is refreshed against SQL at most once per
// RefreshInterval; when the inbox runs out before the page is full and is
// not complete, the page continues from SQL below the last id seen. Pull:
// the page comes from SQL. Hybrid: the inbox is merged with the author
// lists of the pulled authors the reader follows. Ids are unique and
// totally ordered, so every seam between sources is exact, one id is the
// whole cursor, and duplicates across sources are merged away.
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

// feed is the read with SQL at hand, page round by page round: the
// reader's sources (sources.go) each give ids below pos, the lists are
// merged (merge.go) and hydrated into posts (hydrate.go); deleted posts
// met on the way are forgotten by their sources and the page reads on.
func (s *Service) feed(ctx context.Context, reader, before int64, n int) ([]feed.Post, bool, error) {
	in, srcs, err := s.sources(ctx, reader, 0)
	if err != nil {
		return nil, false, err
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
		live, dead, err := s.hydrate(ctx, ids, withSQL)
		if err != nil {
			return nil, false, err
		}
		s.forget(ctx, srcs, lists, dead)
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

// sources returns the streams of reader's feed: the inbox (SQL in pull
// mode) and, in hybrid mode, the pulled authors it follows. Their SQL
// reads stop at after (0: none); their cache reads may return ids at or
// below it, which the caller drops.
func (s *Service) sources(ctx context.Context, reader, after int64) (*inboxSource, []source, error) {
	in := &inboxSource{s: s, reader: reader, after: after, fromInbox: s.cfg.Policy.Mode != feed.ModePull, path: pathInbox}
	if !in.fromInbox {
		in.path = pathSQL
	}
	srcs := []source{in}
	if s.merges() && !s.switches.On(degrade.L2) {
		pullees, err := s.pullees(ctx, reader)
		if err != nil {
			return nil, nil, fmt.Errorf("timeline: pulled followees of %d: %w", reader, err)
		}
		srcs = append(srcs, pulledSources(s, pullees, after)...)
	}
	return in, srcs, nil
}

// forget tells each source the deleted posts among the ids it gave
// (lists[i] came from srcs[i]), so that its cache drops them.
func (s *Service) forget(ctx context.Context, srcs []source, lists [][]int64, dead []int64) {
	if len(dead) == 0 {
		return
	}
	s.metrics.lazyDeletes.Add(float64(len(dead)))
	for i, src := range srcs {
		if d := intersect(dead, lists[i]); len(d) > 0 {
			src.forget(ctx, d)
		}
	}
}
