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

// Which of a member's replies a list shows (replies do not exist yet: the
// setting is kept for when they do).
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
