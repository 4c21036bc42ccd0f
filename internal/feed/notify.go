package feed

import "context"

// Notifier carries small messages on per-author channels between
// processes: Redis pub/sub in production (sharded pub/sub on a Cluster),
// in-process on the embedded default. Both pass the suite in package
// feedtest. The live stream uses it: a post's event is one message on
// its author's channel, whatever the author's follower count, and each
// serve process listens to the channels of the authors its connected
// readers follow.
//
// Delivery is best effort and at most once: a message published while a
// subscriber's connection is down, or that it has no room for, is lost.
// The stream's clients make up for that by resuming (Last-Event-ID).
type Notifier interface {
	// Notify sends msg on author's channel, to every subscription that
	// listens to it at the time.
	Notify(ctx context.Context, author int64, msg []byte) error
	// Subscribe returns a subscription that listens to no channel yet.
	// It does no I/O until Add.
	Subscribe() Subscription
}

// Subscription listens to a set of authors' channels. Its methods are safe
// for concurrent use.
type Subscription interface {
	// Add starts listening to authors' channels; a message sent after Add
	// returns is delivered (modulo the best-effort rule). Adding a channel
	// twice is harmless.
	Add(ctx context.Context, authors ...int64) error
	// Remove stops listening to authors' channels.
	Remove(ctx context.Context, authors ...int64) error
	// C delivers the messages, in the order sent per channel. It is
	// closed by Close.
	C() <-chan Notification
	// Close stops listening and closes C.
	Close() error
}

// Notification is one message received on an author's channel.
type Notification struct {
	Author int64
	Msg    []byte
}
