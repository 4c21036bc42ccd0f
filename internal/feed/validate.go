package feed

import (
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
