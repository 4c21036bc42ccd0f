package timeline

import (
	"slices"
	"testing"
)

func TestMergeDesc(t *testing.T) {
	tests := []struct {
		name string
		a, b []int64
		n    int
		want []int64
	}{
		{"disjoint", []int64{9, 5, 1}, []int64{8, 4}, 10, []int64{9, 8, 5, 4, 1}},
		{"overlap dedups", []int64{9, 5, 1}, []int64{9, 5, 2}, 10, []int64{9, 5, 2, 1}},
		{"bounded", []int64{9, 5, 1}, []int64{8, 4}, 3, []int64{9, 8, 5}},
		{"one empty", nil, []int64{3, 2}, 5, []int64{3, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeDesc(tt.a, tt.b, tt.n); !slices.Equal(got, tt.want) {
				t.Fatalf("mergeDesc = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestPageBelow(t *testing.T) {
	ids := []int64{90, 80, 70, 60, 50}
	tests := []struct {
		pos  int64
		n    int
		want []int64
	}{
		{0, 2, []int64{90, 80}},
		{80, 2, []int64{70, 60}},
		{75, 10, []int64{70, 60, 50}},
		{50, 3, []int64{}},
		{1000, 1, []int64{90}},
	}
	for _, tt := range tests {
		pg := pageBelow(ids, tt.pos, tt.n, true)
		if !slices.Equal(pg.IDs, tt.want) || !pg.Exists || !pg.Complete {
			t.Errorf("pageBelow(pos %d, n %d) = %+v; want ids %v", tt.pos, tt.n, pg, tt.want)
		}
	}
}

func BenchmarkMergeDesc(b *testing.B) {
	a := make([]int64, 1000)
	c := make([]int64, 1000)
	for i := range a {
		a[i] = int64(4000 - 2*i)
		c[i] = int64(4001 - 2*i)
	}
	for b.Loop() {
		_ = mergeDesc(a, c, 1000)
	}
}
