package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// The API's error codes, as Error.Code carries them.
const (
	CodeInvalid                = "invalid"                   // 400: bad input
	CodeBatchTooLarge          = "batch_too_large"           // 400: a follow batch of more than 1,000 pairs
	CodeLimitReached           = "limit_reached"             // 400: 100 lists a user, 5,000 members a list
	CodeUnauthorized           = "unauthorized"              // 401: missing, bad or revoked token
	CodeForbidden              = "forbidden"                 // 403: not allowed
	CodeBlocked                = "blocked"                   // 403: a block between the two users forbids it
	CodeNotFound               = "not_found"                 // 404: unknown or deleted
	CodeMethodNotAllowed       = "method_not_allowed"        // 405
	CodeRequestTimeout         = "request_timeout"           // 408: the body came too slowly
	CodeConflict               = "conflict"                  // 409: already exists
	CodeUserBeingDeleted       = "user_being_deleted"        // 409: the id's deleted user is being purged
	CodeExternalIDExists       = "external_id_exists"        // 409: the author already has a post with this external id
	CodeHandleTaken            = "handle_taken"              // 409: another user holds the handle, whatever its case
	CodeIdempotencyKeyInFlight = "idempotency_key_in_flight" // 409: the key's first request is not done; retried
	CodeTooLarge               = "too_large"                 // 413
	CodeCursorExpired          = "cursor_expired"            // 410: a ranked feed's snapshot expired: read its first page again
	CodeIdempotencyKeyReused   = "idempotency_key_reused"    // 422: the key was used with another body
	CodeRateLimited            = "rate_limited"              // 429; retried after Retry-After
	CodeInternal               = "internal"                  // 500
	CodeUnavailable            = "unavailable"               // 503; retried after Retry-After
)

// Error is an answer of the API outside 2xx: its status and the body's
// {"error":{"code","message",…}}. Match it with errors.As:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Code == client.CodeNotFound { … }
type Error struct {
	Status  int
	Code    string
	Message string
	// RetryAfter is the answer's Retry-After (0 when absent).
	RetryAfter time.Duration
	// Details holds the error object's other fields, undecoded: "purge" on
	// the 404 of a deleted user, the existing post on external_id_exists.
	Details map[string]json.RawMessage
	// Method and Path name the request that failed.
	Method, Path string
	body         []byte // the whole answer, for calls whose errors carry more (Ready)
}

func (e *Error) Error() string {
	return fmt.Sprintf("client: %s %s: %d %s: %s", e.Method, e.Path, e.Status, e.Code, e.Message)
}

// ErrorCode returns the API's code of err when err is an *Error, else "".
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Purge is how far the purge of a deleted user is, from the 404 that
// GetUser answers for them: Status "running" or "done", and the job's id.
func (e *Error) Purge() (status string, job ID, ok bool) {
	raw, found := e.Details["purge"]
	if !found {
		return "", 0, false
	}
	var p struct {
		Status string `json:"status"`
		Job    ID     `json:"job"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return "", 0, false
	}
	return p.Status, p.Job, true
}

// ExistingPostID is, on external_id_exists, the id of the author's post
// that already has the external id (the detail "post_id").
func (e *Error) ExistingPostID() (ID, bool) {
	return e.DetailID("post_id")
}

// DetailID reads the detail name as an id.
func (e *Error) DetailID(name string) (ID, bool) {
	raw, found := e.Details[name]
	if !found {
		return 0, false
	}
	var id ID
	if json.Unmarshal(raw, &id) != nil {
		return 0, false
	}
	return id, true
}

// parseError builds the *Error of a non-2xx answer from its body; a body
// that is no API error (a proxy's HTML page) leaves the code empty and
// quotes the start of the body as the message.
func parseError(method, path string, res *http.Response, body []byte) *Error {
	e := &Error{Status: res.StatusCode, Method: method, Path: path, RetryAfter: retryAfter(res.Header, time.Now())}
	var env struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil {
		_ = json.Unmarshal(env.Error["code"], &e.Code)
		_ = json.Unmarshal(env.Error["message"], &e.Message)
		delete(env.Error, "code")
		delete(env.Error, "message")
		if len(env.Error) > 0 {
			e.Details = env.Error
		}
		return e
	}
	e.Message = http.StatusText(res.StatusCode)
	if len(body) > 0 {
		e.Message = string(body[:min(len(body), 200)])
	}
	return e
}
