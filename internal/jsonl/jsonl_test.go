package jsonl

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestDecode: a line is one object of its kind's keys, named exactly and
// each once; ids are strings or numbers; the reasons name what is wrong.
func TestDecode(t *testing.T) {
	for _, c := range []struct {
		line string
		want string // "" for none; else a part of the reason
		key  string // with a *KeyError: its key
	}{
		{`{"id":"42","name":"alice"}`, "", ""},
		{`{"id":42,"name":"alice"}`, "", ""},
		{`{"kind":"user","id":"42","name":"alice"}`, "", ""},
		{`{"id":"42","name":"alice","nmae":"x"}`, `unknown key "nmae"`, "nmae"},
		{`{"id":"42","Name":"alice"}`, `unknown key "Name"`, "Name"},
		{`{"id":"42","name":"a","name":"b"}`, `key "name" appears twice`, "name"},
		{`{"id":"42","name":"a"} {}`, "malformed JSON", ""},
		{` { "id" : 42 , "n\u0061me" : "alice" } `, "", ""},
		{`{"id":"42","name":"alice","n\u0061me":"x"}`, `key "name" appears twice`, "name"},
		{`{"id":"42","name":"alice","x\"}":1}`, `unknown key "x\"}"`, `x"}`},
		{`{"id":"-1","name":"a"}`, "is not a user id", ""},
		{`{"id":"42","name":7}`, `field "name": want string`, ""},
		{`[1]`, "want a JSON object", ""},
		{` null`, "want a JSON object, got JSON null", ""},
		{`{"id":`, "malformed JSON", ""},
	} {
		var l UserLine
		err := Decode([]byte(c.line), &l)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Decode(%s) = %v; want nil", c.line, err)
		case c.want == "" && (l.ID != 42 || l.Name != "alice"):
			t.Errorf("Decode(%s) = %+v; want 42 alice", c.line, l)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Decode(%s) = %v; want %q", c.line, err, c.want)
		}
		var ke *KeyError
		if got := errors.As(err, &ke); got != (c.key != "") || got && ke.Key != c.key {
			t.Errorf("Decode(%s) = %#v; want a KeyError of %q: %v", c.line, err, c.key, got)
		}
	}
	// A post's data is a value of its own: its keys are not the line's.
	var p PostLine
	if err := Decode([]byte(`{"author_id":"1","data":{"kind":1,"x":[{"y":"}],\""}]},"external_id":"e","content":"{[,\"","created_at":"2020-01-01T00:00:00Z"}`), &p); err != nil || string(p.Data) != `{"kind":1,"x":[{"y":"}],\""}]}` || p.Content != `{[,"` {
		t.Errorf("Decode(post with data) = %v, %s, %q", err, p.Data, p.Content)
	}
	if err := Decode([]byte(`{"author_id":"1","data":{"a":[1,{}]},"external_id":"e","content":"c","created_at":"2020-01-01T00:00:00Z","dta":1}`), &p); err == nil || err.Error() != `unknown key "dta" (keys are case-sensitive)` {
		t.Errorf("Decode(post with dta after data) = %v; want the unknown key dta", err)
	}
}

func TestTagged(t *testing.T) {
	for line, want := range map[string]Kind{
		`{"kind":"post","data":{"kind":"x"}}`: Post,
		`{"data":{"kind":"x"}}`:               "",
		`{"id":"1"}`:                          "",
	} {
		if got, err := Tagged([]byte(line)); err != nil || got != want {
			t.Errorf("Tagged(%s) = %q, %v; want %q", line, got, err, want)
		}
	}
	for _, line := range []string{`{"kind":1}`, `{"kind":""}`, `[]`, `{`} {
		if _, err := Tagged([]byte(line)); err == nil {
			t.Errorf("Tagged(%s): no error", line)
		}
	}
}

// TestWriteRead: what a Writer writes, a Reader reads back, line for
// line, and Decode takes.
func TestWriteRead(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, 16)
	lines := []any{
		UserLine{Kind: User, ID: 7, Name: `<b> & "q"`},
		FollowLine{FollowerID: 7, FolloweeID: 8},
		PostLine{Kind: Post, AuthorID: 7, ExternalID: "e", Content: "c", CreatedAt: "2020-01-01T00:00:00Z", Data: []byte(`{"a":1}`)},
	}
	for _, l := range lines {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"user","id":"7","name":"<b> & \"q\""}
{"follower_id":"7","followee_id":"8"}
{"kind":"post","author_id":"7","external_id":"e","content":"c","created_at":"2020-01-01T00:00:00Z","data":{"a":1}}
`
	if b.String() != want {
		t.Fatalf("wrote\n%s\nwant\n%s", b.String(), want)
	}
	r := NewReader(strings.NewReader(b.String() + strings.Repeat("x", MaxLine+1) + "\n\n"))
	var u UserLine
	for i := 1; ; i++ {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			if i != 6 {
				t.Fatalf("%d lines; want 5", i-1)
			}
			break
		}
		switch {
		case r.Line() != i:
			t.Fatalf("Line() = %d; want %d", r.Line(), i)
		case i == 1:
			if err := Decode(line, &u); err != nil || u.Name != `<b> & "q"` {
				t.Fatalf("line 1: %+v, %v", u, err)
			}
		case i == 4 && (!r.Long() || len(line) != 0):
			t.Fatalf("line 4: long %v, %d bytes; want long and empty", r.Long(), len(line))
		case i == 5 && (!Blank(line) || r.Long()):
			t.Fatalf("line 5: %q; want blank", line)
		}
	}
}
