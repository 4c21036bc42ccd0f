package httpapi

import (
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestFormatTime: the hand-written formatter writes what Format writes,
// whatever the zone, at the edges of its range and beyond them.
func TestFormatTime(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	times := []time.Time{
		{},
		testNow,
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 1, 1, 0, 0, 0, 999_999, east), // the day before, in UTC
		time.Date(2024, 2, 29, 12, 0, 0, 1_000_000, time.Local),
		time.Unix(0, 0),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).In(east))
	}
	for _, tm := range times {
		if got, want := formatTime(tm), tm.UTC().Format(timeFormat); got != want {
			t.Errorf("formatTime(%v) = %q; want %q", tm, got, want)
		}
	}
}

// TestEncode: a value is written with its status and a newline; one that
// cannot be encoded becomes a clean 500 with the standard error body.
func TestEncode(t *testing.T) {
	w := httptest.NewRecorder()
	encode(w, http.StatusCreated, map[string]any{"a": "<b>", "n": 1})
	if got, want := w.Body.String(), `{"a":"\u003cb\u003e","n":1}`+"\n"; w.Code != http.StatusCreated || got != want {
		t.Errorf("encode = %d %q; want 201 %q", w.Code, got, want)
	}
	if got := w.Header().Get("Content-Type"); got != contentTypeJSON {
		t.Errorf("Content-Type = %q; want %q", got, contentTypeJSON)
	}
	w = httptest.NewRecorder()
	encode(w, http.StatusOK, map[string]any{"bad": math.NaN()})
	if got, want := w.Body.String(), `{"error":{"code":"internal","message":"internal error"}}`+"\n"; w.Code != http.StatusInternalServerError || got != want {
		t.Errorf("encode(NaN) = %d %q; want 500 %q", w.Code, got, want)
	}
}
