package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
)

// TestStrictInput sends, over HTTP, input that encoding/json and net/http
// would accept by quietly changing it: each gets a 400 with a sentence
// saying why, and reaches no service method. The last rows are what the
// checks must still let through.
func TestStrictInput(t *testing.T) {
	alices := userToken(t, alice)
	tests := []struct {
		name   string
		method string
		path   string
		token  string
		body   string
		status int    // 0: 400 with the message say
		say    string // a part of the error message
	}{
		// Invalid UTF-8, anywhere in a body.
		{"post: invalid UTF-8 in content", "POST", "/v1/posts", alices, "{\"content\":\"a\xffb\"}", 0, "not valid UTF-8"},
		{"post: invalid UTF-8 in a key", "POST", "/v1/posts", alices, "{\"content\":\"a\",\"\xc3\":1}", 0, "not valid UTF-8"},
		{"post: invalid UTF-8 between tokens", "POST", "/v1/posts", alices, "{\"content\":\"a\"}\xff", 0, "not valid UTF-8"},
		{"post: overlong encoding", "POST", "/v1/posts", alices, "{\"content\":\"\xc0\xaf\"}", 0, "not valid UTF-8"},
		{"post: encoded surrogate", "POST", "/v1/posts", alices, "{\"content\":\"\xed\xa0\x80\"}", 0, "not valid UTF-8"},
		{"post: unpaired high surrogate escape", "POST", "/v1/posts", alices, `{"content":"a\ud83d"}`, 0, "unpaired surrogate"},
		{"post: unpaired low surrogate escape", "POST", "/v1/posts", alices, `{"content":"\ude00a"}`, 0, "unpaired surrogate"},
		{"post: two high surrogate escapes", "POST", "/v1/posts", alices, `{"content":"\ud83d\ud83d"}`, 0, "unpaired surrogate"},
		{"user: invalid UTF-8 in name", "POST", "/v1/users", testAdmin, "{\"name\":\"\xff\"}", 0, "not valid UTF-8"},
		{"token: invalid UTF-8", "POST", "/v1/users/2/tokens", testAdmin, "{\"ttl_seconds\":60 \xff}", 0, "not valid UTF-8"},

		// Duplicate keys, matched exactly, escapes decoded.
		{"post: content twice", "POST", "/v1/posts", alices, `{"content":"a","content":"b"}`, 0, `key "content" appears twice`},
		{"post: content twice, one escaped", "POST", "/v1/posts", alices, `{"content":"a","\u0063ontent":"b"}`, 0, `key "content" appears twice`},
		{"user: name twice", "POST", "/v1/users", testAdmin, `{"name":"a","id":"9","name":"b"}`, 0, `key "name" appears twice`},
		{"token: ttl twice", "POST", "/v1/users/2/tokens", testAdmin, `{"ttl_seconds":60,"ttl_seconds":120}`, 0, `key "ttl_seconds" appears twice`},

		// Field names are case-sensitive.
		{"post: Content", "POST", "/v1/posts", alices, `{"Content":"hi"}`, 0, `unknown field "Content"`},
		{"post: content and CONTENT", "POST", "/v1/posts", alices, `{"content":"hi","CONTENT":"ho"}`, 0, `unknown field "CONTENT"`},
		{"user: Name", "POST", "/v1/users", testAdmin, `{"Name":"dave"}`, 0, `unknown field "Name"`},
		{"user: ID", "POST", "/v1/users", testAdmin, `{"name":"dave","ID":"9"}`, 0, `unknown field "ID"`},
		{"token: TTL_Seconds", "POST", "/v1/users/2/tokens", testAdmin, `{"TTL_Seconds":60}`, 0, `unknown field "TTL_Seconds"`},

		// Control and invisible characters.
		{"post: NUL", "POST", "/v1/posts", alices, `{"content":"a\u0000b"}`, 0, "control character U+0000"},
		{"post: escape sequence", "POST", "/v1/posts", alices, `{"content":"\u001b[31mred"}`, 0, "control character U+001B"},
		{"post: DEL", "POST", "/v1/posts", alices, "{\"content\":\"a\x7f\"}", 0, "control character U+007F"},
		{"post: C1 control", "POST", "/v1/posts", alices, `{"content":"a\u0085"}`, 0, "control character U+0085"},
		{"post: zero-width space", "POST", "/v1/posts", alices, `{"content":"\u200b"}`, 0, "at least one visible character"},
		{"post: only format characters", "POST", "/v1/posts", alices, `{"content":"\u200b\u200c\u200d\u2060\ufeff"}`, 0, "at least one visible character"},
		{"post: spaces and zero-width", "POST", "/v1/posts", alices, `{"content":" \u00a0\u200b\n\u3000"}`, 0, "at least one visible character"},
		{"post: Hangul filler", "POST", "/v1/posts", alices, `{"content":"\u3164"}`, 0, "at least one visible character"},
		{"user: NUL in name", "POST", "/v1/users", testAdmin, `{"name":"da\u0000ve"}`, 0, "control character U+0000"},
		{"user: newline in name", "POST", "/v1/users", testAdmin, `{"name":"da\nve"}`, 0, "control character U+000A"},
		{"user: zero-width name", "POST", "/v1/users", testAdmin, `{"name":"\u200b\ufeff"}`, 0, "at least one visible character"},

		// Query strings net/http would parse by dropping what it cannot.
		{"feed: bad escape", "GET", "/v1/me/feed?limit=%zz", alices, ``, 0, "query string cannot be parsed"},
		{"feed: semicolon", "GET", "/v1/me/feed?limit=1;cursor=x", alices, ``, 0, "query string cannot be parsed"},
		{"feed: limit twice", "GET", "/v1/me/feed?limit=1&limit=100", alices, ``, 0, "limit must be given at most once"},
		{"author posts: bad escape", "GET", "/v1/users/2/posts?cursor=%", alices, ``, 0, "query string cannot be parsed"},
		{"followers: semicolon", "GET", "/v1/users/2/followers?limit=5;x", alices, ``, 0, "query string cannot be parsed"},
		{"following: bad escape", "GET", "/v1/users/2/following?%zz=1", alices, ``, 0, "query string cannot be parsed"},
		{"likers: bad escape", "GET", "/v1/posts/5/likes?limit=%zz", alices, ``, 0, "query string cannot be parsed"},
		{"likers: cursor twice", "GET", "/v1/posts/5/likes?cursor=a&cursor=b", alices, ``, 0, "cursor must be given at most once"},
		{"user likes: semicolon", "GET", "/v1/users/2/likes?limit=1;cursor=x", alices, ``, 0, "query string cannot be parsed"},
		{"top: bad escape", "GET", "/v1/posts/top?window=%zz", alices, ``, 0, "query string cannot be parsed"},
		{"top: semicolon", "GET", "/v1/posts/top?window=1h;limit=5", alices, ``, 0, "query string cannot be parsed"},
		{"top: window twice", "GET", "/v1/posts/top?window=1h&window=2h", alices, ``, 0, "window must be given at most once"},

		// Accepted.
		{"post: tab and line breaks", "POST", "/v1/posts", alices, `{"content":"a\tb\r\nc"}`, 201, ""},
		{"post: paired surrogate escapes", "POST", "/v1/posts", alices, `{"content":"\ud83d\ude00"}`, 201, ""},
		{"post: zero-width joiner in an emoji", "POST", "/v1/posts", alices, `{"content":"👩\u200d💻"}`, 201, ""},
		{"post: escaped key", "POST", "/v1/posts", alices, `{"\u0063ontent":"hi"}`, 201, ""},
		{"post: backslash before a quote", "POST", "/v1/posts", alices, `{"content":"say \"hi\" \\"}`, 201, ""},
		{"user: name and id", "POST", "/v1/users", testAdmin, `{"name":"Zoë 🙂","id":"99"}`, 201, ""},
		{"unfollow: yourself", "DELETE", "/v1/me/following/1", alices, ``, 204, ""},
		{"feed: plus-encoded space in a value", "GET", "/v1/me/feed?limit=5&x=a+b", alices, ``, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.do(req{method: tt.method, path: tt.path, token: tt.token, body: tt.body})
			if tt.status != 0 {
				wantStatus(t, r, tt.status)
				return
			}
			wantStatus(t, r, 400)
			if got := r.errorCode(t); got != "invalid" {
				t.Errorf("code = %q; want %q", got, "invalid")
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.say) {
				t.Errorf("message = %q; want it to say %q", msg, tt.say)
			}
			wantCalls(t, e.svc)
		})
	}
}

