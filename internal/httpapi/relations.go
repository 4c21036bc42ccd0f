package httpapi

import (
	"context"
	"net/http"

	"github.com/feedd/feedd/internal/feed"
)

// Mutes and blocks. A block hides each user from the other like a user
// who does not exist: GET /v1/users/{id}, its posts, likes and follow lists, and
// GET /v1/posts/{id} of its posts answer 404 to the other side (as on
// Twitter and Mastodon, nothing tells a blocked user apart from a missing
// one). The likes lists (likers, a user's likes, top posts) leave the
// other's entries out: the likes service does (likes/visible.go).

// relation is Timeline.Mute, Unmute, Block or Unblock as a method
// expression.
type relation func(svc Timeline, ctx context.Context, user, target int64) error

func handleMute(svc Timeline) http.Handler    { return handleRelation(svc, Timeline.Mute) }
func handleUnmute(svc Timeline) http.Handler  { return handleRelation(svc, Timeline.Unmute) }
func handleBlock(svc Timeline) http.Handler   { return handleRelation(svc, Timeline.Block) }
func handleUnblock(svc Timeline) http.Handler { return handleRelation(svc, Timeline.Unblock) }

func handleRelation(svc Timeline, change relation) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		if err := change(svc, r.Context(), me, id); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

func handleMutes(svc Timeline) http.Handler  { return handleMyList(svc, Timeline.Mutes) }
func handleBlocks(svc Timeline) http.Handler { return handleMyList(svc, Timeline.Blocks) }

// handleMyList pages one of the actor's own user lists, like the
// followers list.
func handleMyList(svc Timeline, list userLister) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, err := actingUser(r)
		if err != nil {
			return err
		}
		return writeUserPage(w, r, svc, list, me)
	})
}

// hiddenFor is what the request's viewer does not see (nothing for the
// admin).
func hiddenFor(ctx context.Context, svc Timeline) (feed.Hidden, error) {
	return svc.Hidden(ctx, viewerFrom(ctx))
}

// notBlocked returns ENOTFOUND, as for a user who does not exist, when a
// block stands between the viewer and user.
func notBlocked(ctx context.Context, svc Timeline, user int64) error {
	h, err := hiddenFor(ctx, svc)
	if err != nil {
		return err
	}
	if h.Blocked(user) {
		return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	return nil
}
