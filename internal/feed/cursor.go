package feed

import (
	"encoding/base64"
	"encoding/binary"
)

// A cursor is an opaque, URL-safe token naming the last item a page
// returned; the next page starts strictly after it. Because ids are unique
// and totally ordered, one id is an exact position even when many posts
// share a millisecond or new posts arrive between pages.
//
// Layout: version byte, kind byte, uvarint position; base64url without
// padding. The kind stops a follower-list cursor from paging a feed.
// Version 1 holds a position above 0, version 2 the negative id of a post
// from before 2025 (feed cursors only) as the uvarint of its magnitude:
// every cursor made before history existed keeps its spelling and its
// meaning, and each position has exactly one cursor.
const (
	cursorVersion    = 1
	cursorVersionNeg = 2
)

// Cursor kinds.
const (
	CursorFeed  byte = 'f' // home feed and author posts: position is a post id; next page has ids below it
	CursorUsers byte = 'u' // follower / following lists: position is a user id; next page has ids above it
	// CursorRanked is a ranked feed's: position is a snapshot and an index
	// in it (package ranked).
	CursorRanked byte = 'r'
	// CursorReplies pages a post's replies, oldest first: position is
	// the last reply id seen; the next page has ids above it.
	CursorReplies byte = 'p'
	// CursorNotices is a notifications page's: position is a group's id
	// (its newest notification's); the next page has groups below it.
	CursorNotices byte = 'n'
)

// EncodeCursor renders a position of the given kind.
func EncodeCursor(kind byte, pos int64) string {
	buf := make([]byte, 2, 2+binary.MaxVarintLen64)
	buf[0], buf[1] = cursorVersion, kind
	mag := uint64(pos)
	if pos < 0 {
		buf[0], mag = cursorVersionNeg, -mag
	}
	buf = binary.AppendUvarint(buf, mag)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// DecodeCursor parses a cursor of the given kind. The empty string is the
// start (position 0). Anything else that is not a cursor of this kind is
// an EINVALID error: a negative position is a feed cursor's only, at or
// above MinID.
func DecodeCursor(kind byte, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	bad := Errorf(EINVALID, "cursor is not valid: pass back next_cursor exactly as a previous page returned it")
	if len(s) > 32 {
		return 0, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 3 || raw[1] != kind {
		return 0, bad
	}
	mag, n := binary.Uvarint(raw[2:])
	if n <= 0 || 2+n != len(raw) || mag == 0 {
		return 0, bad
	}
	var pos int64
	switch {
	case raw[0] == cursorVersion && mag <= 1<<63-1:
		pos = int64(mag)
	case raw[0] == cursorVersionNeg && kind == CursorFeed && mag <= -MinID:
		pos = -int64(mag)
	default:
		return 0, bad
	}
	// One position, one cursor: base64 with stray trailing bits ("AWa0A0"
	// for "AWa0Aw", found by FuzzDecodeCursor) or an over-long varint would
	// otherwise be accepted as another spelling of the same cursor.
	if EncodeCursor(kind, pos) != s {
		return 0, bad
	}
	return pos, nil
}
