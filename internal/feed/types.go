package feed

import (
	"strconv"
	"time"
)

// User is an account that posts and follows. ID is the application's own
// id when it gave one, else one feedd generated.
type User struct {
	ID             int64
	Name           string
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

// Post is one entry of a timeline. Its ID is time-ordered (see IDGen), so
// ordering by ID is ordering by creation time, ties included.
type Post struct {
	ID        int64
	AuthorID  int64
	Content   string
	CreatedAt time.Time
	Deleted   bool
}

// MaxContentRunes bounds a post's content.
const MaxContentRunes = 5000

// ParseID parses a decimal id as it appears in URLs and JSON. Ids are
// positive 64-bit integers.
func ParseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || s[0] == '+' {
		return 0, Errorf(EINVALID, "%q is not a valid id: ids are positive decimal integers", s)
	}
	return id, nil
}

// FormatID renders an id as JSON carries it: a decimal string, so that
// JavaScript clients never round it.
func FormatID(id int64) string { return strconv.FormatInt(id, 10) }
