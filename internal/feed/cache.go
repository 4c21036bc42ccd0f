package feed

import (
	"context"
	"time"
)

// InboxPage is a slice of one reader's inbox.
type InboxPage struct {
	// IDs are post ids, newest first.
	IDs []int64
	// Exists is false when the inbox is absent (never built, expired, or
	// lost with the cache): the caller rebuilds it from SQL.
	Exists bool
	// Complete means the inbox holds every post of the reader's feed older
	// than its newest entry: when a page runs out, the feed has ended. A
	// trimmed inbox, or one that got a follow backfill, is not complete:
	// paging past its end continues from SQL.
	Complete bool
}

// DefaultInboxMax is how many post ids an inbox keeps unless configured
// otherwise (FEEDD_INBOX_MAX): the timeline and both caches default to it.
const DefaultInboxMax = 1000

// CheckInboxIDs rejects ids that are no post ids (ValidPostID: MinID to
// MaxID, not 0) with EINVALID, for every implementation of Inboxes to call
// on the ids it is given: a larger id loses precision where Redis holds it
// as a number (a Lua script's float64, a sorted set's score), and 0 is
// the Redis inbox's "no newest id". The in-process cache refuses them too,
// so that such a bug shows on the embedded default before it shows in
// production.
func CheckInboxIDs(ids ...int64) error {
	for _, id := range ids {
		if !ValidPostID(id) {
			return Errorf(EINVALID, "post id %d is out of range: ids are %d to 2^53-1, not 0", id, int64(MinID))
		}
	}
	return nil
}

// Inboxes is the per-reader home-timeline cache: a set of post ids ordered
// by id (ids are time-ordered, so by time), trimmed to a maximum length.
// Everything in it can be lost at any moment and is rebuilt from SQL.
//
// Implementations are safe for concurrent use. Every write is idempotent:
// adding an id twice leaves one entry. Post ids are MinID to MaxID but 0
// (ValidPostID); a call given another fails with EINVALID (CheckInboxIDs).
type Inboxes interface {
	// InboxPage returns up to n ids strictly below before (0: from the
	// newest), newest first.
	InboxPage(ctx context.Context, reader, before int64, n int) (InboxPage, error)
	// InboxPages is InboxPage of the first n ids of each of readers, in
	// one round trip; an absent inbox is a zero InboxPage.
	InboxPages(ctx context.Context, readers []int64, n int) (map[int64]InboxPage, error)
	// FillInbox creates or replaces reader's inbox with ids (which may be
	// empty: an empty inbox is remembered too) and lets it live for ttl.
	FillInbox(ctx context.Context, reader int64, ids []int64, complete bool, ttl time.Duration) error
	// AddToInbox adds ids to reader's inbox if it exists, trims it, and
	// marks it incomplete when markIncomplete is set (a follow backfill
	// copies only the newest posts of the followee).
	AddToInbox(ctx context.Context, reader int64, ids []int64, markIncomplete bool) error
	// PushToInboxes adds one post id to the inbox of each reader whose inbox
	// exists, trimming each, in one round trip. Absent inboxes are skipped:
	// they are rebuilt when their owner reads.
	PushToInboxes(ctx context.Context, readers []int64, id int64) error
	// RemoveFromInbox removes ids from reader's inbox.
	RemoveFromInbox(ctx context.Context, reader int64, ids []int64) error
	// InboxBounds returns the newest and oldest id in reader's inbox
	// (0, 0 when it is empty) and whether it exists.
	InboxBounds(ctx context.Context, reader int64) (newest, oldest int64, exists bool, err error)
	// DropInbox deletes reader's inbox.
	DropInbox(ctx context.Context, reader int64) error
}

// PostCache caches post bodies by id. A deleted post is cached as a
// tombstone (Deleted set) so that a deleted post does not send every read
// back to SQL.
type PostCache interface {
	// CachedPosts returns the cached posts among ids; misses are absent.
	CachedPosts(ctx context.Context, ids []int64) (map[int64]Post, error)
	// CachePosts stores each of posts for ttl unless the cache holds a
	// newer version of it (Post.Supersedes), in one step per post: an
	// edit or a delete writes its version after its SQL commit, and a
	// reader's fill with a copy read before that commit, arriving later,
	// leaves it in place.
	CachePosts(ctx context.Context, posts []Post, ttl time.Duration) error
}

// KV is the small key-value surface locks and rate gates need. Every call
// touches one key, so it works on Redis Cluster.
type KV interface {
	// SetNX sets key to value for ttl if key is absent, and reports
	// whether it did.
	SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// Get returns key's value and whether it exists.
	Get(ctx context.Context, key string) (string, bool, error)
	// GetEx is Get that also resets the ttl of a key it finds: a value
	// kept while it is read (a ranked feed's snapshot).
	GetEx(ctx context.Context, key string, ttl time.Duration) (string, bool, error)
	// Set sets key to value for ttl.
	Set(ctx context.Context, key, value string, ttl time.Duration) error
	// CompareAndDelete deletes key if its value is value, and reports
	// whether it did: a lock is released only by its owner.
	CompareAndDelete(ctx context.Context, key, value string) (bool, error)
	// CompareAndExpire resets key's ttl if its value is value: a lock is
	// extended only by its owner.
	CompareAndExpire(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
}

// Cache is the accelerator: Redis in production, an in-process map on the
// embedded default. Both pass the suite in package feedtest.
type Cache interface {
	Inboxes
	PostCache
	KV
	Ping(ctx context.Context) error
	Close() error
}
