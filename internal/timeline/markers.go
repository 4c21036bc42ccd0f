package timeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// DefaultUnreadCap is how far an unread count counts unless configured
// otherwise (FEEDD_UNREAD_CAP). "1,000+ new posts" tells a reader as much
// as an exact figure, and the cap bounds what a count reads.
const DefaultUnreadCap = 1000

// Marker returns reader's read marker in its home feed with the count of
// live posts newer than it (all of them when there is none), up to
// UnreadCap.
func (s *Service) Marker(ctx context.Context, reader int64) (feed.Marker, error) {
	m, err := s.marker(ctx, reader)
	if err != nil {
		return feed.Marker{}, err
	}
	return s.withUnread(ctx, reader, m)
}

// SetMarker moves reader's marker forward to lastRead and returns it as
// Marker does. A position at or below the current one changes nothing.
// lastRead must be a post's id; a deleted post's is accepted: a reader
// may well have read a post its author deleted since, and a client must
// not fail at random for it. Any post will do, in the feed or not: the
// marker is a position in time, and requiring a post keeps it from being
// set past the newest post. A post of a user blocked either way is
// answered as an unknown id: the answer must not tell the reader that
// such a post exists.
func (s *Service) SetMarker(ctx context.Context, reader, lastRead int64) (feed.Marker, error) {
	if err := s.checkMarkerPost(ctx, reader, lastRead); err != nil {
		return feed.Marker{}, err
	}
	m, err := s.store.SetMarker(ctx, reader, lastRead, s.now())
	if err != nil {
		return feed.Marker{}, fmt.Errorf("timeline: set marker of %d: %w", reader, err)
	}
	s.cacheMarker(ctx, reader, m)
	return s.withUnread(ctx, reader, m)
}

// checkMarkerPost refuses a marker position that is no post reader may
// know of (EINVALID).
func (s *Service) checkMarkerPost(ctx context.Context, reader, lastRead int64) error {
	if !feed.ValidPostID(lastRead) {
		return feed.Errorf(feed.EINVALID, "last_read_id %d is not a post id", lastRead)
	}
	author, ok, err := s.postAuthor(ctx, lastRead)
	if err != nil {
		return err
	}
	if ok {
		hidden, err := s.Hidden(ctx, reader)
		if err != nil {
			return fmt.Errorf("timeline: hidden authors of %d: %w", reader, err)
		}
		ok = !hidden.Blocked(author)
	}
	if !ok {
		return feed.Errorf(feed.EINVALID, "last_read_id %d is not a post", lastRead)
	}
	return nil
}

func (s *Service) withUnread(ctx context.Context, reader int64, m feed.Marker) (feed.Marker, error) {
	n, capped, err := s.Unread(ctx, reader, m.LastReadID, s.cfg.UnreadCap)
	if err != nil {
		return feed.Marker{}, err
	}
	m.Unread, m.UnreadCapped = n, capped
	return m, nil
}

// postAuthor reports whether id is a post, deleted or not, and its
// author: process memory and the post cache know posts read lately
// (tombstones too), SQL the rest.
func (s *Service) postAuthor(ctx context.Context, id int64) (author int64, ok bool, err error) {
	if s.hot != nil {
		if p, ok := s.hot.Get(id); ok {
			return p.AuthorID, true, nil
		}
	}
	if cached, err := s.cache.CachedPosts(ctx, []int64{id}); err != nil {
		s.cacheFailed("read post cache", err)
	} else if p, ok := cached[id]; ok {
		return p.AuthorID, true, nil
	}
	p, err := s.store.Post(ctx, id)
	switch {
	case feed.ErrorCode(err) == feed.ENOTFOUND:
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("timeline: is %d a post: %w", id, err)
	}
	return p.AuthorID, true, nil
}

// The marker's copy in the shared cache spares SQL a query per read. SQL
// stays the truth: a lost copy is read again from it.
const markerTTL = 10 * time.Minute

func markerKey(reader int64) string { return "marker:{" + strconv.FormatInt(reader, 10) + "}" }

// marker reads reader's marker from the cache, else from SQL, filling the
// cache only if no writer filled it meanwhile (SetNX): a read that saw
// SQL before a write cannot put the older value over the writer's.
func (s *Service) marker(ctx context.Context, reader int64) (feed.Marker, error) {
	v, ok, err := s.cache.Get(ctx, markerKey(reader))
	if err != nil {
		s.cacheFailed("read marker", err)
	} else if m, valid := parseMarker(v); ok && valid {
		return m, nil
	}
	m, err := s.store.Marker(ctx, reader)
	if err != nil {
		return feed.Marker{}, fmt.Errorf("timeline: marker of %d: %w", reader, err)
	}
	if _, err := s.cache.SetNX(ctx, markerKey(reader), formatMarker(m), markerTTL); err != nil {
		s.cacheFailed("fill marker", err)
	}
	return m, nil
}

