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

// Announcer tells the live streams of every process what changed, as
// messages on a Notifier (stream.Announcer is the one implementation).
// The service that makes a change calls it once the change committed: a
// post created (the relay and the dispatcher), edited or deleted, whom a
// reader follows, mutes or blocks changed (the write side, and feedd
// import). It is declared here, once, because four rooms call it; like
// the Notifier it is best effort: a failure is logged and the change
// stands, since a stream's client that missed it reads it on its next
// reconnect.
type Announcer interface {
	// PostCreated announces author's new post id.
	PostCreated(ctx context.Context, author, id int64) error
	// PostEdited announces that author's post id was edited; version is
	// the edited post's Post.Version.
	PostEdited(ctx context.Context, author, id, version int64) error
	// PostDeleted announces that author's post id is gone.
	PostDeleted(ctx context.Context, author, id int64) error
	// FollowsChanged tells reader's streams to read whom it follows,
	// mutes and blocks again.
	FollowsChanged(ctx context.Context, reader int64) error
	// TokensChanged tells user's streams to check their token again at
	// once: the user's tokens were revoked, or the user deleted.
	TokensChanged(ctx context.Context, user int64) error
}
