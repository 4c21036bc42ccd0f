package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPostsPageJSON holds postsPageJSON's own encoding to encoding/json's,
// byte for byte, over pages of random posts whose strings mix everything
// encoding/json escapes or checks.
func TestPostsPageJSON(t *testing.T) {
	pieces := []string{
		"plain", " ", "\"", "\\", "<b>", "&amp;", ">", "\n", "\t", "\x00", "\x1f", "\x7f",
		"é", "中文", "🙂", "\u2028", "\u2029", "\xff", "\xc3", "\xe2\x80", "abc/def", "'",
	}
	// Data as the API stores it, compact; without <, > and &, which
	// encoding/json would escape and appendJSON writes as stored.
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
		var p postsPageJSON
		p.Items = make([]postJSON, rng.IntN(4))
		for j := range p.Items {
			it := postJSON{ID: str(), AuthorID: str(), Content: str(), CreatedAt: str()}
			if rng.IntN(3) == 0 {
				it.Data = json.RawMessage(datas[rng.IntN(len(datas))])
			}
			if rng.IntN(3) == 0 {
				it.EditedAt = str()
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

		want, err := json.Marshal(p) // postsPageJSON is no json.Marshaler: reflection
		if err != nil {
			t.Fatal(err)
		}
		if got := p.appendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("page %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestEncodeAppender checks that encode writes an appender's body as a
// json.Encoder would: status, headers, the JSON and a newline.
func TestEncodeAppender(t *testing.T) {
	n, liked := int64(3), true
	page := postsPageJSON{Items: []postJSON{{ID: "1", AuthorID: "2", Content: "a <b>", CreatedAt: "t", LikeCount: &n, LikedByMe: &liked}}}
	rec := httptest.NewRecorder()
	encode(rec, http.StatusCreated, page)
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(pageJSON[postJSON](page)); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusCreated || rec.Header().Get("Content-Type") != contentTypeJSON || rec.Body.String() != want.String() {
		t.Fatalf("encode = %d %q %q; want 201 %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), contentTypeJSON, want.String())
	}
}
