package client

import (
	"strconv"
	"testing"
)

func TestParseDecimal(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "+7", "42", "-245220619350666", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-9223372036854775809", "", "-", "1a", " 1", "99999999999999999999", "1.5", "1e3"} {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := parseDecimal([]byte(s))
		if ok != (err == nil) || (ok && got != want) {
			t.Errorf("parseDecimal(%q) = %d, %v; want %d, %v", s, got, ok, want, err == nil)
		}
	}
}
