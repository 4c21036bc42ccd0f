package feed

import (
	"strconv"
	"time"
)

// User is an account that posts and follows. ID is the application's own
// id when it gave one, else one feedd generated.
type User struct {
	ID   int64
	Name string
	// Handle is the user's unique handle, lower case (CheckHandle); "" if
	// none.
	Handle         string
	FollowerCount  int64
	FollowingCount int64
	CreatedAt      time.Time
	// PullMode is the stored state of the hybrid model's hysteresis: set
	// while the author's posts are pulled at read time. DeliveryMode says
	// what a read sees; PullMode only matters inside the band.
	PullMode bool
	// DeliveryMode is "push" or "pull": how the author's posts reach
	// readers now. The service fills it in; stores leave it empty.
	DeliveryMode string
}

// Marker is a reader's read position in its home feed: the newest post id
// it has read. It only moves forward. A reader who never set one has
// LastReadID 0 and a zero UpdatedAt.
type Marker struct {
	LastReadID int64
	UpdatedAt  time.Time
	// Unread is how many live posts of the home feed are newer than
	// LastReadID, counted up to a cap; UnreadCapped says the cap was
	// reached. The store leaves them zero; the timeline fills them.
	Unread       int
	UnreadCapped bool
}

// Post is one entry of a timeline. Its ID is time-ordered (see IDGen), so
// ordering by ID is ordering by creation time, ties included.
type Post struct {
	ID        int64
	AuthorID  int64
	Content   string
	CreatedAt time.Time
	Deleted   bool
	// Data is the application's own JSON object as compact JSON text
	// (CheckData), served as it was stored; "" when the post has none. A
	// string, not a json.RawMessage, so that a Post stays immutable and
	// comparable: caches share it between goroutines without copying.
	Data string
	// EditedAt is when the post was last edited, to the millisecond; zero
	// if never. It is also the post's version (Version).
	EditedAt time.Time
	// ExternalID is the application's own id for the post (CheckExternalID),
	// unique per author; "" when it has none. It never changes: it is how a
	// retry or a re-import finds the post it made before.
	ExternalID string
	// Weight is the application's weight of the post in ranked feeds
	// (package ranked); the zero Weight is the default, 1.
	Weight Weight
	// InReplyToID is the post this one replies to, and InReplyToAuthorID
	// that post's author; both 0 when it is no reply. They never change,
	// so caches keep them in the post's record and the home feed's reply
	// rule (who sees a reply) needs no lookup.
	InReplyToID       int64
	InReplyToAuthorID int64
	// RepostOfID is the post this one reposts, and RepostOfAuthorID that
	// post's author; both 0 when it is no repost (docs/reposts.md). A
	// repost has no content of its own. They never change, so caches keep
	// them and the home feed's repost rules need no lookup.
	RepostOfID       int64
	RepostOfAuthorID int64
	// RepostOf is a repost's original as a page shows it, attached by the
	// read engine when it hydrates a page (never stored in a cache): nil
	// elsewhere.
	RepostOf *Post
}

// IsReply reports whether p answers another post.
func (p Post) IsReply() bool { return p.InReplyToID != 0 }

// IsRepost reports whether p reposts another post.
func (p Post) IsRepost() bool { return p.RepostOfID != 0 }

// TombstoneVersion is the Version of a deleted post: above any edit's, so
// that no copy of a live version replaces a tombstone in a cache. It is
// exact as a float64, the number type of the Redis cache's script.
const TombstoneVersion int64 = 1 << 53

// Version orders the states of one post for the caches: 0 for a post never
// edited, the edit's Unix milliseconds after an edit (the store makes them
// increase with every edit), TombstoneVersion once deleted. A cache keeps
// the copy of the highest version it was given, so that a reader filling
// the cache with a copy it read before an edit (or a delete) committed
// cannot overwrite the newer copy the edit wrote.
func (p Post) Version() int64 {
	switch {
	case p.Deleted:
		return TombstoneVersion
	case p.EditedAt.IsZero():
		return 0
	}
	return min(max(p.EditedAt.UnixMilli(), 1), TombstoneVersion-1)
}

