package client

import (
	"context"
	"net/http"
)

// Pair is one follow edge: FollowerID follows FolloweeID.
type Pair struct {
	FollowerID ID `json:"follower_id"`
	FolloweeID ID `json:"followee_id"`
}

// FollowBatchParams is a batch of follows and unfollows, at most 1,000
// pairs in all. The follows are made first, then the unfollows, each list
// in order.
type FollowBatchParams struct {
	Follow   []Pair `json:"follow,omitempty"`
	Unfollow []Pair `json:"unfollow,omitempty"`
}

// The result of each pair of a follow batch, as PairResult.Result carries
// it. unknown_user and blocked change nothing for the pair and do not fail
// the others.
const (
	ResultCreated     = "created"      // follow: a new edge
	ResultExists      = "exists"       // follow: the edge was there
	ResultRemoved     = "removed"      // unfollow: the edge is gone
	ResultAbsent      = "absent"       // unfollow: there was no edge
	ResultUnknownUser = "unknown_user" // either user does not exist or is deleted
	ResultBlocked     = "blocked"      // follow: a block either way forbids it
)

// PairResult is the outcome of one pair of a follow batch.
type PairResult struct {
	Pair
	Result string `json:"result"`
}

// FollowBatchResult holds one result per pair of the batch, in its order.
type FollowBatchResult struct {
	Follow   []PairResult `json:"follow"`
	Unfollow []PairResult `json:"unfollow"`
}

// FollowBatch makes many follows and unfollows in one transaction, for an
// app that mirrors its own follow graph (admin). POST
// /v1/admin/follows/batch. More than 1,000 pairs is an *Error
// batch_too_large, a bad pair (a zero id, a self-follow) an *Error
// invalid, and then nothing changes.
//
// It is retried like a PUT although it is a POST without an
// Idempotency-Key: the batch is one transaction that sets each pair to
// the state asked for, so a replay ends in the same state (answering
// exists or absent for the pairs the lost attempt changed), and the
// server redoes the cache work of pairs already as asked, which repairs
// what a failure after the commit left. The price: after a retry, a
// result says exists where the first attempt created the edge.
func (c *Client) FollowBatch(ctx context.Context, p FollowBatchParams) (FollowBatchResult, error) {
	var out FollowBatchResult
	err := c.call(ctx, request{method: http.MethodPost, path: "/v1/admin/follows/batch", body: p, idempotent: true,
		want: http.StatusOK, out: &out})
	return out, err
}
