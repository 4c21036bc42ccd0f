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
		NewHidden(nil, nil).WithoutRepostsOf([]int64{11, 12}),
		NewHidden([]int64{2}, nil).WithReplies(RepliesAll).WithoutRepostsOf([]int64{11}),
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
	// The home feed's repost rules: own post, reposts turned off, a
	// hidden original's author.
	r := NewHidden([]int64{2}, nil).WithoutRepostsOf([]int64{7})
	for _, c := range []struct {
		p    Post
		home bool
		any  bool
	}{
		{Post{ID: 10, AuthorID: 8, RepostOfID: 1, RepostOfAuthorID: 5}, false, false},
		{Post{ID: 10, AuthorID: 8, RepostOfID: 1, RepostOfAuthorID: 100}, true, false}, // the reader's own
		{Post{ID: 10, AuthorID: 7, RepostOfID: 1, RepostOfAuthorID: 5}, true, false},   // reposts of 7 off
		{Post{ID: 10, AuthorID: 8, RepostOfID: 1, RepostOfAuthorID: 2}, true, true},    // 2 muted
		{Post{ID: 10, AuthorID: 7}, false, false},                                      // no repost
	} {
		if r.HomeHidesRepost(100, c.p) != c.home || r.HidesRepost(c.p) != c.any {
			t.Errorf("%+v: HomeHidesRepost %v, HidesRepost %v; want %v, %v", c.p, r.HomeHidesRepost(100, c.p), r.HidesRepost(c.p), c.home, c.any)
		}
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
