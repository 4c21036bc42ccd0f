package feed

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxNameRunes bounds a user's name.
const MaxNameRunes = 64

// CheckContent returns an EINVALID error saying why content cannot be a
// post's, or nil: valid UTF-8, at most MaxContentRunes characters, no
// control character but tab, line feed and carriage return, and at least
// one visible character (see visible). The API checks a request with it
// as it decodes it (one layer), feedd import each line.
func CheckContent(content string) error {
	return checkText(content, textRule{field: "content", max: MaxContentRunes, multiline: true})
}

// CheckNotSelf refuses a relation of a user to themselves: following,
// muting or blocking oneself (verb says which). It is the one check and
// the one sentence for every layer and entry point that meets such a pair.
func CheckNotSelf(verb string, user, target int64) error {
	if user == target {
		return Errorf(EINVALID, "a user cannot %s themselves", verb)
	}
	return nil
}

// CheckName is CheckContent's rule for a user's name, which is one line
// shown beside everything its user does: no control character at all, no
// format character (see nameFormat), and at most MaxNameRunes characters.
func CheckName(name string) error {
	return checkText(name, textRule{field: "name", max: MaxNameRunes, noFormat: true})
}

// textRule is what checkText holds a text to.
type textRule struct {
	field     string
	max       int  // characters
	multiline bool // tab, line feed and carriage return allowed
	noFormat  bool // format characters refused (nameFormat)
}

func checkText(s string, rule textRule) error {
	field := rule.field
	if s == "" {
		return Errorf(EINVALID, "%s is required", field)
	}
	// One pass: this runs on every post, in the API and in the service.
	n, seen := 0, false
	var format rune // the first format character of a text that may hold none
	for i, r := range s {
		n++
		if r == utf8.RuneError { // an invalid byte, or a real U+FFFD
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return Errorf(EINVALID, "%s must be valid UTF-8", field)
			}
		}
		// unicode.IsControl is category Cc: C0, DEL and C1. DEL and C1
		// are refused along with C0 because no keyboard types them and
		// some (U+009B, a terminal's CSI) act on whatever later prints
		// the text.
		if unicode.IsControl(r) && !(rule.multiline && (r == '\t' || r == '\n' || r == '\r')) {
			if rule.multiline {
				return Errorf(EINVALID, "%s must not contain the control character %U: of the controls only tab, line feed and carriage return are allowed", field, r)
			}
			return Errorf(EINVALID, "%s must not contain the control character %U: it is one line of text", field, r)
		}
		if format == 0 && rule.noFormat && nameFormat(r) {
			format = r
		}
		if !seen {
			seen = visible(r)
		}
	}
	if n > rule.max {
		return Errorf(EINVALID, "%s must be at most %d characters", field, rule.max)
	}
	if !seen {
		return Errorf(EINVALID, "%s must have at least one visible character, not only spaces, line breaks, combining marks or invisible characters such as U+200B", field)
	}
	if format != 0 {
		return Errorf(EINVALID, "%s must not contain the format character %U: direction overrides and other invisible characters could disguise it", field, format)
	}
	return nil
}

// visible reports whether r shows as something on its own: it is not
// white space (Zs, Zl, Zp and the White_Space controls), a control (Cc), a
// format character (Cf: U+200B, U+200D, U+2060, U+FEFF, bidi marks…), a
// combining mark (M: U+0301 alone is an accent over nothing), a variation
// selector, one of the other code points Unicode says to render as
// nothing (Other_Default_Ignorable_Code_Point: the Hangul fillers such as
// U+3164, which are letters by category), or the blank braille pattern
// U+2800, a symbol by category that prints as a space. Unicode's tables
// decide the rest, so a new invisible character arrives with Go's next
// Unicode version.
func visible(r rune) bool {
	return r != brailleBlank && !unicode.IsSpace(r) && !unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Cc, unicode.Cf,
		unicode.M, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

const brailleBlank = '\u2800'

// nameFormat reports whether r is a format character (Cf) a name may not
// hold: the bidi embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069), which make a name read as another ("evil\u202Egnp.exe")
// and run on into what is shown after it, and the other invisible ones
// (U+200B, U+2060, U+FEFF, U+00AD, the tag characters…), which make two
// names that look alike differ. The zero-width non-joiner and joiner
// (U+200C, U+200D) stay: Persian and Indic scripts and emoji sequences
// (👩‍💻) need them.
func nameFormat(r rune) bool {
	return r != '\u200c' && r != '\u200d' && unicode.Is(unicode.Cf, r)
}

// MaxExternalIDBytes bounds a post's external id, in bytes of UTF-8: what
// the posts table's external_id column holds (VARBINARY(255) on MySQL).
const MaxExternalIDBytes = 255

// CheckExternalID returns an EINVALID error saying why id cannot be a
// post's external id, or nil: 1 to MaxExternalIDBytes bytes of valid
// UTF-8, no control character, at least one visible character. It is
// compared byte for byte: "Blog-1", "blog-1" and "blog-1 " are three ids.
func CheckExternalID(id string) error {
	if len(id) > MaxExternalIDBytes {
		return Errorf(EINVALID, "external_id must be at most %d bytes of UTF-8, not %d", MaxExternalIDBytes, len(id))
	}
	// checkText's own bound counts characters; the bytes were counted above.
	return checkText(id, textRule{field: "external_id", max: MaxExternalIDBytes})
}

// MaxIdempotencyKey bounds an idempotency key, in bytes. A key is printable
// ASCII (as the IETF Idempotency-Key header draft has it), so bytes and
// characters are the same count; counting bytes means a valid key fits
// the idempotency table's 255-character column whatever the column's
// character set.
const MaxIdempotencyKey = 255

// Idempotency makes a create request safe to retry, as the IETF
// Idempotency-Key header draft and Stripe have it. The first request with
// Key (per user) is carried out and recorded with Fingerprint; until TTL
// has passed, a repeat with the same fingerprint gets the first one's
// result, a repeat with another fingerprint is EKEYREUSED, and a repeat
// after the result was deleted is ENOTFOUND. After TTL the key is new
// again. An empty Key makes the request an ordinary one.
type Idempotency struct {
	Key string
	// Fingerprint is the SHA-256 of the request's canonical form: two
	// requests that mean the same have the same one, whatever their
	// bytes (the API hashes the decoded body).
	Fingerprint []byte
	// TTL is how long the key is kept, fixed when it is first used: the
	// service sets it from its configuration.
	TTL time.Duration
}

// FingerprintSize is the length of Idempotency.Fingerprint.
const FingerprintSize = sha256.Size

// Check returns an EINVALID error unless i is empty or complete: a valid
// key, a fingerprint of FingerprintSize bytes and a positive TTL.
func (i Idempotency) Check() error {
	switch {
	case i.Key == "":
		return nil
	case !ValidIdempotencyKey(i.Key):
		return Errorf(EINVALID, "an idempotency key is 1 to %d printable ASCII characters", MaxIdempotencyKey)
	case len(i.Fingerprint) != FingerprintSize:
		return Errorf(EINVALID, "an idempotency fingerprint is %d bytes, not %d", FingerprintSize, len(i.Fingerprint))
	case i.TTL <= 0:
		return Errorf(EINVALID, "an idempotency key must be kept for a positive time, not %s", i.TTL)
	}
	return nil
}

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