// TestStrictSwitchesBody: a map body (the degradation switches) is checked
// for duplicate keys like a struct's.
func TestStrictSwitchesBody(t *testing.T) {
	kv := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { kv.Close() })
	base, _ := newGuardedEnv(t, seeded(), func(c *Config) {
		c.Switches = degrade.New(slog.New(slog.DiscardHandler), kv, prometheus.NewRegistry())
	})
	r := doHTTP(t, base, req{method: "PUT", path: "/v1/admin/degradation", token: testAdmin, body: `{"L3":true,"L3":false}`})
	wantStatus(t, r, 400)
	if msg := r.errorMessage(t); !strings.Contains(msg, `key "L3" appears twice`) {
		t.Errorf("message = %q; want it to name the repeated key", msg)
	}
	wantStatus(t, doHTTP(t, base, req{method: "PUT", path: "/v1/admin/degradation", token: testAdmin, body: `{"L1":false,"L3":false}`}), 200)
}

// TestCheckKeysNested checks objects below the top level: a free-form
// object (a map, an interface, raw JSON) may hold any keys, at any depth,
// but none twice; a struct's fields are named exactly at every depth.
func TestCheckKeysNested(t *testing.T) {
	type inner struct {
		Kind string `json:"kind"`
	}
	type body struct {
		Content string         `json:"content"`
		Data    map[string]any `json:"data"`
		Items   []inner        `json:"items"`
		Any     any            `json:"any"`
	}
	s := schemaOf(reflect.TypeFor[body]())
	tests := []struct {
		json string
		say  string // "" for accepted
	}{
		{`{"content":"x","data":{"a":{"b":[{"c":1,"C":2}]},"A":null}}`, ""},
		{`{"data":{"a":1,"a":2}}`, `key "a" appears twice`},
		{`{"data":{"a":{"b":[{"c":1},{"c":2,"c":3}]}}}`, `key "c" appears twice`},
		{`{"any":[[{"k":1,"k":1}]]}`, `key "k" appears twice`},
		{`{"items":[{"kind":"a"},{"Kind":"b"}]}`, `unknown field "Kind"`},
		{`{"items":[{"kind":"a","kind":"b"}]}`, `key "kind" appears twice`},
		{`{"data":{"s":"\ud800"}}`, "unpaired surrogate"},
		{`{"data":{"\ud83d\ude00":1,"😀":2}}`, `appears twice`},
	}
	for _, tt := range tests {
		err := checkKeys([]byte(tt.json), s)
		switch {
		case tt.say == "" && err != nil:
			t.Errorf("checkKeys(%s) = %v; want nil", tt.json, err)
		case tt.say != "" && (err == nil || !strings.Contains(err.Error(), tt.say)):
			t.Errorf("checkKeys(%s) = %v; want an error saying %q", tt.json, err, tt.say)
		}
	}
	// A wide object moves the duplicate check to a map.
	var b strings.Builder
	b.WriteString(`{"data":{`)
	for i := range 3 * smallObject {
		b.WriteString(`"k` + strings.Repeat("x", i) + `":1,`)
	}
	if err := checkKeys([]byte(b.String()+`"end":1}}`), s); err != nil {
		t.Errorf("wide object: %v; want nil", err)
	}
	if err := checkKeys([]byte(b.String()+`"kxx":1}}`), s); err == nil || !strings.Contains(err.Error(), `"kxx" appears twice`) {
		t.Errorf("wide object with a duplicate: %v; want it refused", err)
	}
}

