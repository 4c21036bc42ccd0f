package httpapi

import (
	"math/rand/v2"
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
