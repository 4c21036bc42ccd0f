package feed

// Settings are a reader's choices about its own feeds
// (GET/PUT /v1/me/settings). The zero Settings are the defaults.
type Settings struct {
	HomeReplies HomeReplies
}

// HomeReplies is a reader's rule for the replies of the people it follows
// in its home feed (Mastodon's rule by default). A post that is no reply,
// and the reader's own posts, are never filtered by it.
type HomeReplies int8

const (
	// RepliesFollowing, the default: a reply is shown when it answers the
	// reader, its own author (a thread), or someone the reader follows,
	// so that the reader sees conversations among the people it follows
	// and not their half of conversations with strangers.
	RepliesFollowing HomeReplies = iota
	// RepliesAll: every reply of the people the reader follows.
	RepliesAll
	// RepliesNone: no replies but an author's answers to itself (threads).
	RepliesNone
)

var homeRepliesNames = [...]string{RepliesFollowing: "following", RepliesAll: "all", RepliesNone: "none"}

// String is the rule's name in the API.
func (r HomeReplies) String() string {
	if r < 0 || int(r) >= len(homeRepliesNames) {
		return homeRepliesNames[RepliesFollowing]
	}
	return homeRepliesNames[r]
}

// ParseHomeReplies reads a rule's name.
func ParseHomeReplies(s string) (HomeReplies, error) {
	for r, name := range homeRepliesNames {
		if s == name {
			return HomeReplies(r), nil
		}
	}
	return 0, Errorf(EINVALID, `home_replies must be "following", "all" or "none", not %q`, s)
}

// ValidHomeReplies reports whether r is one of the rules (a stored value
// from a later version may not be).
func ValidHomeReplies(r HomeReplies) bool { return r >= 0 && int(r) < len(homeRepliesNames) }

// Shows reports whether p may be in reader's home feed under the rule.
// follows says whether the reader follows a user; it is asked only for
// replies to someone else than the reader and the reply's author, under
// RepliesFollowing, so that a page without such replies costs no lookup.
func (r HomeReplies) Shows(reader int64, p Post, follows func(user int64) bool) bool {
	if !p.IsReply() || p.AuthorID == reader || p.InReplyToAuthorID == p.AuthorID {
		return true
	}
	switch r {
	case RepliesAll:
		return true
	case RepliesNone:
		return false
	}
	return p.InReplyToAuthorID == reader || follows(p.InReplyToAuthorID)
}

// NeedsFollows reports whether Shows would ask follows about p: the user
// whose relationship a page must know, or 0.
func (r HomeReplies) NeedsFollows(reader int64, p Post) int64 {
	if r != RepliesFollowing || !p.IsReply() || p.AuthorID == reader ||
		p.InReplyToAuthorID == p.AuthorID || p.InReplyToAuthorID == reader {
		return 0
	}
	return p.InReplyToAuthorID
}
