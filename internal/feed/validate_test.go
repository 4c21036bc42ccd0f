package feed

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCheckContent(t *testing.T) {
	tests := []struct {
		name    string
		content string
		ok      bool
	}{
		{"one character", "x", true},
		{"5000 runes", strings.Repeat("é", MaxContentRunes), true},
		{"tab, line feed, carriage return", "a\tb\r\nc", true},
		{"zero-width joiner inside an emoji", "👩\u200d💻", true},
		{"a visible character among invisible ones", "\u200b.\u200b", true},
		{"a letter with a combining mark", "e\u0301", true},
		{"a braille pattern with dots", "\u2801", true},
		{"a bidi override inside", "abc\u202edef", true}, // names refuse it, content may quote it
		{"U+FFFD itself", "\ufffd", true},
		{"empty", "", false},
		{"whitespace", " \n\t\u3000 ", false},
		{"5001 runes", strings.Repeat("é", MaxContentRunes+1), false},
		{"invalid UTF-8", "a\xff", false},
		{"NUL", "a\x00b", false},
		{"escape", "a\x1b[2Jb", false},
		{"bell", "a\ab", false},
		{"DEL", "a\x7fb", false},
		{"C1 CSI", "a\u009bb", false},
		{"zero-width space", "\u200b", false},
		{"zero-width non-joiner and joiner", "\u200c\u200d", false},
		{"word joiner", "\u2060", false},
		{"byte order mark and spaces", "\ufeff \u00a0\u2028\u2029", false},
		{"bidi override", "\u202e", false},
		{"variation selector", "\ufe0f", false},
		{"Hangul filler", "\u3164\u115f", false},
		{"a combining mark alone", "\u0301", false},
		{"combining marks and a space", " \u0301\u20dd\u0903", false},
		{"braille blank", "\u2800", false},
		{"braille blanks and spaces", "\u2800 \u2800\n", false},
		{"combining grapheme joiner", "\u034f", false},
		{"soft hyphen and invisible times", "\u00ad\u2062", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckContent(tt.content)
			if tt.ok && err != nil {
				t.Fatalf("CheckContent(%q) = %v; want nil", tt.content, err)
			}
			if !tt.ok && ErrorCode(err) != EINVALID {
				t.Fatalf("CheckContent(%q) = %v; want %s", tt.content, err, EINVALID)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"alice", true},
		{"Zoë 🙂", true},
		{strings.Repeat("é", MaxNameRunes), true},
		{"", false},
		{strings.Repeat("é", MaxNameRunes+1), false},
		{"a\xff", false},
		{"a\x00", false},
		{"a\tb", false}, // a name is one line
		{"a\nb", false},
		{"\u200b\u200b", false},
		{" \u3000\ufeff", false},
		{"نیم\u200cفاصله", true}, // a zero-width non-joiner, as Persian writes
		{"👩\u200d💻 dev", true},   // a zero-width joiner inside an emoji
		{"e\u0301", true},
		{"\u2800", false},
		{"\u0301", false},
		{"evil\u202egnp.exe", false},
		{"\u202aleft", false},
		{"\u202bright", false},
		{"\u202cpop", false},
		{"\u202dltr", false},
		{"\u2066isolate\u2069", false},
		{"\u2067rtl", false},
		{"\u2068first", false},
		{"bob\u200e", false}, // a left-to-right mark
		{"bob\u200b", false}, // a zero-width space beside visible letters
		{"bob\u2060", false},
		{"bo\u00adb", false},
		{"bob\U000e0041", false}, // a tag character
	}
	for _, tt := range tests {
		err := CheckName(tt.name)
		if tt.ok != (err == nil) || (err != nil && ErrorCode(err) != EINVALID) {
			t.Errorf("CheckName(%q) = %v; want ok %v", tt.name, err, tt.ok)
		}
	}
}

// TestCheckMessages checks that a refusal names the field and the reason.
func TestCheckMessages(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{CheckContent("a\x00"), "content must not contain the control character U+0000"},
		{CheckContent("\u200b"), "content must have at least one visible character"},
		{CheckName("a\tb"), "name must not contain the control character U+0009"},
		{CheckName("\u200b"), "name must have at least one visible character"},
		{CheckName("evil\u202egnp.exe"), "name must not contain the format character U+202E"},
		{CheckContent("\u2800"), "content must have at least one visible character"},
		{CheckContent("\u0301"), "content must have at least one visible character"},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("error = %v; want it to say %q", tt.err, tt.want)
		}
	}
}

func TestValidIdempotencyKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"k", true},
		{strings.Repeat("k", MaxIdempotencyKey), true},
		{"", false},
		{strings.Repeat("k", MaxIdempotencyKey+1), false},
		{"clé", false},
		{"tab\there", false},
	}
	for _, tt := range tests {
		if got := ValidIdempotencyKey(tt.key); got != tt.want {
			t.Errorf("ValidIdempotencyKey(%.20q) = %v; want %v", tt.key, got, tt.want)
		}
	}
}

func TestCheckData(t *testing.T) {
	nested := func(depth int) string {
		return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
	}
	// A string of n bytes as the only field: {"s":"…"} is n+8 bytes.
	sized := func(n int) string { return `{"s":"` + strings.Repeat("x", n-8) + `"}` }
	tests := []struct {
		name, in, want string // want "" means EINVALID
	}{
		{"object", `{"title":"Hi","n":1}`, `{"title":"Hi","n":1}`},
		{"compacted", " {\n \"a\" : [ 1 , 2 ] ,\"b\":{ } }\t", `{"a":[1,2],"b":{}}`},
		{"empty object", `{}`, `{}`},
		{"escapes kept", `{"s":"a\u00e9<&>\"\\\n"}`, `{"s":"a\u00e9<&>\"\\\n"}`},
		{"braces in strings do not nest", `{"s":"` + strings.Repeat("{[", 40) + `"}`, `{"s":"` + strings.Repeat("{[", 40) + `"}`},
		{"depth 32", nested(MaxDataDepth), nested(MaxDataDepth)},
		{"arrays count", `{"a":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`, `{"a":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`},
		{"16 KiB", sized(MaxDataBytes), sized(MaxDataBytes)},
		{"16 KiB once compacted", " " + sized(MaxDataBytes) + "  ", sized(MaxDataBytes)},
		{"depth 33", nested(MaxDataDepth + 1), ""},
		{"arrays too deep", `{"a":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`, ""},
		{"16 KiB + 1", sized(MaxDataBytes + 1), ""},
		{"array", `[1]`, ""},
		{"string", `"x"`, ""},
		{"number", `1`, ""},
		{"boolean", `true`, ""},
		{"null", `null`, ""},
		{"not JSON", `{"a":}`, ""},
		{"two values", `{} {}`, ""},
		{"empty", ``, ""},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckData(json.RawMessage(tt.in))
			if tt.want == "" {
				if ErrorCode(err) != EINVALID {
					t.Fatalf("CheckData = %q, %v; want %s", got, err, EINVALID)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CheckData = %.60q, %v; want %.60q, nil", got, err, tt.want)
			}
		})
	}
}

func TestPostVersion(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	fresh := Post{ID: 1}
	edited := Post{ID: 1, EditedAt: at}
	later := Post{ID: 1, EditedAt: at.Add(time.Millisecond)}
	tomb := Post{ID: 1, Deleted: true}
	if fresh.Version() != 0 || edited.Version() != at.UnixMilli() || tomb.Version() != TombstoneVersion {
		t.Fatalf("versions %d, %d, %d; want 0, %d, %d", fresh.Version(), edited.Version(), tomb.Version(), at.UnixMilli(), TombstoneVersion)
	}
	for _, tt := range []struct {
		name   string
		p, old Post
		want   bool
	}{
		{"same version", edited, edited, true},
		{"an edit over the original", edited, fresh, true},
		{"the original over an edit", fresh, edited, false},
		{"an older edit over a newer", edited, later, false},
		{"a tombstone over an edit", tomb, later, true},
		{"an edit over a tombstone", later, tomb, false},
	} {
		if got := tt.p.Supersedes(tt.old); got != tt.want {
			t.Errorf("%s: Supersedes = %v; want %v", tt.name, got, tt.want)
		}
	}
}
