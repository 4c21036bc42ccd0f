package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
)

// Token lifetimes, in seconds.
const (
	defaultTokenTTL = 3600
	maxTokenTTL     = 365 * 24 * 3600
)

type createUserRequest struct {
	Name string `json:"name"`
	ID   jsonID `json:"id"`
	// Handle is the user's handle; null or left out for none.
	Handle *string `json:"handle"`
}

func (req createUserRequest) valid() error {
	if err := feed.CheckName(req.Name); err != nil {
		return err
	}
	if req.Handle != nil {
		_, err := feed.CheckHandle(*req.Handle)
		return err
	}
	return nil
}

func (req createUserRequest) handle() string {
	if req.Handle == nil {
		return ""
	}
	return *req.Handle
}

func handleUserCreate(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		req, err := decode[createUserRequest](r)
		if err != nil {
			return err
		}
		u, err := svc.CreateUser(r.Context(), int64(req.ID), req.Name, req.handle())
		if err != nil {
			return err
		}
		w.Header().Set("Location", "/v1/users/"+feed.FormatID(u.ID))
		encode(w, http.StatusCreated, apijson.NewUser(u))
		return nil
	})
}

type createTokenRequest struct {
	// A pointer tells "left out" (the default) from 0 (an error).
	TTLSeconds *int64 `json:"ttl_seconds"`
}

func (req createTokenRequest) valid() error {
	if req.TTLSeconds != nil && (*req.TTLSeconds < 1 || *req.TTLSeconds > maxTokenTTL) {
		return feed.Errorf(feed.EINVALID, "ttl_seconds must be from 1 to %d", maxTokenTTL)
	}
	return nil
}

func (req createTokenRequest) ttl() time.Duration {
	if req.TTLSeconds == nil {
		return defaultTokenTTL * time.Second
	}
	return time.Duration(*req.TTLSeconds) * time.Second
}

type tokenJSON struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expires_at"`
}

func handleTokenCreate(tok *tokens, svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		req, err := decodeOptional[createTokenRequest](r)
		if err != nil {
			return err
		}
		// A token for a user who does not exist would be a token for
		// whoever is later created with that id. The generation comes from
		// SQL, so a token minted after a revocation outlives it.
		gen, err := svc.CurrentTokenGeneration(r.Context(), id)
		if err != nil {
			return err
		}
		token, exp, err := tok.issue(id, gen, req.ttl())
		if err != nil {
			return err
		}
		encode(w, http.StatusCreated, tokenJSON{Token: token, ExpiresAt: apijson.Time(exp)})
		return nil
	})
}

// handleTokensRevoke refuses every token minted for a user before the
// call, on every process within a second; tokens minted after it work.
func handleTokensRevoke(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		if err := svc.RevokeTokens(r.Context(), id); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

func handleUserGet(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		if err := notBlocked(r.Context(), svc, id); err != nil {
			return err
		}
		u, err := svc.User(r.Context(), id)
		if err != nil {
			return userError(r, svc, id, err)
		}
		encode(w, http.StatusOK, apijson.NewUser(u))
		return nil
	})
}

// userLister is Timeline.Followers or Timeline.Following as a method
// expression, so that choosing one does not touch a Timeline value.
type userLister func(svc Timeline, ctx context.Context, user, after int64, n int) ([]feed.User, bool, error)

func handleFollowers(svc Timeline) http.Handler { return handleUserList(svc, Timeline.Followers) }
func handleFollowing(svc Timeline) http.Handler { return handleUserList(svc, Timeline.Following) }

func handleUserList(svc Timeline, list userLister) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		if err := notBlocked(r.Context(), svc, id); err != nil {
			return err
		}
		return writeUserPage(w, r, svc, list, id)
	})
}

// writeUserPage answers with the page of user's list the query asks for.
func writeUserPage(w http.ResponseWriter, r *http.Request, svc Timeline, list userLister, user int64) error {
	after, limit, err := pageQuery(r, feed.CursorUsers)
	if err != nil {
		return err
	}
	users, more, err := list(svc, r.Context(), user, after, limit)
	if err != nil {
		return err
	}
	encode(w, http.StatusOK, apijson.NewPage(users, more, feed.CursorUsers,
		func(u feed.User) int64 { return u.ID },
		func(u feed.User) (apijson.User, bool) { return apijson.NewUser(u), true }))
	return nil
}

func handleFollow(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		req, err := decodeOptional[followRequest](r)
		if err != nil {
			return err
		}
		if err := svc.FollowShowing(r.Context(), me, id, req.Reposts); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

func handleUnfollow(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		me, id, err := actingUserAndID(r)
		if err != nil {
			return err
		}
		// Unfollowing oneself is left to the service: it is idempotent,
		// and there is nothing to undo.
		if err := svc.Unfollow(r.Context(), me, id); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}
