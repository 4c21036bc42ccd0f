package timeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
)

// cachedFeed is the read path without SQL: the inbox (and, in hybrid
// mode, the author lists of the pulled authors the reader follows, as
// far as the cache knows them), hydrated from memory and the cache. The
// page is degraded (degradedFeed marks it): it may miss posts the cache
// does not have, and it ends where the inbox ends. The reader's last good first page is
// served instead of a first page when saved is set (switch L4), or when
// the inbox is gone.
func (s *Service) cachedFeed(ctx context.Context, reader, before int64, n int, saved bool) ([]feed.Post, bool, error) {
	s.metrics.reads.WithLabelValues(pathDegraded).Inc()
	if before == 0 && saved {
		if posts, more, ok := s.lastGood(ctx, reader, n); ok && len(posts) > 0 {
			return posts, more, nil
		}
	}
	want := n + 1
	pg, err := s.cache.InboxPage(ctx, reader, before, want)
	if err != nil {
		return nil, false, fmt.Errorf("timeline: degraded read of %d: SQL and cache both failed: %w", reader, err)
	}
	if !pg.Exists && before == 0 && !saved {
		if posts, more, ok := s.lastGood(ctx, reader, n); ok {
			return posts, more, nil
		}
	}
	lists := [][]int64{pg.IDs}
	if s.merges() && !s.switches.On(degrade.L2) {
		if v, ok, err := s.cache.Get(ctx, pulleesKey(reader)); err == nil && ok {
			pullees, _ := parseIDList(v, s.epoch(ctx))
			for i, a := range pullees {
				if i == s.cfg.MaxMergedAuthorLists {
					break
				}
				if op, err := s.authorLists.InboxPage(ctx, a, before, want); err == nil {
					lists = append(lists, op.IDs)
				}
			}
		}
	}
	ids := mergeK(lists, want)
	posts, _, _ := s.hydrate(ctx, ids, cacheOnly)
	if len(posts) > n {
		return posts[:n], true, nil
	}
	// Past the inbox's end only SQL knows more: the page says it is the
	// last, and says it is degraded.
	return posts, false, nil
}

const (
	// lastGoodEvery is how stale an L4 page may be; it bounds the cache
	// writes saving pages to one per reader per interval per process.
	lastGoodEvery = 30 * time.Second
	// lastGoodReaders bounds the memory of that gate.
	lastGoodReaders = 100_000
)

// lastGoodTTL is how long a reader's last good first page is kept for L4.
const lastGoodTTL = 24 * time.Hour

func lastGoodKey(reader int64) string { return "lastgood:{" + strconv.FormatInt(reader, 10) + "}" }

// saveLastGood remembers the ids of a first page served in full, for L4.
// An in-process gate makes it at most one cache write per reader per
// RefreshInterval (the same rhythm at which a first page can change).
func (s *Service) saveLastGood(ctx context.Context, reader int64, posts []feed.Post, more bool) {
	if _, recent := s.lastSaved.Get(reader); recent {
		return
	}
	s.lastSaved.Put(reader, struct{}{})
	ids := make([]int64, 0, len(posts)+1)
	for _, p := range posts {
		ids = append(ids, p.ID)
	}
	if more {
		ids = append(ids, 0) // 0 is no post id: it says "more exist"
	}
	if err := s.cache.Set(ctx, lastGoodKey(reader), formatIDList("", ids), lastGoodTTL); err != nil {
		s.cacheFailed("save last good page", err)
	}
}

// lastGood returns the reader's saved first page, hydrated from memory and
// the cache only. ok is false when none was saved.
func (s *Service) lastGood(ctx context.Context, reader int64, n int) ([]feed.Post, bool, bool) {
	v, ok, err := s.cache.Get(ctx, lastGoodKey(reader))
	if err != nil || !ok {
		return nil, false, false
	}
	ids, ok := parseIDList(v, "")
	if !ok {
		return nil, false, false
	}
	more := false
	if len(ids) > 0 && ids[len(ids)-1] == 0 {
		ids, more = ids[:len(ids)-1], true
	}
	if len(ids) > n {
		ids, more = ids[:n], true
	}
	posts, _, _ := s.hydrate(ctx, ids, cacheOnly)
	return posts, more, true
}
