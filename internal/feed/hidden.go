package feed

import (
	"slices"
	"strconv"
	"strings"
)

// Hidden is what one reader does not see: the authors it mutes (gone from
// its home feed and its lists), the users it blocks or is blocked by (gone
// from everything it reads, and it from everything they read), and the
// members of its exclusive lists (gone from its home feed only). It also
// carries the reader's rule for replies in its home feed (HomeReplies),
// which every home page applies too: one read per page gives both. The
// zero value hides nothing and has the default rule.
type Hidden struct {
	muted    map[int64]struct{}
	blocked  map[int64]struct{}
	excluded map[int64]struct{}
	replies  HomeReplies
	// reposts are the followees whose reposts the reader keeps out of
	// its home feed (docs/reposts.md).
	reposts map[int64]struct{}
	// reposter says the reader has reposted something: a page asks SQL
	// which of its posts the reader reposted only then, so that the
	// readers who never did (most) cost no query for reposted_by_me.
	reposter bool
}

// WithReposter returns h saying whether the reader has any repost.
func (h Hidden) WithReposter(any bool) Hidden {
	h.reposter = any
	return h
}

// Reposter reports whether the reader has reposted anything (as the set
// was read: a reader's own repost publishes its set again).
func (h Hidden) Reposter() bool { return h.reposter }

// NewHidden returns the Hidden of muted and blocked ids.
func NewHidden(muted, blocked []int64) Hidden {
	return Hidden{muted: idSet(muted), blocked: idSet(blocked)}
}

// WithExcluded returns h with the members of the reader's exclusive lists.
func (h Hidden) WithExcluded(ids []int64) Hidden {
	h.excluded = idSet(ids)
	return h
}

// WithReplies returns h with the reader's rule for replies.
func (h Hidden) WithReplies(r HomeReplies) Hidden {
	h.replies = r
	return h
}

// WithoutRepostsOf returns h with the followees whose reposts the
// reader hides.
func (h Hidden) WithoutRepostsOf(ids []int64) Hidden {
	h.reposts = idSet(ids)
	return h
}

// HidesRepostsOf reports whether the reader keeps user's reposts out of
// its home feed.
func (h Hidden) HidesRepostsOf(user int64) bool {
	_, x := h.reposts[user]
	return x
}

// HidesRepost reports whether p, a repost, is left out of what the reader
// reads: its original's author is muted or blocked either way. A home
// feed leaves out more (HomeHidesRepost).
func (h Hidden) HidesRepost(p Post) bool {
	return p.IsRepost() && h.InList(p.RepostOfAuthorID)
}

// HomeHidesRepost reports whether reader's home feed leaves p, a
// repost, out: HidesRepost, a repost of the reader's own post, or one by
// a followee whose reposts the reader hides.
func (h Hidden) HomeHidesRepost(reader int64, p Post) bool {
	return p.IsRepost() && (p.RepostOfAuthorID == reader || h.HidesRepostsOf(p.AuthorID) || h.HidesRepost(p))
}

// Replies is the reader's rule for replies in its home feed.
func (h Hidden) Replies() HomeReplies { return h.replies }

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

// Muted and blocked users either way, ascending: whose notifications
// the reader does not see (package notices).
func (h Hidden) Silenced() []int64 {
	out := make([]int64, 0, len(h.muted)+len(h.blocked))
	for id := range h.muted {
		out = append(out, id)
	}
	for id := range h.blocked {
		if _, m := h.muted[id]; !m {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
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
	if h.replies != RepliesFollowing {
		// Likewise only when not the default: "r" and the rule's number.
		b.WriteString(";r")
		b.WriteString(strconv.Itoa(int(h.replies)))
	}
	if len(h.reposts) > 0 {
		b.WriteByte(';')
		put('p', h.reposts)
	}
	if h.reposter {
		b.WriteString(";R")
	}
	return b.String()
}

// DecodeHidden parses what Encode wrote; ok is false for anything else.
func DecodeHidden(s string) (h Hidden, ok bool) {
	parts := strings.Split(s, ";")
	if len(parts) < 2 || !strings.HasPrefix(parts[0], "m") || !strings.HasPrefix(parts[1], "b") {
		return Hidden{}, false
	}
	parse := func(list string) ([]int64, bool) {
		if list == "" {
			return nil, true
		}
		items := strings.Split(list, ",")
		ids := make([]int64, 0, len(items))
		for _, p := range items {
			id, err := strconv.ParseInt(p, 36, 64)
			if err != nil {
				return nil, false
			}
			ids = append(ids, id)
		}
		return ids, true
	}
	muted, ok1 := parse(parts[0][1:])
	blocked, ok2 := parse(parts[1][1:])
	if !ok1 || !ok2 {
		return Hidden{}, false
	}
	h = NewHidden(muted, blocked)
	for _, part := range parts[2:] {
		switch {
		case strings.HasPrefix(part, "x"):
			excluded, ok := parse(part[1:])
			if !ok {
				return Hidden{}, false
			}
			h = h.WithExcluded(excluded)
		case strings.HasPrefix(part, "r"):
			r, err := strconv.Atoi(part[1:])
			if err != nil || !ValidHomeReplies(HomeReplies(r)) {
				return Hidden{}, false
			}
			h.replies = HomeReplies(r)
		case part == "R":
			h.reposter = true
		case strings.HasPrefix(part, "p"):
			reposts, ok := parse(part[1:])
			if !ok {
				return Hidden{}, false
			}
			h = h.WithoutRepostsOf(reposts)
		default:
			return Hidden{}, false
		}
	}
	return h, true
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
