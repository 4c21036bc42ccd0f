package httpapi

import (
	"errors"
	"net/http"

	"github.com/feedd/feedd/internal/feed"
)

// statusByCode is the one place a domain error code becomes an HTTP status.
var statusByCode = map[string]int{
	feed.EINVALID:       http.StatusBadRequest,
	feed.EUNAUTHORIZED:  http.StatusUnauthorized,
	feed.EFORBIDDEN:     http.StatusForbidden,
	feed.EBLOCKED:       http.StatusForbidden,
	feed.ENOTFOUND:      http.StatusNotFound,
	feed.ECONFLICT:      http.StatusConflict,
	feed.EDELETING:      http.StatusConflict,
	feed.ETOOLARGE:      http.StatusRequestEntityTooLarge,
	codeRequestTimeout:  http.StatusRequestTimeout,
	feed.ERATELIMIT:     http.StatusTooManyRequests,
	feed.EUNAVAILABLE:   http.StatusServiceUnavailable,
	feed.EINTERNAL:      http.StatusInternalServerError,
	feed.EKEYREUSED:     http.StatusUnprocessableEntity,
	feed.EKEYINFLIGHT:   http.StatusConflict,
	feed.EBATCHTOOLARGE: http.StatusBadRequest,
	feed.EEXTERNALID:    http.StatusConflict,
	feed.ECURSOREXPIRED: http.StatusGone,
	feed.ELIMIT:         http.StatusBadRequest,
	feed.EHANDLETAKEN:   http.StatusConflict,
}

// The error codes that are no domain codes: only the router can get a
// method wrong, and only the edge waits for a body.
const (
	codeMethodNotAllowed = "method_not_allowed"
	codeRequestTimeout   = "request_timeout"
)

type errorJSON struct {
	Error errorDetailJSON `json:"error"`
}

type errorDetailJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Purge is set on the 404 of a deleted user (purgeError).
	Purge *purgeStateJSON `json:"purge,omitempty"`
	// PostID is set on external_id_exists: the id of the author's post
	// that has the external id already.
	PostID string `json:"post_id,omitempty"`
}

// handler is an API handler that returns its error instead of answering
// it: ServeHTTP writes the error body, so that a handler reads as its
// happy path and every failure is answered the same way.
type handler func(w http.ResponseWriter, r *http.Request) error

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		respondError(w, err)
	}
}

// respondError writes err as the error body. Domain errors keep their code
// and sentence; anything else, and any code the table does not know,
// becomes "internal error" for the client while the request log gets the
// detail.
func respondError(w http.ResponseWriter, err error) {
	noteError(w, err)
	code, msg := feed.ErrorCode(err), feed.ErrorMessage(err)
	status, ok := statusByCode[code]
	if !ok || code == feed.EINTERNAL {
		code, status, msg = feed.EINTERNAL, http.StatusInternalServerError, "internal error"
	}
	var pe purgeError
	if errors.As(err, &pe) && status == http.StatusNotFound {
		encode(w, status, errorJSON{Error: errorDetailJSON{Code: code, Message: msg,
			Purge: &purgeStateJSON{Status: pe.status, Job: pe.job}}})
		return
	}
	var xe *feed.ExternalIDExistsError
	if errors.As(err, &xe) && code == feed.EEXTERNALID {
		encode(w, status, errorJSON{Error: errorDetailJSON{Code: code, Message: msg, PostID: feed.FormatID(xe.PostID)}})
		return
	}
	writeError(w, status, code, msg)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	if (status == http.StatusServiceUnavailable || code == feed.EKEYINFLIGHT) && w.Header().Get("Retry-After") == "" {
		// A backend is down or a breaker is open, or the first request
		// with this idempotency key is not done: come back shortly.
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusRequestTimeout {
		// What is left of a late body may still arrive; it must not be
		// read as the next request, nor waited for.
		w.Header().Set("Connection", "close")
	}
	encode(w, status, errorJSON{Error: errorDetailJSON{Code: code, Message: msg}})
}
