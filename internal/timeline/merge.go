package timeline

import (
	"container/heap"
	"slices"

	"github.com/feedd/feedd/internal/feed"
)

// mergeK merges lists of ids, each newest first, into one newest-first list
// of at most n distinct ids: a k-way merge over a heap of the lists' heads,
// O(n log k), touching only what the page needs.
func mergeK(lists [][]int64, n int) []int64 {
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0][:min(len(lists[0]), n)]
	case 2:
		return mergeDesc(lists[0], lists[1], n)
	}
	h := make(heads, 0, len(lists))
	for _, l := range lists {
		if len(l) > 0 {
			h = append(h, l)
		}
	}
	heap.Init(&h)
	out := make([]int64, 0, n)
	for len(out) < n && len(h) > 0 {
		top := h[0]
		if id := top[0]; len(out) == 0 || out[len(out)-1] != id {
			out = append(out, id)
		}
		if len(top) > 1 {
			h[0] = top[1:]
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return out
}

// heads is a max-heap of non-empty lists by their first id.
type heads [][]int64

func (h heads) Len() int           { return len(h) }
func (h heads) Less(i, j int) bool { return h[i][0] > h[j][0] }
func (h heads) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *heads) Push(x any)        { *h = append(*h, x.([]int64)) }
func (h *heads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// intersect returns the ids of a that are also in b.
func intersect(a, b []int64) []int64 {
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	in := make(map[int64]struct{}, len(b))
	for _, id := range b {
		in[id] = struct{}{}
	}
	var out []int64
	for _, id := range a {
		if _, ok := in[id]; ok {
			out = append(out, id)
		}
	}
	return out
}

// mergeDesc merges two descending id lists into one without duplicates,
// keeping at most n.
func mergeDesc(a, b []int64, n int) []int64 {
	out := make([]int64, 0, min(len(a)+len(b), n))
	i, j := 0, 0
	for len(out) < n && (i < len(a) || j < len(b)) {
		var v int64
		switch {
		case j >= len(b) || (i < len(a) && a[i] > b[j]):
			v, i = a[i], i+1
		case i >= len(a) || b[j] > a[i]:
			v, j = b[j], j+1
		default: // equal
			v, i, j = a[i], i+1, j+1
		}
		out = append(out, v)
	}
	return out
}

// missing returns the ids of want that are not in have.
func missing(want, have []int64) []int64 {
	seen := make(map[int64]struct{}, len(have))
	for _, id := range have {
		seen[id] = struct{}{}
	}
	var out []int64
	for _, id := range want {
		if _, ok := seen[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// pageBelow returns up to n of ids (newest first) below pos.
func pageBelow(ids []int64, pos int64, n int, complete bool) feed.InboxPage {
	start := 0
	if pos != 0 { // 0: from the newest; a post from before 2025 is below 0
		start, _ = slices.BinarySearchFunc(ids, pos, func(a, b int64) int {
			// ids are descending: find the first id < pos.
			switch {
			case a >= b:
				return -1
			default:
				return 1
			}
		})
	}
	end := min(start+n, len(ids))
	return feed.InboxPage{IDs: ids[start:end], Exists: true, Complete: complete}
}
