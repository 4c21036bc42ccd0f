package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/feed"
)

// Console is what the ops console's routes need: the deployment's figures
// and the dead letters' way back. It is declared here, where it is used;
// census.Console is the real one.
type Console interface {
	// Overview gathers the deployment's figures; a backend that does not
	// answer leaves its figures null and says so in Problems.
	Overview(ctx context.Context) (census.Overview, error)
	// Requeue moves every dead letter of each queue back onto it, as
	// `feedd requeue-dead` does, and returns how many it moved per queue.
	Requeue(ctx context.Context, queues []string) (map[string]int, error)
}

func handleOverview(con Console) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if con == nil {
			writeError(w, http.StatusNotFound, feed.ENOTFOUND, "this process serves no ops console")
			return
		}
		o, err := con.Overview(r.Context())
		if err != nil {
			respondError(w, fmt.Errorf("httpapi: overview: %w", err))
			return
		}
		encode(w, http.StatusOK, o)
	})
}

// requeueRequest names the queue whose dead letters to move; empty or
// "all" moves every queue's. The body may be left out.
type requeueRequest struct {
	Queue string `json:"queue"`
}

func (req requeueRequest) queues() []string {
	if req.Queue == "" || req.Queue == "all" {
		return []string{feed.QueuePosts, feed.QueueTasks, feed.QueueLikes}
	}
	return []string{req.Queue}
}

func (req requeueRequest) valid() error {
	switch req.Queue {
	case "", "all", feed.QueuePosts, feed.QueueTasks, feed.QueueLikes:
		return nil
	}
	return feed.Errorf(feed.EINVALID, "unknown queue %q: the queues are posts, tasks and likes (or all)", req.Queue)
}

type requeueJSON struct {
	Requeued map[string]int `json:"requeued"`
}

func handleRequeue(con Console) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if con == nil {
			writeError(w, http.StatusNotFound, feed.ENOTFOUND, "this process serves no ops console")
			return
		}
		req, err := decodeOptional[requeueRequest](r)
		if err != nil {
			respondError(w, err)
			return
		}
		moved, err := con.Requeue(r.Context(), req.queues())
		if err != nil {
			respondError(w, fmt.Errorf("httpapi: requeue dead letters: %w", err))
			return
		}
		encode(w, http.StatusOK, requeueJSON{Requeued: moved})
	})
}
