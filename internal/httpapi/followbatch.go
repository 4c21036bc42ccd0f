package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
)

// announceWorkers bounds the announcements a follow batch sends at once.
const announceWorkers = 8

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
// answers the outcome of each pair in order. Then, as a single follow does
// (announcing), it tells the live streams of every follower it touched to
// read their authors again.
func handleFollowBatch(svc Service, lv *Live) http.Handler {
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
		if lv == nil || lv.Announce == nil {
			return nil
		}
		readers := map[int64]bool{}
		for i, e := range follow {
			if followed[i] == feed.EdgeCreated || followed[i] == feed.EdgeExists {
				readers[e.Follower] = true
			}
		}
		for i, e := range unfollow {
			if unfollowed[i] == feed.EdgeRemoved || unfollowed[i] == feed.EdgeAbsent {
				readers[e.Follower] = true
			}
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), announceTimeout)
		defer cancel()
		// One message per reader; a few at once, so that a batch of 1,000
		// readers is not 1,000 round trips end to end.
		var g errgroup.Group
		g.SetLimit(announceWorkers)
		for reader := range readers {
			g.Go(func() error { return lv.Announce.FollowsChanged(ctx, reader) })
		}
		if err := g.Wait(); err != nil {
			// The changes are made; open streams learn of them late (a
			// reconnect reads the feed afresh). The request log says so.
			noteError(w, fmt.Errorf("httpapi: announce a follow batch to the live streams: %w", err))
		}
		return nil
	})
}
