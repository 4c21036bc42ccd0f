// Package jsonl is the JSON Lines format of feedd's data, declared once:
// the lines feedd export writes, feedd import reads and bench graph
// --jsonl generates, with their strict decoding (lines.go), a reader that
// takes a file a line at a time in constant memory (reader.go) and a
// writer (writer.go).
//
// A line is one JSON object. In an export every line says its kind in a
// "kind" key; in a file of one kind (feedd import --users and the rest)
// the lines leave it out:
//
//	{"kind":"user","id":"42","name":"alice"}
//	{"kind":"follow","follower_id":"42","followee_id":"7"}
//	{"kind":"post","author_id":"42","external_id":"blog-9913","content":"…","created_at":"…","data":{…}}
//	{"kind":"like","user_id":"42","author_id":"7","external_id":"blog-17"}
//	{"kind":"list","owner_id":"42","list_id":"246…","name":"friends","replies":"followed","exclusive":false}
//	{"kind":"list_member","owner_id":"42","list_id":"246…","member_id":"7"}
//
// User ids are decimal strings, as in the API ("42"); a reader also takes
// them as JSON numbers.
package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/feedd/feedd/internal/feed"
)

// Kind is the kind of a line, as its "kind" key says.
type Kind string

const (
	User       Kind = "user"
	Profile    Kind = "profile"
	Marker     Kind = "marker"
	Follow     Kind = "follow"
	Mute       Kind = "mute"
	Block      Kind = "block"
	Post       Kind = "post"
	Like       Kind = "like"
	List       Kind = "list"
	ListMember Kind = "list_member"
)

// Kinds are the kinds of line, in the order an export writes them.
var Kinds = []Kind{User, Profile, Marker, Follow, Mute, Block, Post, Like, List, ListMember}

// The lines. Kind is set in an export and empty in a file of one kind.
type (
	// UserLine is a user: its id, name and handle (absent if none).
	UserLine struct {
		Kind   Kind   `json:"kind,omitempty"`
		ID     ID     `json:"id"`
		Name   string `json:"name"`
		Handle string `json:"handle,omitempty"`
	}
	// ProfileLine is what feedd knows of a user beyond its name: when it
	// was created and its counts (which follow from the follows).
	ProfileLine struct {
		Kind           Kind   `json:"kind,omitempty"`
		UserID         ID     `json:"user_id"`
		CreatedAt      string `json:"created_at"`
		FollowerCount  int64  `json:"follower_count"`
		FollowingCount int64  `json:"following_count"`
		// HomeReplies is the user's rule for replies in its home feed
		// (feed.HomeReplies), left out when it is the default.
		HomeReplies string `json:"home_replies,omitempty"`
	}
	// MarkerLine is how far a user has read a timeline.
	MarkerLine struct {
		Kind       Kind   `json:"kind,omitempty"`
		UserID     ID     `json:"user_id"`
		Timeline   string `json:"timeline"`
		LastReadID string `json:"last_read_id"`
		UpdatedAt  string `json:"updated_at"`
	}
	// FollowLine is a follow: follower follows followee.
	FollowLine struct {
		Kind       Kind `json:"kind,omitempty"`
		FollowerID ID   `json:"follower_id"`
		FolloweeID ID   `json:"followee_id"`
	}
	// MuteLine is a mute: user mutes target.
	MuteLine struct {
		Kind     Kind `json:"kind,omitempty"`
		UserID   ID   `json:"user_id"`
		TargetID ID   `json:"target_id"`
	}
	// BlockLine is a block: blocker blocks blocked.
	BlockLine struct {
		Kind      Kind `json:"kind,omitempty"`
		BlockerID ID   `json:"blocker_id"`
		BlockedID ID   `json:"blocked_id"`
	}
	// PostLine is a post, keyed by its author and external id.
	PostLine struct {
		Kind       Kind            `json:"kind,omitempty"`
		AuthorID   ID              `json:"author_id"`
		ExternalID string          `json:"external_id"`
		Content    string          `json:"content"`
		CreatedAt  string          `json:"created_at"`
		Data       json.RawMessage `json:"data,omitempty"`
		// Weight is the post's rank weight (0..100); absent for the
		// default, 1.
		Weight *float64 `json:"weight,omitempty"`
	}
	// ListLine is one of owner's lists, keyed by its feedd id.
	ListLine struct {
		Kind      Kind   `json:"kind,omitempty"`
		OwnerID   ID     `json:"owner_id"`
		ListID    ID     `json:"list_id"`
		Name      string `json:"name"`
		Replies   string `json:"replies"`
		Exclusive bool   `json:"exclusive"`
	}
	// ListMemberLine is a member of owner's list.
	ListMemberLine struct {
		Kind     Kind `json:"kind,omitempty"`
		OwnerID  ID   `json:"owner_id"`
		ListID   ID   `json:"list_id"`
		MemberID ID   `json:"member_id"`
	}
	// LikeLine is a like of the post of author with external id.
	LikeLine struct {
		Kind       Kind   `json:"kind,omitempty"`
		UserID     ID     `json:"user_id"`
		AuthorID   ID     `json:"author_id"`
		ExternalID string `json:"external_id"`
	}
)

// ID is a user id as the lines carry it: written as a decimal string, as
// in the API ("42"), and read from one or from a JSON number. Zero is
// none (a key left out).
type ID int64

// MarshalJSON writes the id as a decimal string.
func (i ID) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON reads a positive id from a string or a number.
func (i *ID) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		var err error
		if s, err = strconv.Unquote(s); err != nil {
			return errors.New("not a string")
		}
	}
	v, err := feed.ParseID(s)
	if err != nil {
		return idError{fmt.Sprintf("%s is not a user id (a positive integer, in a string)", b)}
	}
	*i = ID(v)
	return nil
}

// idError is a value that is not an id; its message is the whole reason.
type idError struct{ msg string }

func (e idError) Error() string { return e.msg }
