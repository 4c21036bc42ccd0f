package feed

import (
	"crypto/sha256"
	"strings"
	"time"
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
