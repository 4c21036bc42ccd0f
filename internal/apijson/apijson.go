// Package apijson is the API's JSON representations of the domain's
// values: posts, users and pages of them, as the HTTP handlers answer with
// them and the live stream sends them. One package renders both, so a
// post reads the same in a feed page and in a stream's event.
//
// Files: apijson.go (the types and how a domain value becomes one),
// append.go (the hand-written encoding of a page of posts, the API's most
// frequent body).
package apijson

import (
	"encoding/json"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Time is t.UTC().Format(feed.TimeFormat), written out by hand: every
// post of every page passes here, and Format reads its layout anew on each
// call (a tenth of the API's CPU per feed page, BenchmarkFeedPage).
func Time(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(feed.TimeFormat)
	}
	hour, minute, sec := t.Clock()
	var b [len("2006-01-02T15:04:05.000Z")]byte
	digits := func(at, v, n int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	digits(0, year, 4)
	b[4] = '-'
	digits(5, int(month), 2)
	b[7] = '-'
	digits(8, day, 2)
	b[10] = 'T'
	digits(11, hour, 2)
	b[13] = ':'
	digits(14, minute, 2)
	b[16] = ':'
	digits(17, sec, 2)
	b[19] = '.'
	digits(20, t.Nanosecond()/int(time.Millisecond), 3)
	b[23] = 'Z'
	return string(b[:])
}

// Post is a post as the API shows it.
type Post struct {
	ID       string `json:"id"`
	AuthorID string `json:"author_id"`
	Content  string `json:"content"`
	// Data is the post's data as stored (compact JSON), absent if none:
	// AppendJSON writes it byte for byte.
	Data      json.RawMessage `json:"data,omitempty"`
	CreatedAt string          `json:"created_at"`
	// EditedAt is absent on a post never edited.
	EditedAt string `json:"edited_at,omitempty"`
	// ExternalID is absent on a post created without one.
	ExternalID string `json:"external_id,omitempty"`
	// Weight is the post's rank weight, shown only to its author and the
	// admin (WithWeight); absent for everyone else.
	Weight *float64 `json:"weight,omitempty"`
	// InReplyToID and InReplyToAuthorID are absent on a post that
	// replies to none.
	InReplyToID       string `json:"in_reply_to_id,omitempty"`
	InReplyToAuthorID string `json:"in_reply_to_author_id,omitempty"`
	// Every post a client sees carries its likes, unless degradation
	// switch L1 dropped that enrichment: then both are absent rather than
	// a misleading 0 and false.
	LikeCount *int64 `json:"like_count,omitempty"`
	LikedByMe *bool  `json:"liked_by_me,omitempty"`
	// ReplyCount is the post's live direct replies, with its likes (and
	// absent with them under switch L1).
	ReplyCount *int64 `json:"reply_count,omitempty"`
	// RepostCount and RepostedByMe are the post's live reposts and
	// whether the reader made one, with its likes (docs/reposts.md).
	RepostCount  *int64 `json:"repost_count,omitempty"`
	RepostedByMe *bool  `json:"reposted_by_me,omitempty"`
	// RepostOf is a repost's original as a page shows it, with its own
	// states; a repost has no content (Repost: the field is left out).
	RepostOf *Post `json:"repost_of,omitempty"`
	Repost   bool  `json:"-"`
}

// MarshalJSON is AppendJSON, so that every encoder of a post writes the
// same bytes (a repost leaves its content out).
func (p Post) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil), nil }

// NewPost renders p without its likes.
func NewPost(p feed.Post) Post {
	j := Post{
		ID:        feed.FormatID(p.ID),
		AuthorID:  feed.FormatID(p.AuthorID),
		Content:   p.Content,
		CreatedAt: Time(p.CreatedAt),
	}
	if p.Data != "" {
		j.Data = json.RawMessage(p.Data)
	}
	if !p.EditedAt.IsZero() {
		j.EditedAt = Time(p.EditedAt)
	}
	j.ExternalID = p.ExternalID
	if p.IsReply() {
		j.InReplyToID, j.InReplyToAuthorID = feed.FormatID(p.InReplyToID), feed.FormatID(p.InReplyToAuthorID)
	}
	j.Repost = p.IsRepost()
	return j
}

// WithWeight is j showing p's weight, for p's author or the admin.
func (j Post) WithWeight(p feed.Post) Post {
	w := p.Weight.Value()
	j.Weight = &w
	return j
}

