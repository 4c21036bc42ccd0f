package client

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// ID is the id of a user or a post. The API writes ids as decimal strings
// (so that JavaScript clients keep every digit); they may be negative: the
// posts of imported history older than the id clock's epoch are.
type ID int64

// ParseID parses a decimal id, with an optional sign.
func ParseID(s string) (ID, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("client: id %q is not a decimal integer", s)
	}
	return ID(v), nil
}

// String is the id in decimal, as paths and JSON carry it.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// MarshalJSON writes the id as a decimal string.
func (id ID) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a decimal string, or a plain JSON number.
func (id *ID) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	v, ok := parseDecimal(b)
	if !ok {
		return fmt.Errorf("client: id %s is not a decimal integer", b)
	}
	*id = ID(v)
	return nil
}

// parseDecimal is strconv.ParseInt(string(b), 10, 64) without the string:
// every post of every page carries two ids, and the conversion allocated
// for each.
func parseDecimal(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg || (len(b) > 0 && b[0] == '+') {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	switch {
	case neg && v <= 1<<63:
		return int64(-v), true
	case !neg && v < 1<<63:
		return int64(v), true
	}
	return 0, false
}

// User is a user as the API shows it.
type User struct {
	ID   ID     `json:"id"`
	Name string `json:"name"`
	// Handle is the user's unique handle, lower case; empty for a user
	// without one.
	Handle         string `json:"handle,omitempty"`
	FollowerCount  int64  `json:"follower_count"`
	FollowingCount int64  `json:"following_count"`
	// DeliveryMode is "push" or "pull": how the user's posts reach their
	// readers. Only GetUser shows it; lists leave it empty.
	DeliveryMode string `json:"delivery_mode,omitempty"`
}

// Post is a post as the API shows it.
type Post struct {
	ID       ID     `json:"id"`
	AuthorID ID     `json:"author_id"`
	Content  string `json:"content"`
	// ExternalID is the app's own id of the post, unique per author; empty
	// when the post has none.
	ExternalID string `json:"external_id,omitempty"`
	// Data is the app's own fields of the post (a JSON object) byte for
	// byte as stored; nil when the post has none.
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	// EditedAt is nil on a post never edited.
	EditedAt *time.Time `json:"edited_at,omitempty"`
	// Weight is the post's weight in ranked feeds (0 to 100, default 1):
	// set only in what its author and the admin read, nil for others.
	Weight *float64 `json:"weight,omitempty"`
	// InReplyToID is the post this one replies to, and InReplyToAuthorID
	// that post's author; both 0 on a post that replies to none.
	InReplyToID       ID `json:"in_reply_to_id,omitempty"`
	InReplyToAuthorID ID `json:"in_reply_to_author_id,omitempty"`
	// LikeCount and LikedByMe (whether the token's user likes the post;
	// false for the admin) are nil while the server drops likes from its
	// answers (degradation switch L1), rather than a misleading 0 and false.
	LikeCount *int64 `json:"like_count,omitempty"`
	LikedByMe *bool  `json:"liked_by_me,omitempty"`
	// ReplyCount is the post's live direct replies; nil, as LikeCount,
	// while the server drops likes from its answers.
	ReplyCount *int64 `json:"reply_count,omitempty"`
	// RepostCount is the post's live reposts and RepostedByMe whether the
	// token's user reposted it; nil, as LikeCount, while the server drops
	// likes from its answers.
	RepostCount  *int64 `json:"repost_count,omitempty"`
	RepostedByMe *bool  `json:"reposted_by_me,omitempty"`
	// RepostOf is set on a repost: the original as a page shows it, with
	// its own counts and states. The repost itself has its own ID (the
	// feed's position), the reposter as AuthorID, the repost's CreatedAt
	// and no Content.
	RepostOf *Post `json:"repost_of,omitempty"`
}

// Thread is a post's context (Client.Context).
type Thread struct {
	// Ancestors are the post's ancestors from the root down (at most 40).
	Ancestors []Post `json:"ancestors"`
	// Descendants are the replies below it, depth first, oldest first at
	// each level (at most 200).
	Descendants []Post `json:"descendants"`
}

// Page is one page of a list and the cursor of the next one.
type Page[T any] struct {
	Items []T `json:"items"`
	// NextCursor continues the list; "" on the last page.
	NextCursor string `json:"next_cursor"`
	// Degraded marks a page served from the cache alone, which may miss
	// posts (SQL unavailable, or a degradation switch).
	Degraded bool `json:"degraded,omitempty"`
}

// PageParams chooses a page: Cursor is a previous page's NextCursor ("" for
// the first page), Limit the page size, 1 to 100 (0: the server's default,
// 20).
type PageParams struct {
	Cursor string
	Limit  int

	order string // the home feed's ?order= (RankedFeedPage)
}

// Token is a user token minted by the admin.
type Token struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// StreamTicket opens one live stream, once, within a minute, as
// ?ticket= (for browsers' EventSource, which cannot send headers).
type StreamTicket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
}

// LikeState is a post's like count and whether the caller likes it.
type LikeState struct {
	LikeCount int64 `json:"like_count"`
	LikedByMe bool  `json:"liked_by_me"`
}

// RepostState is a post's repost count and whether the token's user
// reposts it (Client.Repost, Client.Unrepost).
type RepostState struct {
	RepostCount  int64 `json:"repost_count"`
	RepostedByMe bool  `json:"reposted_by_me"`
}

// Marker is the read position in the home feed and how many live posts of
// the feed are newer, counted up to the server's cap (UnreadCapped past
// it). LastReadID is 0 and UpdatedAt nil until a marker is set.
type Marker struct {
	LastReadID   ID         `json:"last_read_id"`
	UnreadCount  int        `json:"unread_count"`
	UnreadCapped bool       `json:"unread_capped"`
	UpdatedAt    *time.Time `json:"updated_at"`
}

// Deletion answers an account deletion: the user is gone for the API at
// once, their data goes in the background job Job (see Client.Job).
type Deletion struct {
	ID     ID     `json:"id"`
	Status string `json:"status"`
	Job    ID     `json:"job"`
}

// Job is a background job: the purge of a deleted user.
type Job struct {
	ID          ID         `json:"id"`
	Kind        string     `json:"kind"`
	UserID      ID         `json:"user_id"`
	Status      string     `json:"status"` // "running" or "done"
	RequestedAt time.Time  `json:"requested_at"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	Removed     struct {
		Following int64 `json:"following"`
		Followers int64 `json:"followers"`
		Likes     int64 `json:"likes"`
		Posts     int64 `json:"posts"`
	} `json:"removed"`
}

// Degradation is the state of the degradation switches L1 to L4.
type Degradation struct {
	Switches map[string]bool   `json:"switches"`
	Meaning  map[string]string `json:"meaning"`
	Level    int               `json:"level"`
	// Shared is set by SetDegradation: whether the change reached every
	// process, or holds in the one that answered only.
	Shared *bool `json:"shared,omitempty"`
}

// Readiness is /readyz: each dependency's state ("ok", "down" or
// "degraded").
type Readiness struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}
