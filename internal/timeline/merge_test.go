package timeline

import (
	"fmt"
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

func TestMergeK(t *testing.T) {
	lists := [][]int64{
		{100, 90, 50, 10},
		{95, 90, 40},
		{},
		{99, 98, 97, 10},
	}
	want := []int64{100, 99, 98, 97, 95, 90, 50, 40, 10}
	if got := mergeK(lists, 100); !slices.Equal(got, want) {
		t.Fatalf("mergeK = %v; want %v", got, want)
	}
	if got := mergeK(lists, 3); !slices.Equal(got, want[:3]) {
		t.Fatalf("mergeK bounded = %v; want %v", got, want[:3])
	}
	if got := mergeK(nil, 5); len(got) != 0 {
		t.Fatalf("mergeK(nil) = %v", got)
	}
}

// BenchmarkMergeK merges a page (21 ids) from an inbox and k pulled
// authors' lists, the shape of a hybrid read.
func BenchmarkMergeK(b *testing.B) {
	for _, k := range []int{1, 20, 64} {
		lists := make([][]int64, k+1)
		for i := range lists {
			l := make([]int64, 21)
			for j := range l {
				l[j] = int64(1_000_000 - j*(k+1) - i)
			}
			lists[i] = l
		}
		b.Run(fmt.Sprintf("sources=%d", k+1), func(b *testing.B) {
			for b.Loop() {
				_ = mergeK(lists, 21)
			}
		})
	}
}
