package feed

import (
	"strings"
	"testing"
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
		{"a combining mark alone", "\u0301", true},
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
