package feed

import "time"

// A List is a set of users whose posts its owner reads as a feed of its
// own (package timeline's ListFeed); only its owner sees it. An exclusive
// list takes its members' posts out of the owner's home feed.
type List struct {
	ID          int64
	OwnerID     int64
	Name        string
	Replies     string // ListReplies…
	Exclusive   bool
	MemberCount int64
	CreatedAt   time.Time
}

// Which of a member's replies a list shows (ListReplyRule). Whatever the
// setting, a list shows its members' answers to themselves (threads) and
// to its owner, and the owner's own replies.
const (
	ListRepliesFollowed = "followed" // to a member or to someone the owner follows (the default)
	ListRepliesList     = "list"     // to members only
	ListRepliesNone     = "none"
)

// The bounds of lists.
const (
	MaxLists       = 100  // per user
	MaxListMembers = 5000 // per list
)

// ListEdit is a change to a list by its owner: the fields set replace the
// list's.
type ListEdit struct {
	Name      *string
	Replies   *string
	Exclusive *bool
}

// CheckListReplies returns an EINVALID error unless r is a replies setting.
func CheckListReplies(r string) error {
	switch r {
	case ListRepliesFollowed, ListRepliesList, ListRepliesNone:
		return nil
	}
	return Errorf(EINVALID, "replies must be %s, %s or %s", ListRepliesFollowed, ListRepliesList, ListRepliesNone)
}

// CheckListName returns an EINVALID error unless name is a list's name:
// the rules of a user's name.
func CheckListName(name string) error { return CheckName(name) }

// ReplyRule decides which replies a feed shows: HomeReplies for the home
// feed, ListReplyRule for a list. Shows may ask follows whether the reader
// follows a user, only about the user NeedsFollows names (0: none), so
// that a page asks about all its replies at once.
type ReplyRule interface {
	Shows(reader int64, p Post, follows func(user int64) bool) bool
	NeedsFollows(reader int64, p Post) int64
}

// ListReplyRule is a list's rule for replies: its setting (ListReplies…)
// and its members.
type ListReplyRule struct {
	policy  string
	members map[int64]struct{}
}

// NewListReplyRule returns the rule of a list of members with setting
// policy.
func NewListReplyRule(policy string, members []int64) ListReplyRule {
	return ListReplyRule{policy: policy, members: idSet(members)}
}

// shownAlways reports whether p shows in owner's list whatever the
// setting: no reply, a thread, an answer to the owner, the owner's own.
func shownAlways(owner int64, p Post) bool {
	return !p.IsReply() || p.InReplyToAuthorID == p.AuthorID || p.InReplyToAuthorID == owner || p.AuthorID == owner
}

// Shows reports whether reply p may be in owner's list: under "followed"
// it answers a member or someone the owner follows, under "list" a member,
// under "none" nobody else (shownAlways).
func (r ListReplyRule) Shows(owner int64, p Post, follows func(user int64) bool) bool {
	if shownAlways(owner, p) {
		return true
	}
	_, member := r.members[p.InReplyToAuthorID]
	switch r.policy {
	case ListRepliesNone:
		return false
	case ListRepliesList:
		return member
	}
	return member || follows(p.InReplyToAuthorID)
}

// NeedsFollows names the user Shows would ask follows about, or 0.
func (r ListReplyRule) NeedsFollows(owner int64, p Post) int64 {
	if _, member := r.members[p.InReplyToAuthorID]; member || shownAlways(owner, p) || r.policy == ListRepliesNone || r.policy == ListRepliesList {
		return 0
	}
	return p.InReplyToAuthorID
}
