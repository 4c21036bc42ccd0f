package feed

import "time"

// Purge is the state of one user's deletion: the user is gone for the API
// from RequestedAt; the background purge removes their data in batches and
// sets FinishedAt when nothing of theirs is left.
type Purge struct {
	User        int64
	RequestedAt time.Time
	FinishedAt  time.Time // zero while the purge runs
	// What the purge removed so far: the user's follow edges each way,
	// their likes (and unlike tombstones), and their posts.
	Following, Followers, Likes, Posts int64
}

// Done reports whether the purge has finished.
func (p Purge) Done() bool { return !p.FinishedAt.IsZero() }

// PurgeStatus is the purge's state as the API shows it.
func (p Purge) Status() string {
	if p.Done() {
		return "done"
	}
	return "running"
}

// PurgeBatch is what one batch of a purge did.
type PurgeBatch struct {
	// Done: nothing of the user was left; the user row is gone and the
	// purge is marked finished.
	Done bool
	// Posts are the user's posts the batch deleted, for the caches to
	// forget.
	Posts []int64
	// Counted are the posts whose like count lost a like of the user, for
	// the caches to drop their counters.
	Counted []int64
}
