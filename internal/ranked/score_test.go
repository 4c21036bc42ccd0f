package ranked

import (
	"maps"
	"math"
	"slices"
	"testing"
	"time"
)

// TestScore holds the documented formula's promises: each factor is 1
// without its signal, weight multiplies, likes and affinity count on a log
// scale, and the score halves every half-life.
func TestScore(t *testing.T) {
	c := DefaultConfig()
	base := Signals{Weight: 1}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9*math.Max(1, math.Abs(want)) }
	for _, tt := range []struct {
		name string
		s    Signals
		want float64
	}{
		{"nothing but the default weight", base, 1},
		{"weight 0", Signals{Weight: 0, Likes: 1000, Affinity: 50}, 0},
		{"weight 50", Signals{Weight: 50}, 50},
		{"e-1 likes", Signals{Weight: 1, Likes: int64(math.Round(math.E - 1))}, 1 + math.Log1p(2)},
		{"one half-life", Signals{Weight: 1, Age: c.HalfLife}, 0.5},
		{"two half-lives", Signals{Weight: 1, Age: 2 * c.HalfLife}, 0.25},
		{"affinity 3", Signals{Weight: 1, Affinity: 3}, 1 + math.Log(4)},
		{"a clock behind the post", Signals{Weight: 1, Age: -time.Hour}, 1},
		{"all of them", Signals{Weight: 2, Likes: 9, Affinity: 1, Age: c.HalfLife}, 2 * (1 + math.Log(10)) * (1 + math.Log(2)) * 0.5},
	} {
		if got := c.Score(tt.s); !near(got, tt.want) {
			t.Errorf("%s: Score(%+v) = %v; want %v", tt.name, tt.s, got, tt.want)
		}
	}
	// The thousandth like counts less than the first.
	if d1, d1000 := c.Score(Signals{Weight: 1, Likes: 1})-c.Score(base),
		c.Score(Signals{Weight: 1, Likes: 1000})-c.Score(Signals{Weight: 1, Likes: 999}); d1000 >= d1 {
		t.Errorf("the 1000th like adds %v, the first %v; want less", d1000, d1)
	}
	// Engagement and affinity 0 turn their signals off.
	off := c
	off.Engagement, off.Affinity = 0, 0
	if got := off.Score(Signals{Weight: 1, Likes: 100, Affinity: 100}); got != 1 {
		t.Errorf("with both off, Score = %v; want 1", got)
	}
}

// TestPosition: a cursor's position splits back into its snapshot and
// index, for every index a snapshot may hold.
func TestPosition(t *testing.T) {
	for _, snap := range []int64{1, newSnapshotID(), 1<<47 - 1} {
		for _, i := range []int{0, 1, 999, MaxCandidates} {
			if s, j := splitPosition(position(snap, i)); s != snap || j != i {
				t.Errorf("splitPosition(position(%d, %d)) = %d, %d", snap, i, s, j)
			}
		}
	}
}

// TestPoolRecord: a pool's record reads back as written, empty or not,
// and anything else is no pool.
func TestPoolRecord(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_123)
	for _, p := range []pool{
		{gathered: at, affinity: map[int64]int{}},
		{gathered: at, members: 12345, cands: []candidate{{id: 3, author: 7, weight: 1}, {id: -(1 << 40), author: 8, weight: 0.25}},
			affinity: map[int64]int{7: 3, 1 << 50: 100}},
	} {
		got, ok := decodePool(p.encode())
		if !ok || !got.gathered.Equal(p.gathered) || got.members != p.members || !slices.Equal(got.cands, p.cands) || !maps.Equal(got.affinity, p.affinity) {
			t.Errorf("decodePool(encode(%+v)) = %+v, %v", p, got, ok)
		}
	}
	good := pool{gathered: at, cands: []candidate{{id: 3, author: 7, weight: 1}}, affinity: map[int64]int{7: 1}}.encode()
	for _, bad := range []string{"", good[:19], good[:len(good)-1], good[:20+candidateBytes-1]} {
		if p, ok := decodePool(bad); ok {
			t.Errorf("decodePool(%q) = %+v, true; want false", bad, p)
		}
	}
}