// Supersedes reports whether p may replace old as the cached copy of the
// same post: it is of the same or a later version.
func (p Post) Supersedes(old Post) bool { return p.Version() >= old.Version() }

// Draft is a new post as its author sends it. Data is compact JSON
// (CheckData) or "" for none.
type Draft struct {
	Content string
	Data    string
	// ExternalID is "" or the application's id for the post
	// (CheckExternalID): a second post of the author's with the same one
	// is refused (ExternalIDExistsError).
	ExternalID string
	// Weight is the post's rank weight (CheckWeight); the zero Weight is
	// the default, 1.
	Weight Weight
	// InReplyToID is the post this one replies to (0: none): it must
	// live, and no block may stand between its author and the replier.
	InReplyToID int64
	// RepostOfID makes the post a repost of that post (0: none), which
	// must live; a repost has no content, data or external id.
	RepostOfID int64
}

// PostEdit is a change to a post by its author. At least one of Content and
// SetData must be set.
type PostEdit struct {
	Content *string // the new content; nil leaves it as it is
	// SetData replaces the post's data with Data, which CheckData has
	// compacted; an empty Data removes it.
	SetData bool
	Data    string
	// Weight, when not nil, is the post's new rank weight (CheckWeight).
	Weight *Weight
}

// Check refuses an edit that changes nothing: the one rule and sentence
// for it.
func (e PostEdit) Check() error {
	if e.Content == nil && !e.SetData && e.Weight == nil {
		return Errorf(EINVALID, "send the content, the data, the weight or any of them to edit a post")
	}
	return nil
}

// MaxContentRunes bounds a post's content.
const MaxContentRunes = 5000

// Bounds of a post's data: its compacted encoding in bytes, and how deeply
// its objects and arrays nest (the data object itself is depth 1).
const (
	MaxDataBytes = 16 << 10
	MaxDataDepth = 32
)

// ParseID parses a decimal id as it appears in URLs and JSON. User ids,
// and the ids of everything but posts, are positive 64-bit integers.
func ParseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || s[0] == '+' {
		return 0, Errorf(EINVALID, "%q is not a valid id: ids are positive decimal integers", s)
	}
	return id, nil
}

// ParsePostID parses a post's decimal id: ParseID's rule, and also the
// negative ids of posts from before 2025, down to MinID (ValidPostID).
// "-0" and "+5" are no ids, as "0" is not.
func ParsePostID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id == 0 || s[0] == '+' || id < MinID {
		return 0, Errorf(EINVALID, "%q is not a valid post id: post ids are decimal integers, not 0, from %d", s, int64(MinID))
	}
	return id, nil
}

// FormatID renders an id as JSON carries it: a decimal string, so that
// JavaScript clients never round it.
func FormatID(id int64) string { return strconv.FormatInt(id, 10) }

// StaleFeed is a user whose cached feed state (inbox, mute and block set,
// pulled followees) missed a change while the cache was unreachable, as
// SQL records it: Mark counts the misses, so that clearing the record
// after a reset clears only the misses the reset covered.
type StaleFeed struct {
	User, Mark int64
}

// Page is one page of posts as a service answers it. The service decides
// the cursor: Next is the position the next page reads below (0: this page
// is the last), which is its last post's id unless the page stopped early
// while filtering, with more below where its reading stopped. Degraded
// says the answer may be incomplete: it was served from the cache alone
// because SQL was unavailable (or a degradation switch said so).
type Page struct {
	Posts    []Post
	Next     int64
	Degraded bool
}

// Thread is a post's context (GET /v1/posts/{id}/context): its
// ancestors from the root down, and its descendants depth first, each
// level oldest first (package replies).
type Thread struct {
	Ancestors   []Post
	Descendants []Post
}

// More reports whether another page follows.
func (p Page) More() bool { return p.Next != 0 }

// PageOf is the page of posts whose last one the next page reads below
// when more exist.
func PageOf(posts []Post, more bool) Page {
	pg := Page{Posts: posts}
	if more && len(posts) > 0 {
		pg.Next = posts[len(posts)-1].ID
	}
	return pg
}
