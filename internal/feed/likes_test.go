package feed

import "testing"

func TestLikerCursor(t *testing.T) {
	for _, tc := range [][2]int64{{1, 1}, {1_763_800_000_000_000, 42}, {1<<53 - 1, 1<<63 - 1}} {
		c := EncodeLikerCursor(tc[0], tc[1])
		v, u, err := DecodeLikerCursor(c)
		if err != nil || v != tc[0] || u != tc[1] {
			t.Errorf("round trip of %v = %d, %d, %v", tc, v, u, err)
		}
	}
	if v, u, err := DecodeLikerCursor(""); v != 0 || u != 0 || err != nil {
		t.Errorf(`"" = %d, %d, %v; want the start`, v, u, err)
	}
	for _, bad := range []string{"x", EncodeCursor(CursorFeed, 5), EncodeCursor(CursorLikers, 5), EncodeLikerCursor(5, 1) + "A", "!!!!"} {
		if _, _, err := DecodeLikerCursor(bad); ErrorCode(err) != EINVALID {
			t.Errorf("DecodeLikerCursor(%q) = %v; want EINVALID", bad, err)
		}
	}
	// A user-likes cursor is not a feed cursor.
	if _, err := DecodeCursor(CursorFeed, EncodeCursor(CursorLikes, 9)); ErrorCode(err) != EINVALID {
		t.Errorf("a likes cursor decoded as a feed cursor: %v", err)
	}
}
