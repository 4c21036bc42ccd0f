package timeline

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// maxReadRounds bounds how often one page goes back for more ids when the
// ones it read turned out deleted, so a pathological inbox cannot make a
// read unbounded.
const maxReadRounds = 8

// A reader who mutes or blocks may have most of its feed filtered out, so
// its page reads further ahead, for more rounds: feed.ReadAhead's policy,
// at most feed.MaxFilteredRounds rounds of feed.MaxRoundIDs ids.

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
func (s *Service) Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error) {
	if s.switches.On(degrade.L4) && before == 0 {
		return s.degradedFeed(ctx, reader, before, n, true)
	}
	if s.breaker != nil && s.breaker.Open() {
		return s.degradedFeed(ctx, reader, before, n, false)
	}
	pg, err := s.feed(ctx, reader, before, n)
	if err != nil && sqlbreaker.IsUnavailable(err) {
		s.logger.WarnContext(ctx, "SQL unavailable: serving the feed from the cache alone", "reader", reader, "err", err)
		return s.degradedFeed(ctx, reader, before, n, false)
	}
	if err == nil && before == 0 && s.lastSaved != nil {
		s.saveLastGood(ctx, reader, pg.Posts, pg.More())
	}
	return pg, err
}

// degradedFeed is cachedFeed without the authors the cache says the
// reader does not see, marked degraded. A degraded page may be short; if
// the cache does not know the reader's set either, the page is served
// unfiltered by author rather than not at all, as a degraded page is.
// Replies the reader's rule may hide are left out unless the process
// knows it shows them (replyRule without SQL).
func (s *Service) degradedFeed(ctx context.Context, reader, before int64, n int, saved bool) (feed.Page, error) {
	posts, more, err := s.cachedFeed(ctx, reader, before, n, saved)
	if err != nil {
		return feed.Page{}, err
	}
	read := posts
	hidden, _ := s.cachedHidden(ctx, reader)
	kept := make([]feed.Post, 0, len(posts))
	for _, p := range posts {
		if !hidden.InFeed(p.AuthorID) {
			kept = append(kept, p)
		}
	}
	if posts, err = s.replyRule(ctx, reader, hidden.Replies(), repostRule(reader, hidden, kept), false); err != nil {
		return feed.Page{}, err
	}
	pg := feed.PageOf(posts, more)
	if more && len(posts) == 0 && len(read) > 0 {
		// Everything read was filtered out: the next page goes on below it.
		pg.Next = read[len(read)-1].ID
	}
	pg.Degraded = true
	return pg, nil
}

// feed is the read with SQL at hand, page round by page round: the
// reader's sources (sources.go) each give ids below pos, the lists are
// merged (merge.go) and hydrated into posts (hydrate.go); deleted posts
// met on the way are forgotten by their sources and the page reads on.
func (s *Service) feed(ctx context.Context, reader, before int64, n int) (feed.Page, error) {
	// On a sharded store, a shard whose server is down leaves its posts
	// out of the page instead of failing it; the page says so.
	ctx, gaps := feed.WithGaps(ctx)
	hidden, err := s.Hidden(ctx, reader)
	if err != nil {
		return feed.Page{}, fmt.Errorf("timeline: hidden authors of %d: %w", reader, err)
	}
	in, srcs, err := s.sources(ctx, reader, 0, hidden)
	if err != nil {
		return feed.Page{}, err
	}

	rounds := maxReadRounds
	if !hidden.Empty() || hidden.Replies() != feed.RepliesAll {
		// Filtered by author or by the reply rule: read further ahead.
		rounds = feed.MaxFilteredRounds
	}
	keep := s.homeKeep(ctx, reader, in, hidden)
	pg, err := s.readPage(ctx, srcs, before, n, rounds, func(live []feed.Post) ([]feed.Post, error) {
		live, err := keep(live)
		if err != nil {
			return nil, err
		}
		// In the rounds, so that the page fills past what it leaves out.
		kept, err := s.dedupe(ctx, srcs, feed.Page{Posts: live})
		return kept.Posts, err
	})
	if err != nil {
		return feed.Page{}, err
	}
	path := in.path
	if len(srcs) > 1 {
		path = pathMerged
	}
	s.metrics.reads.WithLabelValues(path).Inc()
	pg.Degraded = in.degraded || gaps.Any()
	return pg, nil
}

