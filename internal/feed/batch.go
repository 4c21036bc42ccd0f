package feed

// Edge is one follow edge: Follower follows Followee.
type Edge struct {
	Follower, Followee int64
}

// MaxFollowBatch bounds the pairs of one follow batch, follows and
// unfollows together: a batch is one SQL transaction, and this keeps it to
// a few milliseconds of locks on a few thousand user rows.
const MaxFollowBatch = 1000

// The outcome of one pair of a follow batch. These words are part of the
// HTTP API.
const (
	EdgeCreated     = "created"      // follow: the edge is new
	EdgeExists      = "exists"       // follow: the edge was there already
	EdgeRemoved     = "removed"      // unfollow: the edge is gone
	EdgeAbsent      = "absent"       // unfollow: there was no edge
	EdgeUnknownUser = "unknown_user" // either end does not exist (or is deleted): nothing done
	EdgeBlocked     = "blocked"      // follow: a block between the two forbids it: nothing done
)

// CheckFollowBatch returns an error saying why a batch cannot be run, or
// nil: too many pairs (EBATCHTOOLARGE), an id that is not positive, or a
// user following themselves (EINVALID). Unfollowing oneself is allowed: as
// for one unfollow, the outcome asked for already holds (EdgeAbsent).
func CheckFollowBatch(follow, unfollow []Edge) error {
	if n := len(follow) + len(unfollow); n > MaxFollowBatch {
		return Errorf(EBATCHTOOLARGE, "a batch holds at most %d pairs, follows and unfollows together, not %d", MaxFollowBatch, n)
	}
	for _, list := range []struct {
		name  string
		edges []Edge
	}{{"follow", follow}, {"unfollow", unfollow}} {
		for i, e := range list.edges {
			if e.Follower <= 0 || e.Followee <= 0 {
				return Errorf(EINVALID, "%s[%d]: follower_id and followee_id are both required, as positive ids", list.name, i)
			}
			if list.name == "follow" {
				if err := CheckNotSelf("follow", e.Follower, e.Followee); err != nil {
					return Errorf(EINVALID, "follow[%d]: %s", i, ErrorMessage(err))
				}
			}
		}
	}
	return nil
}
