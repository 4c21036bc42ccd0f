package httpapi

import (
	"net/http"

	"github.com/feedd/feedd/internal/feed"
)

type edgeJSON struct {
	FollowerID jsonID `json:"follower_id"`
	FolloweeID jsonID `json:"followee_id"`
}

type followBatchRequest struct {
	Follow   []edgeJSON `json:"follow"`
	Unfollow []edgeJSON `json:"unfollow"`
}

func edgesOf(list []edgeJSON) []feed.Edge {
	edges := make([]feed.Edge, len(list))
	for i, e := range list {
		edges[i] = feed.Edge{Follower: int64(e.FollowerID), Followee: int64(e.FolloweeID)}
	}
	return edges
}

// valid is the domain's rule (feed.CheckFollowBatch), so that the API and
// the store refuse the same batches with the same words.
func (req followBatchRequest) valid() error {
	return feed.CheckFollowBatch(edgesOf(req.Follow), edgesOf(req.Unfollow))
}

type edgeResultJSON struct {
	FollowerID string `json:"follower_id"`
	FolloweeID string `json:"followee_id"`
	Result     string `json:"result"`
}

type followBatchJSON struct {
	Follow   []edgeResultJSON `json:"follow"`
	Unfollow []edgeResultJSON `json:"unfollow"`
}

func edgeResults(edges []feed.Edge, results []string) []edgeResultJSON {
	out := make([]edgeResultJSON, len(edges))
	for i, e := range edges {
		out[i] = edgeResultJSON{FollowerID: feed.FormatID(e.Follower), FolloweeID: feed.FormatID(e.Followee), Result: results[i]}
	}
	return out
}

// handleFollowBatch makes an app's batch of follows and unfollows and
// answers the outcome of each pair in order (the write side tells the live
// streams of every follower it touched, as for a single follow).
func handleFollowBatch(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		req, err := decode[followBatchRequest](r)
		if err != nil {
			return err
		}
		follow, unfollow := edgesOf(req.Follow), edgesOf(req.Unfollow)
		followed, unfollowed, err := svc.FollowBatch(r.Context(), follow, unfollow)
		if err != nil {
			return err
		}
		encode(w, http.StatusOK, followBatchJSON{Follow: edgeResults(follow, followed), Unfollow: edgeResults(unfollow, unfollowed)})
		return nil
	})
}
