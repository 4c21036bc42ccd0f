package feed_test

import (
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// FuzzCursorRoundTrip: every position of every kind encodes to a cursor
// that decodes to that position for that kind only, and any string,
// decoded as any kind, is either EINVALID or the one spelling of a
// position.
func FuzzCursorRoundTrip(f *testing.F) {
	f.Add(int64(1), feed.CursorFeed, "")
	f.Add(int64(feed.MaxID), feed.CursorUsers, "AXUB")
	f.Add(int64(1<<63-1), byte(0), "AWaAgICAgICAgICAAQ")
	f.Add(int64(-5), feed.CursorFeed, "AWa0Aw")
	f.Add(int64(feed.MinID), feed.CursorFeed, "AmYF")
	f.Add(int64(-4096), feed.CursorUsers, "AmaAIA")
	f.Fuzz(func(t *testing.T, pos int64, kind byte, s string) {
		// A negative position is a post id from before 2025: feed
		// cursors only.
		if pos > 0 || kind == feed.CursorFeed && pos < 0 && pos >= feed.MinID {
			c := feed.EncodeCursor(kind, pos)
			if got, err := feed.DecodeCursor(kind, c); err != nil || got != pos {
				t.Fatalf("DecodeCursor(%q, EncodeCursor(%d)) = %d, %v; want %d", kind, pos, got, err, pos)
			}
			if _, err := feed.DecodeCursor(kind+1, c); feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("a cursor of kind %q decodes as kind %q: err %v", kind, kind+1, err)
			}
		}
		got, err := feed.DecodeCursor(kind, s)
		switch {
		case err != nil && feed.ErrorCode(err) != feed.EINVALID:
			t.Fatalf("DecodeCursor(%q) err code %q; want %q", s, feed.ErrorCode(err), feed.EINVALID)
		case err != nil:
		case s == "" && got != 0:
			t.Fatalf("empty cursor = %d; want 0", got)
		case s != "" && (got == 0 || feed.EncodeCursor(kind, got) != s):
			t.Fatalf("cursor %q decodes to %d, which is not its only spelling", s, got)
		case got < 0 && (kind != feed.CursorFeed || got < feed.MinID):
			t.Fatalf("cursor %q of kind %q decodes to %d: only a feed cursor holds a post id below 0, from MinID", s, kind, got)
		}
	})
}

// FuzzParsePostID: post ids are decimal integers from MinID, not 0.
// Anything ParsePostID accepts is one and prints back to the same digits
// (bar leading zeros); everything else is EINVALID, never a panic.
func FuzzParsePostID(f *testing.F) {
	for _, s := range []string{"1", "-1", "-0", "+5", "-007", "-2456027136000000", "-2456027136000001",
		"9223372036854775807", "-9223372036854775808", "0", "", "--1", " -1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := feed.ParsePostID(s)
		if err != nil {
			if feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("ParsePostID(%q) err code %q; want %q", s, feed.ErrorCode(err), feed.EINVALID)
			}
			return
		}
		if id == 0 || id < feed.MinID {
			t.Fatalf("ParsePostID(%q) = %d; want a post id", s, id)
		}
		sign, digits := "", s
		if id < 0 {
			sign, digits = "-", s[1:]
		}
		if got, want := feed.FormatID(id), sign+strings.TrimLeft(digits, "0"); got != want {
			t.Fatalf("ParsePostID(%q) = %d, which prints as %q; want %q", s, id, got, want)
		}
		if back, err := feed.ParsePostID(feed.FormatID(id)); err != nil || back != id {
			t.Fatalf("ParsePostID(FormatID(%d)) = %d, %v", id, back, err)
		}
	})
}

// FuzzParseID: ids are positive decimal integers. Anything ParseID accepts
// is positive and prints back to the same digits (bar leading zeros);
// everything else is EINVALID, never a panic.
func FuzzParseID(f *testing.F) {
	for _, s := range []string{"1", "42", "9007199254740991", "9223372036854775807", "9223372036854775808",
		"0", "-1", "+5", "007", " 1", "1e3", "0x10", "", "١٢٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := feed.ParseID(s)
		if err != nil {
			if feed.ErrorCode(err) != feed.EINVALID {
				t.Fatalf("ParseID(%q) err code %q; want %q", s, feed.ErrorCode(err), feed.EINVALID)
			}
			return
		}
		if id <= 0 {
			t.Fatalf("ParseID(%q) = %d; want a positive id", s, id)
		}
		if got, want := feed.FormatID(id), strings.TrimLeft(s, "0"); got != want {
			t.Fatalf("ParseID(%q) = %d, which prints as %q; want %q", s, id, got, want)
		}
		if back, err := feed.ParseID(feed.FormatID(id)); err != nil || back != id {
			t.Fatalf("ParseID(FormatID(%d)) = %d, %v", id, back, err)
		}
	})
}
