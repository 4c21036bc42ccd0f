package feed

// The rows an import brings (feedd import) and what the store did with
// each: the contract between the importer and the SQL store.

// ImportOutcome is what an import did with one row: the store's
// ImportPosts with a post, ImportUsers, ImportFollows and ImportLikes
// with theirs.
type ImportOutcome int

const (
	// Imported: the post is stored.
	Imported ImportOutcome = iota
	// ExternalIDExists: the author has a post with this external id
	// already (ImportResult.ExistingID), deleted or not; nothing was
	// written. Importing a file again ends here for every post.
	ExternalIDExists
	// IDTaken: another post has this id (the same millisecond and
	// sequence); nothing was written. The caller tries again with another
	// sequence (ImportSeq with the next attempt).
	IDTaken
)

// More outcomes, of the users, follows and likes an import brings.
const (
	// Unchanged: the store held the row already (a re-run, or the same
	// row twice in a batch); nothing changed.
	Unchanged ImportOutcome = iota + IDTaken + 1
	// UnknownUser: a user the row names does not exist, or is being
	// deleted.
	UnknownUser
	// UnknownPost: the post a like names does not exist.
	UnknownPost
	// Blocked: a block between the two users forbids the follow.
	Blocked
	// SelfFollow: a follow of oneself.
	SelfFollow
	// Deleting: a user id whose earlier user is being purged.
	Deleting
	// UnknownList: the list a member names does not exist.
	UnknownList
	// LimitReached: the owner has MaxLists lists, or the list
	// MaxListMembers members.
	LimitReached
	// HandleInUse: another user holds the user's handle (or an earlier
	// user of the batch took it); nothing was written.
	HandleInUse
)

// ImportResult is ImportPosts' answer for one post.
type ImportResult struct {
	Outcome    ImportOutcome
	ExistingID int64 // with ExternalIDExists: the post that has the external id
}

// ExternalKey is a post's external id with its author: unique among posts.
type ExternalKey struct {
	AuthorID   int64
	ExternalID string
}

// FollowImport is what ImportFollows did with a batch of edges.
type FollowImport struct {
	// Outcomes[i] is what became of edge i.
	Outcomes []ImportOutcome
	// Followers are the users who follow someone new: their feeds
	// changed. Followees are the users who gained followers. Both
	// ascending, without repeats.
	Followers, Followees []int64
}

// LikeImport is what ImportLikes did with a batch of (user, post) likes.
type LikeImport struct {
	// Outcomes[i] is UnknownUser, UnknownPost, or Imported for a valid
	// like; of the valid ones, Liked of them were new (the others were
	// there already, liked or unliked since).
	Outcomes []ImportOutcome
	// Liked counts the new likes; Deltas is how much each post's like
	// count moved (posts that did not move are left out), and Tallies
	// what SQL has of those posts after the move (for SettleLikes).
	Liked   int
	Deltas  map[int64]int64
	Tallies map[int64]LikeTally
	// Users are the users of the valid likes, ascending.
	Users []int64
}
