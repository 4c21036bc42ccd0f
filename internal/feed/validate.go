package feed

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// CheckContent returns an EINVALID error saying why content cannot be a
// post's, or nil: it must hold something besides whitespace, be valid
// UTF-8, and have at most MaxContentRunes characters. The API and the
// service both check with it, so a client hears the same sentence
// whichever layer refuses.
func CheckContent(content string) error {
	if strings.TrimSpace(content) == "" {
		return Errorf(EINVALID, "content is required and must not be only whitespace")
	}
	if utf8.RuneCountInString(content) > MaxContentRunes {
		return Errorf(EINVALID, "content must be at most %d characters", MaxContentRunes)
	}
	if !utf8.ValidString(content) {
		return Errorf(EINVALID, "content must be valid UTF-8")
	}
	return nil
}

// MaxIdempotencyKey bounds an idempotency key, in bytes. A key is printable
// ASCII (as the IETF Idempotency-Key header draft has it), so bytes and
// characters are the same count; counting bytes means a valid key fits
// the idempotency table's 255-character column whatever the column's
// character set.
const MaxIdempotencyKey = 255

// ValidIdempotencyKey reports whether key can be an idempotency key: 1 to
// MaxIdempotencyKey printable ASCII characters. The API checks the header
// with it before any write; the store checks every key it records.
func ValidIdempotencyKey(key string) bool {
	if len(key) < 1 || len(key) > MaxIdempotencyKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// CheckData validates a post's data as a client sent it and returns it
// compacted, which is how it is stored and served: byte for byte the
// same on every page. It must be a JSON object of at most MaxDataBytes
// once compacted, nesting at most MaxDataDepth deep, and valid UTF-8.
// Anything else is EINVALID. The store keeps the compacted bytes, so two
// requests that differ only in whitespace store the same data.
func CheckData(raw json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", Errorf(EINVALID, "data must be a JSON object")
	}
	data := b.Bytes()
	if len(data) == 0 || data[0] != '{' {
		return "", Errorf(EINVALID, "data must be a JSON object, not %s", jsonKindOf(data))
	}
	if len(data) > MaxDataBytes {
		return "", Errorf(EINVALID, "data must be at most %d bytes as compact JSON, not %d", MaxDataBytes, len(data))
	}
	if !utf8.Valid(data) {
		return "", Errorf(EINVALID, "data must be valid UTF-8")
	}
	if d := jsonDepth(data); d > MaxDataDepth {
		return "", Errorf(EINVALID, "data must nest at most %d objects or arrays deep, not %d", MaxDataDepth, d)
	}
	return string(data), nil
}

// jsonKindOf names the kind of a compact JSON value by its first byte.
func jsonKindOf(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonDepth returns how deeply the objects and arrays of a valid, compact
// JSON value nest.
func jsonDepth(v []byte) int {
	depth, deepest := 0, 0
	inString := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inString && c == '\\':
			i++ // the escaped byte cannot end the string
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
