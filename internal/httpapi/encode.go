package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
)

const contentTypeJSON = "application/json; charset=utf-8"

// bodies recycles the buffers responses are marshalled into: a page of
// posts is a few KB, and every feed read writes one.
var bodies = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 8192)) }}

// maxPooledBody is the largest buffer kept in bodies.
const maxPooledBody = 1 << 20

// encode writes v as JSON with status. It marshals before writing a byte, so
// a value that cannot be encoded becomes a clean 500 instead of half a body,
// and so the response carries a Content-Length: net/http would otherwise
// send a body over 2 KB (a page of posts) chunked, which costs the server a
// second write, with the terminating chunk, and the client a second wake-up.
func encode[T any](w http.ResponseWriter, status int, v T) {
	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody { // a rare huge body is left to the GC
			bodies.Put(buf)
		}
	}()
	buf.Reset()
	if err := marshal(buf, v); err != nil {
		noteError(w, fmt.Errorf("httpapi: encode %T: %w", v, err))
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"code":"internal","message":"internal error"}}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", contentTypeJSON)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	// A failed write means the client went away; there is no one to tell.
}

// marshal appends v's JSON and a newline to buf: through its own AppendJSON
// when it has one (pages, written on every read), else encoding/json.
func marshal(buf *bytes.Buffer, v any) error {
	if a, ok := v.(apijson.Appender); ok {
		// Appended in buf's spare capacity, so the Write that takes it
		// in allocates nothing (bytes.Buffer.AvailableBuffer's idiom).
		buf.Write(append(a.AppendJSON(buf.AvailableBuffer()), '\n'))
		return nil
	}
	return json.NewEncoder(buf).Encode(v)
}

// validator is a request body that checks itself after decoding.
type validator interface {
	valid() error
}

// decode reads exactly one JSON object into a T and validates it. Invalid
// UTF-8, unknown fields (matched case-sensitively), keys repeated in an
// object, wrong types, trailing data and bodies over the limit (set by the
// middleware's http.MaxBytesReader) are errors with the domain's codes.
func decode[T validator](r *http.Request) (T, error) {
	var v T
	body, err := readBody(r)
	if err != nil {
		return v, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return v, feed.Errorf(feed.EINVALID, "the request body is empty: send a JSON object")
	}
	return v, decodeBytes(body, &v)
}

// decodeOptional is decode for routes whose body may be left out: an empty
// body yields the zero T, which must then be valid.
func decodeOptional[T validator](r *http.Request) (T, error) {
	var v T
	body, err := readBody(r)
	if err != nil {
		return v, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return v, v.valid()
	}
	return v, decodeBytes(body, &v)
}

// fingerprint is the SHA-256 of req's canonical JSON: the decoded request
// encoded again, object keys sorted, no insignificant whitespace. Bodies
// that decode to the same request have the same fingerprint whatever
// their key order, spacing or escapes (an idempotency key's promise), and
// a field added to the request type is covered without more code.
func fingerprint(req any) ([]byte, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("httpapi: fingerprint %T: %w", req, err)
	}
	// Once more through a generic value, so that the keys of any map or
	// raw JSON inside req are sorted too. Numbers keep their digits:
	// 1.0 and 1 stay two requests rather than risk 2^53+1 = 2^53.
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("httpapi: fingerprint %T: %w", req, err)
	}
	if b, err = json.Marshal(v); err != nil {
		return nil, fmt.Errorf("httpapi: fingerprint %T: %w", req, err)
	}
	sum := sha256.Sum256(b)
	return sum[:], nil
}

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, feed.Errorf(feed.ETOOLARGE, "the request body is larger than %d bytes", tooLarge.Limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The middleware's read deadline passed before the body was in.
		return nil, feed.Errorf(codeRequestTimeout, "the request body did not arrive in time; send it with the headers")
	}
	if err != nil {
		// The client stopped sending; whatever it sent is not a request.
		return nil, feed.Errorf(feed.EINVALID, "the request body could not be read")
	}
	return body, nil
}

func decodeBytes[T validator](body []byte, v *T) error {
	// encoding/json would turn invalid UTF-8 into U+FFFD without a word.
	if !utf8.Valid(body) {
		return feed.Errorf(feed.EINVALID, "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return feed.Errorf(feed.EINVALID, "the request body has data after the JSON object")
	}
	if err := checkKeys(body, schemaOf(reflect.TypeFor[T]())); err != nil {
		return err
	}
	return (*v).valid()
}

// jsonError turns a decoding error into a sentence a client can act on,
// without Go type names.
func jsonError(err error) error {
	var (
		domain *feed.Error
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &domain):
		return err // from an UnmarshalJSON of ours
	case errors.As(err, &syntax):
		return feed.Errorf(feed.EINVALID, "the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return feed.Errorf(feed.EINVALID, "the request body must be a JSON object, not %s", typ.Value)
	case errors.As(err, &typ):
		return feed.Errorf(feed.EINVALID, "field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return feed.Errorf(feed.EINVALID, "the request body is not valid JSON: it ends too early")
	default:
		// What remains is encoding/json's own sentences, such as
		// `json: unknown field "x"`, which read well as they are.
		return feed.Errorf(feed.EINVALID, "the request body is not valid: %s", bytes.TrimPrefix([]byte(err.Error()), []byte("json: ")))
	}
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// jsonID is a user's id in a request body: a decimal string as responses
// carry it, or a plain JSON number for clients that have one. null means
// absent.
type jsonID int64

func (id *jsonID) UnmarshalJSON(b []byte) error {
	v, err := unmarshalID(b, feed.ParseID)
	*id = jsonID(v)
	return err
}

// jsonPostID is jsonID for a post's id, which is negative for a post
// from before 2025 (feed.ParsePostID).
type jsonPostID int64

func (id *jsonPostID) UnmarshalJSON(b []byte) error {
	v, err := unmarshalID(b, feed.ParsePostID)
	*id = jsonPostID(v)
	return err
}

// unmarshalID parses a JSON id with parse; null is 0, absent.
func unmarshalID(b []byte, parse func(string) (int64, error)) (int64, error) {
	s := string(b)
	if s == "null" {
		return 0, nil
	}
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, feed.Errorf(feed.EINVALID, "id is not a valid JSON string")
		}
	}
	return parse(s)
}
