package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/feedd/feedd/internal/feed"
)

// Page sizes.
const (
	defaultLimit = 20
	maxLimit     = 100
)

// pathID parses the {id} path segment of a user (or job): a positive id.
func pathID(r *http.Request) (int64, error) {
	return feed.ParseID(r.PathValue("id"))
}

// pathPostID parses the {id} path segment of a post, which is negative
// for a post from before 2025 (feed.ParsePostID).
func pathPostID(r *http.Request) (int64, error) {
	return feed.ParsePostID(r.PathValue("id"))
}

// query parses the query string strictly: a malformed one (a bad escape
// such as %zz, or a ';' separator) is an error, where r.URL.Query() would
// drop the pair without a word and serve a page the client did not ask for.
func query(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, feed.Errorf(feed.EINVALID, "the query string cannot be parsed: %s", err)
	}
	return q, nil
}

// param returns the query parameter name, "" when absent. A parameter
// given twice is an error: which of the two was meant cannot be known.
func param(q url.Values, name string) (string, error) {
	if v := q[name]; len(v) > 1 {
		return "", feed.Errorf(feed.EINVALID, "%s must be given at most once", name)
	}
	return q.Get(name), nil
}

// pageQuery reads ?cursor= (of kind) and ?limit= (default 20, 1..100).
func pageQuery(r *http.Request, kind byte) (pos int64, limit int, err error) {
	limit, cursor, err := limitAnd(r, "cursor")
	if err != nil {
		return 0, 0, err
	}
	pos, err = feed.DecodeCursor(kind, cursor)
	if err != nil {
		return 0, 0, err
	}
	return pos, limit, nil
}

// limitAnd reads ?limit= (default 20, 1..100) and the parameter name
// ("" when absent) from a query string that parses.
func limitAnd(r *http.Request, name string) (limit int, value string, err error) {
	q, err := query(r)
	if err != nil {
		return 0, "", err
	}
	if limit, err = pageLimit(q); err != nil {
		return 0, "", err
	}
	value, err = param(q, name)
	return limit, value, err
}

// pageLimit reads ?limit= (default 20, 1..100).
func pageLimit(q url.Values) (int, error) {
	if !q.Has("limit") {
		return defaultLimit, nil
	}
	s, err := param(q, "limit")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	// Digits only: no sign, no spaces, no exponent.
	if err != nil || strings.Trim(s, "0123456789") != "" || n < 1 || n > maxLimit {
		return 0, feed.Errorf(feed.EINVALID, "limit must be an integer from 1 to %d", maxLimit)
	}
	return n, nil
}

// idempotencyKey returns the Idempotency-Key header, "" when absent. A
// header that is sent must be a usable key: an empty or repeated one would
// silently turn retries into duplicates.
func idempotencyKey(r *http.Request) (string, error) {
	values := r.Header.Values("Idempotency-Key")
	if len(values) == 0 {
		return "", nil
	}
	key := values[0]
	if len(values) > 1 || !feed.ValidIdempotencyKey(key) {
		return "", feed.Errorf(feed.EINVALID, "Idempotency-Key must be one header of 1 to %d printable ASCII characters", feed.MaxIdempotencyKey)
	}
	return key, nil
}
