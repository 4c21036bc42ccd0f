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
		{"empty", "", false},
		{"whitespace", " \n\t\u3000 ", false},
		{"5001 runes", strings.Repeat("é", MaxContentRunes+1), false},
		{"invalid UTF-8", "a\xff", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckContent(tt.content)
			if tt.ok && err != nil {
				t.Fatalf("CheckContent = %v; want nil", err)
			}
			if !tt.ok && ErrorCode(err) != EINVALID {
				t.Fatalf("CheckContent = %v; want %s", err, EINVALID)
			}
		})
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