// readPage merges the sources' ids below before into a page of up to n
// live posts, in at most rounds rounds. Each round asks the sources for
// what the page still needs (reading ahead by the share of ids dropped so
// far), loads the posts, has the sources forget the deleted ones (lazy
// delete), and keeps those keep keeps (nil: all). When the rounds run out
// before the page fills, Next is where the next page reads on.
func (s *Service) readPage(ctx context.Context, srcs []source, before int64, n, rounds int, keep func(live []feed.Post) ([]feed.Post, error)) (feed.Page, error) {
	out := make([]feed.Post, 0, n+1)
	pos := before
	read, shown := 0, 0 // ids read and posts kept, for the read-ahead
	exhausted := false
	// Ask for one more than the page so that "more exist" is known
	// without a second request returning an empty page.
	for round := 0; len(out) <= n && round < rounds; round++ {
		need := n + 1 - len(out)
		want := need
		if round > 0 {
			want = feed.ReadAhead(need, read, shown)
		}
		lists, err := fetchAll(ctx, srcs, pos, want)
		if err != nil {
			return feed.Page{}, err
		}
		ids := mergeK(lists, want)
		live, dead, err := s.hydrate(ctx, ids, withSQL)
		if err != nil {
			return feed.Page{}, err
		}
		s.forget(ctx, srcs, lists, dead)
		if keep != nil {
			if live, err = keep(live); err != nil {
				return feed.Page{}, err
			}
		}
		read += len(ids)
		shown += len(live)
		out = append(out, live...)
		if len(ids) < want {
			exhausted = true // every source is exhausted below pos
			break
		}
		pos = ids[len(ids)-1]
	}
	if len(out) > n {
		return feed.PageOf(out[:n], true), nil
	}
	pg := feed.Page{Posts: out}
	if !exhausted && pos != before {
		// The rounds ran out before the page filled: more may exist below
		// pos, which the next page starts from.
		pg.Next = pos
	}
	return pg, nil
}

// sources returns the streams of reader's feed: the inbox (SQL in pull
// mode) and, in hybrid mode, the pulled authors of its feed (those it
// follows, and the reader itself when it is pulled: pullees). Their SQL
// reads stop at after (0: none); their cache reads may return ids at or
// below it, which the caller drops. A pulled author hidden from the reader
// (muted, or blocked either way) is not merged at all: cheaper than reading
// its posts to filter them out.
func (s *Service) sources(ctx context.Context, reader, after int64, hidden feed.Hidden) (*inboxSource, []source, error) {
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
		kept := pullees[:0:0]
		for _, a := range pullees {
			if !hidden.InFeed(a) {
				kept = append(kept, a)
			}
		}
		srcs = append(srcs, pulledSources(s, kept, after)...)
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

// unhidden returns live without the posts of authors hidden from the
// reader. The hidden posts that came from the reader's inbox leave it, as
// deleted ones do, so the next pages do not read them again; shared
// structures (author lists) keep them, since other readers see them.
func (s *Service) unhidden(ctx context.Context, in *inboxSource, hidden feed.Hidden, live []feed.Post) []feed.Post {
	if hidden.Empty() {
		return live
	}
	kept := live[:0]
	var gone []int64
	for _, p := range live {
		if hidden.InFeed(p.AuthorID) {
			gone = append(gone, p.ID)
			continue
		}
		kept = append(kept, p)
	}
	if len(gone) > 0 {
		s.metrics.hiddenPosts.Add(float64(len(gone)))
		in.forget(ctx, gone)
	}
	return kept
}

// FeedSince returns the newest n posts of reader's home feed with ids
// above after, newest first, read from SQL, the truth, and whether SQL had
// more (then not all posts above after are in the answer). A stream's
// resume reads it: a post is announced to the streams before its fan-out
// has written the inboxes and author lists, so a stream that opens in
// between would find the post neither live nor in a cached page. One
// indexed query per resume, as for a rebuild.
func (s *Service) FeedSince(ctx context.Context, reader, after int64, n int) ([]feed.Post, bool, error) {
	ids, err := s.store.FeedPostIDs(ctx, reader, after, 0, n)
	if err != nil {
		return nil, false, fmt.Errorf("timeline: feed of %d since %d: %w", reader, after, err)
	}
	posts, _, err := s.hydrate(ctx, ids, true)
	if err != nil {
		return nil, false, err
	}
	hidden, err := s.Hidden(ctx, reader)
	if err != nil {
		return nil, false, err
	}
	kept := posts[:0]
	for _, p := range posts {
		if !hidden.InFeed(p.AuthorID) {
			kept = append(kept, p)
		}
	}
	if kept, err = s.replyRule(ctx, reader, hidden.Replies(), repostRule(reader, hidden, kept), true); err != nil {
		return nil, false, err
	}
	return kept, len(ids) == n, nil
}
