package apijson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPostsPageJSON holds PostsPage's own encoding to encoding/json's,
// byte for byte, over pages of random posts whose strings mix everything
// encoding/json escapes or checks.
func TestPostsPageJSON(t *testing.T) {
	pieces := []string{
		"plain", " ", "\"", "\\", "<b>", "&amp;", ">", "\n", "\t", "\x00", "\x1f", "\x7f",
		"é", "中文", "🙂", "\u2028", "\u2029", "\xff", "\xc3", "\xe2\x80", "abc/def", "'",
	}
	// Data as the API stores it, compact; without <, > and &, which
	// encoding/json would escape and AppendJSON writes as stored.
	datas := []string{`{}`, `{"a":1}`, `{"t":"é\"\\\u0000","n":[1,2.5,null,true,{"x":{}}]}`, `{"s":"中文🙂"}`}
	rng := rand.New(rand.NewPCG(1, 2))
	str := func() string {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := range 2000 {
		var p PostsPage
		p.Items = make([]Post, rng.IntN(4))
		for j := range p.Items {
			it := Post{ID: str(), AuthorID: str(), Content: str(), CreatedAt: str()}
			if rng.IntN(3) == 0 {
				it.Data = json.RawMessage(datas[rng.IntN(len(datas))])
			}
			if rng.IntN(3) == 0 {
				it.EditedAt = str()
			}
			if rng.IntN(4) == 0 {
				it.ExternalID = str()
			}
			if rng.IntN(4) == 0 {
				w := []float64{0, 1, 2.5, 100, 1e-7, 0.1, 33.333333333333336}[rng.IntN(7)]
				it.Weight = &w
			}
			if rng.IntN(3) > 0 {
				n := rng.Int64N(1<<40) - 5
				liked := rng.IntN(2) == 0
				it.LikeCount, it.LikedByMe = &n, &liked
			}
			p.Items[j] = it
		}
		if rng.IntN(2) == 0 {
			c := str()
			p.NextCursor = &c
		}
		p.Degraded = rng.IntN(4) == 0

		want, err := json.Marshal(p) // PostsPage is no json.Marshaler: reflection
		if err != nil {
			t.Fatal(err)
		}
		if got := p.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("page %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