// NewPostLikes is NewPost with p's likes from states; a nil states (the
// likes service dropped enrichment, L1) leaves them out.
func NewPostLikes(p feed.Post, states map[int64]feed.LikeState) Post {
	j := NewPost(p)
	if states != nil {
		st := states[p.ID]
		j.LikeCount, j.LikedByMe, j.ReplyCount = &st.Count, &st.LikedByMe, &st.Replies
		j.RepostCount, j.RepostedByMe = &st.Reposts, &st.RepostedByMe
	}
	if p.RepostOf != nil {
		o := NewPostLikes(*p.RepostOf, states)
		j.RepostOf = &o
	}
	return j
}

// User is a user as the API shows it.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Handle is absent for a user without one.
	Handle         string `json:"handle,omitempty"`
	FollowerCount  int64  `json:"follower_count"`
	FollowingCount int64  `json:"following_count"`
	// DeliveryMode is how the user's posts reach readers ("push" or
	// "pull"); GET /v1/users/{id} shows it, lists leave it out.
	DeliveryMode string `json:"delivery_mode,omitempty"`
}

// NewUser renders u.
func NewUser(u feed.User) User {
	return User{
		ID:             feed.FormatID(u.ID),
		Name:           u.Name,
		Handle:         u.Handle,
		FollowerCount:  u.FollowerCount,
		FollowingCount: u.FollowingCount,
		DeliveryMode:   u.DeliveryMode,
	}
}

// Relationship is how the token's user stands to another.
type Relationship struct {
	Following  bool `json:"following"`
	FollowedBy bool `json:"followed_by"`
	Reposts    bool `json:"reposts"`
	Muting     bool `json:"muting"`
	Blocking   bool `json:"blocking"`
}

// NewRelationship renders r.
func NewRelationship(r feed.Relationship) Relationship {
	return Relationship{Following: r.Following, FollowedBy: r.FollowedBy, Reposts: r.Reposts, Muting: r.Muting, Blocking: r.Blocking}
}

// List is a user's list as the API shows it (to its owner only).
type List struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Replies     string `json:"replies"`
	Exclusive   bool   `json:"exclusive"`
	MemberCount int64  `json:"member_count"`
}

// NewList renders l.
func NewList(l feed.List) List {
	return List{ID: feed.FormatID(l.ID), Name: l.Name, Replies: l.Replies, Exclusive: l.Exclusive, MemberCount: l.MemberCount}
}

// Page is a page of a list: items, and the cursor of the next page or
// null when this is the last.
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
	// Degraded marks a page served from the cache alone (SQL unavailable,
	// or a degradation switch): it may miss posts. Absent when false.
	Degraded bool `json:"degraded,omitempty"`
}

// NewPage renders items; render's false leaves an item out. The cursor
// (of kind, feed.EncodeCursor) names the last item the service returned,
// so a page trimmed here (see NewPostsPage) still resumes right.
func NewPage[T, J any](items []T, more bool, kind byte, id func(T) int64, render func(T) (J, bool)) Page[J] {
	page := Page[J]{Items: make([]J, 0, len(items))}
	for _, it := range items {
		if j, ok := render(it); ok {
			page.Items = append(page.Items, j)
		}
	}
	// An empty page that claims more would send a client round in circles.
	if more && len(items) > 0 {
		c := feed.EncodeCursor(kind, id(items[len(items)-1]))
		page.NextCursor = &c
	}
	return page
}

// PostsPage is a page of posts, encoded by its AppendJSON.
type PostsPage Page[Post]

// NewPostsPage renders a page of posts, each with its likes from states
// (nil: none). A deleted post never reaches a client, even if a cache
// handed the service a stale one.
func NewPostsPage(posts []feed.Post, more bool, states map[int64]feed.LikeState) PostsPage {
	return PostsPage(NewPage(posts, more, feed.CursorFeed,
		func(p feed.Post) int64 { return p.ID },
		func(p feed.Post) (Post, bool) { return NewPostLikes(p, states), !p.Deleted }))
}

// ShowWeights makes the page's items show the weights viewer may see: of
// viewer's own posts, or of every post for the admin. posts are those the
// page was made from (NewPostsPage left the deleted ones out).
func (pg PostsPage) ShowWeights(posts []feed.Post, viewer int64, admin bool) {
	i := 0
	for _, p := range posts {
		if p.Deleted {
			continue
		}
		if admin || (viewer != 0 && viewer == p.AuthorID) {
			pg.Items[i] = pg.Items[i].WithWeight(p)
		}
		i++
	}
}
