package feed

import "testing"

func TestHiddenEncodeRoundTrip(t *testing.T) {
	for _, h := range []Hidden{
		{},
		NewHidden([]int64{3, 1, 1 << 52}, nil),
		NewHidden(nil, []int64{7}),
		NewHidden([]int64{2}, []int64{9, 8}),
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
	if (Hidden{}).InFeed(1) || !(Hidden{}).Empty() {
		t.Fatal("the zero Hidden hides something")
	}
	for _, bad := range []string{"", "changed", "m1", "mz!;b", "b;m", "m;b,"} {
		if _, ok := DecodeHidden(bad); ok {
			t.Errorf("DecodeHidden(%q) accepted", bad)
		}
	}
}