// cacheMarker writes m, just read back from SQL, to the cache. Two writers
// can race: one reads SQL before the other's write and sets its cache
// copy after it. So each, after setting, reads SQL again and sets once
// more if the marker moved: the last writer to set has then seen SQL
// after setting, and SQL only moves forward, so the copy ends at the
// truth.
func (s *Service) cacheMarker(ctx context.Context, reader int64, m feed.Marker) {
	for range 3 {
		if err := s.cache.Set(ctx, markerKey(reader), formatMarker(m), markerTTL); err != nil {
			s.cacheFailed("cache marker", err)
			return
		}
		now, err := s.store.Marker(ctx, reader)
		if err != nil || now == m {
			return
		}
		m = now
	}
}

// formatMarker is "last_read_id:updated_at (Unix ms)".
func formatMarker(m feed.Marker) string {
	var at int64
	if !m.UpdatedAt.IsZero() {
		at = m.UpdatedAt.UnixMilli()
	}
	return strconv.FormatInt(m.LastReadID, 10) + ":" + strconv.FormatInt(at, 10)
}

func parseMarker(v string) (feed.Marker, bool) {
	id, at, ok := strings.Cut(v, ":")
	if !ok {
		return feed.Marker{}, false
	}
	last, err1 := strconv.ParseInt(id, 10, 64)
	ms, err2 := strconv.ParseInt(at, 10, 64)
	if err1 != nil || err2 != nil || last < 0 {
		return feed.Marker{}, false
	}
	m := feed.Marker{LastReadID: last}
	if ms > 0 {
		m.UpdatedAt = time.UnixMilli(ms).UTC()
	}
	return m, true
}

// unreadBatch is the ids the first round of a count reads, about a page;
// each further round reads twice as many, up to the cap. A reader a few
// posts behind costs one page's read, one a thousand behind five rounds.
const unreadBatch = 64

// Unread counts the live posts of reader's home feed with ids above
// after, up to limit: n is exact when capped is false, and limit when
// more exist. It is the feed's own read (feed): the same sources, merged
// and hydrated the same way (cache first), so it counts what the feed
// shows, pushed and pulled authors alike, deleted posts left out. It
// reads newest first and stops at after or past limit: it reads at most
// limit+1 live ids and the deleted ones on the way (which it drops from
// the caches, as a feed read does), never the whole feed. Posts of
// authors hidden from the reader (muted, blocked) are not counted, as the
// feed does not show them.
func (s *Service) Unread(ctx context.Context, reader, after int64, limit int) (n int, capped bool, err error) {
	hidden, err := s.Hidden(ctx, reader)
	if err != nil {
		return 0, false, fmt.Errorf("timeline: hidden authors of %d: %w", reader, err)
	}
	in, srcs, err := s.sources(ctx, reader, after, hidden)
	if err != nil {
		return 0, false, err
	}
	pos, batch := int64(0), unreadBatch
	for {
		want := min(batch, limit+1)
		batch *= 2
		lists, err := fetchAll(ctx, srcs, pos, want)
		if err != nil {
			return 0, false, err
		}
		for i, l := range lists {
			lists[i] = above(l, after)
		}
		// A source cut at after is done; one that gave fewer than want is
		// exhausted. Fewer than want merged means every source is either.
		ids := mergeK(lists, want)
		live, dead, err := s.hydrate(ctx, ids, withSQL)
		if err != nil {
			return 0, false, err
		}
		s.forget(ctx, srcs, lists, dead)
		if live, err = s.replyRule(ctx, reader, hidden.Replies(), repostRule(reader, hidden, s.unhidden(ctx, in, hidden, live)), true); err != nil {
			return 0, false, err
		}
		if live, err = s.dedupeUnread(ctx, reader, hidden, live); err != nil {
			return 0, false, err
		}
		n += len(live)
		if n > limit {
			return limit, true, nil
		}
		if len(ids) < want {
			return n, false, nil
		}
		pos = ids[len(ids)-1]
	}
}

// above returns the ids of a newest-first list that are greater than after
// (0: all of them, posts from before 2025 and their negative ids too).
func above(ids []int64, after int64) []int64 {
	if after == 0 {
		return ids
	}
	for i, id := range ids {
		if id <= after {
			return ids[:i]
		}
	}
	return ids
}
