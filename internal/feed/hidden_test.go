package feed

import "testing"

func TestHiddenEncodeRoundTrip(t *testing.T) {
	for _, h := range []Hidden{
		{},
		NewHidden([]int64{3, 1, 1 << 52}, nil),
		NewHidden(nil, []int64{7}),
		NewHidden([]int64{2}, []int64{9, 8}),
		NewHidden(nil, nil).WithExcluded([]int64{4}),
		NewHidden([]int64{2}, []int64{9}).WithExcluded([]int64{5, 6}),
	} {
		enc := h.Encode()
		got, ok := DecodeHidden(enc)
		if !ok || got.Encode() != enc {
			t.Fatalf("DecodeHidden(%q) = %q, %v; want it back", enc, got.Encode(), ok)
		}
	}
	h := NewHidden([]int64{2}, []int64{9})
	if !h.InFeed(2) || h.Blocked(2) || !h.InFeed(9) || !h.Blocked(9) || h.InFeed(3) || !h.HasBlocks() {
		t.Fatalf("%q: wrong membership", h.Encode())
	}
	// An exclusive list's member is out of the home feed, not of lists.
	x := NewHidden([]int64{2}, []int64{9}).WithExcluded([]int64{5})
	if !x.InFeed(5) || x.InList(5) || !x.InList(2) || !x.InList(9) || x.Blocked(5) || x.Empty() {
		t.Fatalf("%q: wrong membership", x.Encode())
	}
	// The version before reads a set without exclusive members as it did.
	if enc := NewHidden([]int64{2}, nil).Encode(); enc != "m2;b" {
		t.Fatalf("Encode without excluded = %q; want the former %q", enc, "m2;b")
	}
	if (Hidden{}).InFeed(1) || !(Hidden{}).Empty() {
		t.Fatal("the zero Hidden hides something")
	}
	for _, bad := range []string{"", "changed", "m1", "mz!;b", "b;m", "m;b,", "m;b;y1", "m;b;x!"} {
		if _, ok := DecodeHidden(bad); ok {
			t.Errorf("DecodeHidden(%q) accepted", bad)
		}
	}
}
