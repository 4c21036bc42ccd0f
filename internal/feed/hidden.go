package feed

import (
	"slices"
	"strconv"
	"strings"
)

// Hidden is what one reader does not see: the authors it mutes (gone from
// its home feed and its lists), the users it blocks or is blocked by (gone
// from everything it reads, and it from everything they read), and the
// members of its exclusive lists (gone from its home feed only). The zero
// value hides nothing.
type Hidden struct {
	muted    map[int64]struct{}
	blocked  map[int64]struct{}
	excluded map[int64]struct{}
}

// NewHidden returns the Hidden of muted and blocked ids.
func NewHidden(muted, blocked []int64) Hidden {
	return Hidden{muted: idSet(muted), blocked: idSet(blocked)}
}

// WithExcluded returns h with the members of the reader's exclusive lists.
func (h Hidden) WithExcluded(ids []int64) Hidden {
	h.excluded = idSet(ids)
	return h
}

func idSet(ids []int64) map[int64]struct{} {
	if len(ids) == 0 {
		return nil
	}
	m := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return m
}

// Empty reports whether nothing is hidden.
func (h Hidden) Empty() bool { return len(h.muted) == 0 && len(h.blocked) == 0 && len(h.excluded) == 0 }

// HasBlocks reports whether any block stands between the reader and
// anyone.
func (h Hidden) HasBlocks() bool { return len(h.blocked) > 0 }

// InFeed reports whether author's posts are kept out of the home feed:
// muted, blocked either way, or a member of an exclusive list.
func (h Hidden) InFeed(author int64) bool {
	_, x := h.excluded[author]
	return x || h.InList(author)
}

// InList reports whether author's posts are kept out of the reader's
// lists: muted, or blocked either way.
func (h Hidden) InList(author int64) bool {
	_, m := h.muted[author]
	return m || h.Blocked(author)
}

// Blocked reports whether a block stands between the reader and user,
// either way.
func (h Hidden) Blocked(user int64) bool {
	_, b := h.blocked[user]
	return b
}

// Encode returns h as a compact string for a cache ("m1,2;b3"), and
// DecodeHidden reads it back.
func (h Hidden) Encode() string {
	var b strings.Builder
	put := func(tag byte, set map[int64]struct{}) {
		ids := make([]int64, 0, len(set))
		for id := range set {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		b.WriteByte(tag)
		for i, id := range ids {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatInt(id, 36))
		}
	}
	put('m', h.muted)
	b.WriteByte(';')
	put('b', h.blocked)
	if len(h.excluded) > 0 {
		// Only then, so that a process of the version before reads the
		// sets of the readers without exclusive lists.
		b.WriteByte(';')
		put('x', h.excluded)
	}
	return b.String()
}

// DecodeHidden parses what Encode wrote; ok is false for anything else.
func DecodeHidden(s string) (h Hidden, ok bool) {
	m, b, found := strings.Cut(s, ";")
	b, x, hasX := strings.Cut(b, ";")
	if !found || !strings.HasPrefix(m, "m") || !strings.HasPrefix(b, "b") || hasX && !strings.HasPrefix(x, "x") {
		return Hidden{}, false
	}
	parse := func(list string) ([]int64, bool) {
		if list == "" {
			return nil, true
		}
		parts := strings.Split(list, ",")
		ids := make([]int64, 0, len(parts))
		for _, p := range parts {
			id, err := strconv.ParseInt(p, 36, 64)
			if err != nil {
				return nil, false
			}
			ids = append(ids, id)
		}
		return ids, true
	}
	muted, ok1 := parse(m[1:])
	blocked, ok2 := parse(b[1:])
	excluded, ok3 := []int64(nil), true
	if hasX {
		excluded, ok3 = parse(x[1:])
	}
	if !ok1 || !ok2 || !ok3 {
		return Hidden{}, false
	}
	return NewHidden(muted, blocked).WithExcluded(excluded), true
}

// The read-ahead of a filtered page: a page whose items a viewer may not
// see (posts of muted or blocked authors, likes of blocked users) reads on
// past them, each round ahead by the share filtered out so far
// (ReadAhead), for at most MaxFilteredRounds rounds of at most MaxRoundIDs
// items: a page reads at most 8,000 items whatever the viewer hides. If
// that does not fill it, the page is returned short with a cursor at the
// last item read, so the next page goes on from there: pages may be short,
// never repeat, and never loop. One policy for every filtered list (the
// home feed, the likers of a post, a user's likes).
const (
	MaxFilteredRounds = 16
	MaxRoundIDs       = 500
)

// ReadAhead is how many items a filtered page's next round reads when it
// still needs need items and read items so far kept shown: ahead by the
// share that did not make it, plus half again, from need to MaxRoundIDs.
func ReadAhead(need, read, shown int) int {
	want := need * (read + 1) / (shown + 1)
	want += want / 2
	return max(need, min(want, MaxRoundIDs))
}
