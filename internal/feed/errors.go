package feed

import (
	"errors"
	"fmt"
)

// Error codes. The HTTP layer maps each to one status in one table.
const (
	EINVALID      = "invalid"            // bad input: 400
	EUNAUTHORIZED = "unauthorized"       // missing or bad credentials: 401
	EFORBIDDEN    = "forbidden"          // authenticated but not allowed: 403
	EBLOCKED      = "blocked"            // a block between the two users forbids it: 403
	ENOTFOUND     = "not_found"          // unknown or deleted entity: 404
	ECONFLICT     = "conflict"           // already exists: 409
	EDELETING     = "user_being_deleted" // the user's purge is not done yet: 409
	ETOOLARGE     = "too_large"          // body over the limit: 413
	ERATELIMIT    = "rate_limited"       // 429
	EUNAVAILABLE  = "unavailable"        // a backend is down or shedding load: 503
	EINTERNAL     = "internal"           // anything else: 500, detail only in the log

	// An idempotency key sent again with a different request: 422.
	EKEYREUSED = "idempotency_key_reused"
	// An idempotency key whose first request has not finished: 409, retry.
	EKEYINFLIGHT = "idempotency_key_in_flight"
	// A follow batch of more pairs than MaxFollowBatch: 400.
	EBATCHTOOLARGE = "batch_too_large"
	// A post whose external id its author already used: 409, with the
	// existing post's id (ExternalIDExistsError).
	EEXTERNALID = "external_id_exists"
	// More lists, or list members, than a user may have: 400.
	ELIMIT = "limit_reached"
	// A ranked feed's cursor whose snapshot expired (or was lost with the
	// cache): 410; the client reloads the first page.
	ECURSOREXPIRED = "cursor_expired"
	// A handle another user holds (CheckHandle): 409.
	EHANDLETAKEN = "handle_taken"
)

// Error is a domain error: a code for machines and a sentence for people.
// Wrap it with fmt.Errorf("...: %w", err) freely; ErrorCode finds it.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("feed: %s: %s", e.Code, e.Message) }

// Errorf returns a domain error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first domain error in err's chain,
// EINTERNAL for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the human message of a domain error, and a generic
// sentence for internal errors so that details never reach a client.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ExternalIDExistsError is the EEXTERNALID error: the author already has
// post PostID with this external id. It carries the id so that a client
// (or an import run again) can go on with the post it made before, as
// errors.As finds it through any wrapping.
type ExternalIDExistsError struct {
	PostID     int64
	ExternalID string
}

func (e *ExternalIDExistsError) Error() string { return e.domain().Error() }

// Unwrap makes ErrorCode and ErrorMessage see the domain error.
func (e *ExternalIDExistsError) Unwrap() error { return e.domain() }

func (e *ExternalIDExistsError) domain() *Error {
	return Errorf(EEXTERNALID, "you already have post %d with external id %q", e.PostID, e.ExternalID)
}