// BenchmarkDecodePost measures what the strict checks add to decoding a
// typical post body (280 characters, some of them not ASCII): "before" is
// the API's decode as it was (encoding/json, then the content rule of
// then), "strict" decodeBytes with its UTF-8 check, key walk and the
// content rule of now; "added" the checks alone.
func BenchmarkDecodePost(b *testing.B) {
	body := []byte(`{"content":"` + strings.Repeat("Ça va? Fine 🙂 ", 20) + `"}`)
	b.Run("before", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var v createPostRequest
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&v); err != nil {
				b.Fatal(err)
			}
			if _, err := dec.Token(); err != io.EOF {
				b.Fatal(err)
			}
			// The content rule as it was.
			if strings.TrimSpace(v.Content) == "" || utf8.RuneCountInString(v.Content) > feed.MaxContentRunes || !utf8.ValidString(v.Content) {
				b.Fatal("refused")
			}
		}
	})
	// The checks strict adds, alone: strict's cost minus before's, measured
	// directly, which a loaded machine blurs less than a difference.
	b.Run("added", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		schema := schemaOf(reflect.TypeFor[createPostRequest]())
		content := strings.Repeat("Ça va? Fine 🙂 ", 20)
		for b.Loop() {
			if !utf8.Valid(body) || checkKeys(body, schema) != nil || feed.CheckContent(content) != nil {
				b.Fatal("refused")
			}
		}
	})
	b.Run("strict", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var v createPostRequest
			if err := decodeBytes(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzCheckKeys holds checkKeys, on a body of any shape, to a slow
// reference: encoding/json's tokens, with a set of keys per object. It
// never panics, even on input encoding/json would refuse, and on valid
// JSON it finds a repeated key exactly when the reference does.
func FuzzCheckKeys(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1,"b":{"a":2}}`, `{"a":1,"a":2}`, `[{"a":[{"b":1,"b":2}]}]`, `{"\u0061":1,"a":2}`,
		`{"a":"\ud83d\ude00"}`, `{"a":"\ud800"}`, `"x"`, `{"a":{"b":{}},"c":[]}`, `{"a"`, `{"a":1,`, `[`, `"\`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		err := checkKeys(body, nil) // must not panic, whatever body is
		// decode checks UTF-8 first; the reference would see two
		// different invalid keys as the same U+FFFD.
		if !json.Valid(body) || !utf8.Valid(body) {
			return
		}
		dup := referenceDuplicate(t, body)
		if dup && err == nil {
			t.Fatalf("checkKeys(%q) = nil; the reference finds a repeated key", body)
		}
		if !dup && err != nil && strings.Contains(err.Error(), "appears twice") {
			t.Fatalf("checkKeys(%q) = %v; the reference finds no repeated key", body, err)
		}
	})
}

// referenceDuplicate reports whether an object of body, which is valid
// JSON, holds a key twice.
func referenceDuplicate(t *testing.T, body []byte) bool {
	t.Helper()
	type frame struct {
		object  bool
		wantKey bool
		keys    map[string]bool
	}
	var stack []*frame
	value := func() { // a value ended: in an object, a key comes next
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // 1e700 is valid JSON, but no float64
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		top := (*frame)(nil)
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true, keys: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			value()
			continue
		}
		if top != nil && top.object && top.wantKey {
			k := tok.(string)
			if top.keys[k] {
				return true
			}
			top.keys[k] = true
			top.wantKey = false
			continue
		}
		value()
	}
}
