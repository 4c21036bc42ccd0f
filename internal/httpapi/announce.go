package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/feedd/feedd/internal/stream"
)

// announceTimeout bounds telling the streams of a change the client
// already has its answer for.
const announceTimeout = 2 * time.Second

// announcing runs h and, when it succeeded, tells the streams: a follow,
// unfollow, mute or unmute ('f': the reader's streams read their authors
// and hidden authors again), a block or unblock ('b': both users'
// streams do), or a delete ('d': streams that sent the post send its
// delete).
func announcing(lv *Live, what byte, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if sw := findStatusWriter(w); sw == nil || sw.status < 200 || sw.status > 299 {
			return
		}
		parse := actingUserAndID
		if what == 'd' {
			parse = actingUserAndPostID
		}
		me, id, err := parse(r)
		if err != nil {
			return
		}
		announce(w, r, lv, func(ctx context.Context, a *stream.Announcer) error {
			switch what {
			case 'd':
				return a.PostDeleted(ctx, me, id)
			case 'b':
				// A block hides each from the other's feed: both
				// readers' streams read their hidden authors again.
				if err := a.FollowsChanged(ctx, id); err != nil {
					return err
				}
			}
			return a.FollowsChanged(ctx, me)
		})
	})
}

// announce tells the streams of a change already made and answered, within
// announceTimeout, even if the client has gone.
func announce(w http.ResponseWriter, r *http.Request, lv *Live, tell func(context.Context, *stream.Announcer) error) {
	if lv == nil || lv.Announce == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), announceTimeout)
	defer cancel()
	if err := tell(ctx, lv.Announce); err != nil {
		// The change is made; open streams learn of it late (a
		// reconnect reads the feed afresh). The request log says so.
		noteError(w, fmt.Errorf("httpapi: announce to the live streams: %w", err))
	}
}
