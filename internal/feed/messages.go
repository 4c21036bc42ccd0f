package feed

import (
	"context"
	"encoding/json"
	"fmt"
)

// The messages feedd's processes pass each other through the outbox and
// the queues, and their encoding. Every producer and consumer encodes and
// decodes them here, so the wire format has one definition. They are JSON
// with ids as decimal strings, so that no consumer in another language
// rounds them. Decoding ignores fields it does not know: a message an
// older or newer feedd left in a queue still decodes.

// Event kinds carried from the outbox to the broker.
const (
	EventPostCreated = "post.created"
)

// Event is what the write path records in the outbox, in the same SQL
// transaction as the change it describes, and what the posts queue
// carries to the dispatcher.
type Event struct {
	Kind     string `json:"kind"`
	PostID   int64  `json:"post_id,string"`
	AuthorID int64  `json:"author_id,string"`
	// RequestID is the id of the API request that caused the event, so
	// the relay's and the workers' log lines name the request that a
	// post came from.
	RequestID string `json:"request_id,omitempty"`
}

// PostCreated is the event that announces author's new post, naming the
// request in ctx.
func PostCreated(ctx context.Context, post, author int64) Event {
	return Event{Kind: EventPostCreated, PostID: post, AuthorID: author, RequestID: RequestID(ctx)}
}

// Encode returns e as the outbox stores it.
func (e Event) Encode() []byte { return encode(e) }

// DecodeEvent parses an event. One without a post or an author is
// malformed; one of an unknown Kind is not, and is left to the consumer.
func DecodeEvent(b []byte) (Event, error) {
	return decode(b, "event", "the post id must be valid and the author id positive",
		func(e Event) bool { return messagePostID(e.PostID) && e.AuthorID > 0 })
}

// OutboxEvent is an encoded Event as stored: ID orders the outbox.
type OutboxEvent struct {
	ID      int64
	Payload []byte
}

// FanoutTask asks a worker to push PostID into the inboxes of AuthorID's
// followers whose ids lie in (After, Upto]. Its ID is derived from the post
// and the range, so a task re-created by a redone split is the same task.
// (Tasks once carried a "score", the post id again; decoding ignores it.)
type FanoutTask struct {
	ID       string `json:"id"`
	PostID   int64  `json:"post_id,string"`
	AuthorID int64  `json:"author_id,string"`
	After    int64  `json:"after,string"`
	Upto     int64  `json:"upto,string"`
	// RequestID is the publishing request's id (see Event.RequestID).
	RequestID string `json:"request_id,omitempty"`
	// Last marks the task of the highest follower range: when it is done
	// the post has reached (about) every inbox, which the delivery-lag
	// histogram records.
	Last bool `json:"last,omitempty"`
}

// Encode returns t as the tasks queue carries it.
func (t FanoutTask) Encode() []byte { return encode(t) }

// DecodeFanoutTask parses a task. One without a post, an author or a
// non-empty range is malformed.
func DecodeFanoutTask(b []byte) (FanoutTask, error) {
	return decode(b, "fan-out task", "the post id must be valid, the author id positive and the range not empty",
		func(t FanoutTask) bool { return messagePostID(t.PostID) && t.AuthorID > 0 && t.Upto > t.After })
}

// LikeEvent is one like or unlike as the API accepted it. Version orders
// the actions of one user: it is the action's time in microseconds, made
// strictly increasing per user by the cache that decided the action, so
// the writer applies a (user, post) pair's latest action whatever order
// redeliveries arrive in.
type LikeEvent struct {
	User    int64 `json:"u,string"`
	Post    int64 `json:"p,string"`
	Liked   bool  `json:"l"`
	Version int64 `json:"v,string"`
}

// Encode returns ev as the likes queue carries it.
func (ev LikeEvent) Encode() []byte { return encode(ev) }

// DecodeLikeEvent parses a like event. One without a user, a post or a
// version is malformed.
func DecodeLikeEvent(b []byte) (LikeEvent, error) {
	return decode(b, "like event", "user and version must be positive and the post id valid",
		func(ev LikeEvent) bool { return ev.User > 0 && messagePostID(ev.Post) && ev.Version > 0 })
}

// messagePostID is the messages' rule for a post id: not 0, and not below
// MinID (a post from before 2025 is negative). No upper bound: messages
// carried larger ids before MinID existed, and still carry them exactly.
func messagePostID(id int64) bool { return id != 0 && id >= MinID }

// decode unmarshals a message named what and checks it with valid, which
// rule describes.
func decode[M any](b []byte, what, rule string, valid func(M) bool) (M, error) {
	var m, zero M
	if err := json.Unmarshal(b, &m); err != nil {
		return zero, fmt.Errorf("feed: decode %s: %w", what, err)
	}
	if !valid(m) {
		return zero, fmt.Errorf("feed: decode %s: %s", what, rule)
	}
	return m, nil
}

// encode marshals a message. The messages hold only strings, integers and
// booleans, which always encode.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("feed: encode %T: %v", v, err))
	}
	return b
}
