package httpapi

import (
	"net/http"

	"github.com/feedd/feedd/internal/export"
	"github.com/feedd/feedd/internal/feed"
)

// handleUserExport streams everything feedd holds about a user, to the
// admin or to the user; another user's token is 403, as any route that
// touches what only its owner may.
func handleUserExport(svc Timeline) http.Handler {
	return handler(func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r)
		if err != nil {
			return err
		}
		if p, _ := r.Context().Value(principalKey{}).(principal); !p.admin && p.user != id {
			return feed.Errorf(feed.EFORBIDDEN, "a user token may export only its own user's data")
		}
		out := &startOnWrite{w: w}
		err = svc.Export(r.Context(), id, out)
		switch {
		case err == nil:
			if !out.started { // nothing was written: still a document
				out.start()
			}
			return nil
		case !out.started:
			return userError(r, svc, id, err)
		default:
			// The status is sent: cut the response off before its last
			// chunk, so that the client sees it incomplete rather than
			// taking part of an export for all of it.
			noteError(w, err)
			panic(http.ErrAbortHandler)
		}
	})
}

// startOnWrite sends the export's status and headers with its first
// bytes, so that an error before any (an unknown user) can still be an
// error answer.
type startOnWrite struct {
	w       http.ResponseWriter
	started bool
}

func (s *startOnWrite) start() {
	s.started = true
	s.w.Header().Set("Content-Type", export.ContentType)
	s.w.Header().Set("Cache-Control", "no-store")
	s.w.WriteHeader(http.StatusOK)
}

func (s *startOnWrite) Write(b []byte) (int, error) {
	if !s.started {
		s.start()
	}
	return s.w.Write(b)
}

// Flush sends what the server buffered to the client.
func (s *startOnWrite) Flush() { _ = http.NewResponseController(s.w).Flush() }
