package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// exportLines gets GET /v1/users/{id}/export with token and returns its
// body, failing unless it is a 200 of JSON Lines.
func (in *instance) exportBody(id, token string) []byte {
	in.t.Helper()
	req, err := http.NewRequest("GET", in.url+"/v1/users/"+id+"/export", nil)
	if err != nil {
		in.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := in.http.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		in.t.Fatalf("export of %s: %v", id, err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/x-ndjson" {
		in.t.Fatalf("export of %s: status %d, Content-Type %q; want 200 application/x-ndjson; body %s",
			id, res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	return body
}

// exportLine is one line of an export, by kind.
type exportLine map[string]any

func splitExport(t *testing.T, body []byte) map[string][]exportLine {
	t.Helper()
	kinds := map[string][]exportLine{}
	for i, raw := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
		var l exportLine
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("export line %d %q: %v", i+1, raw, err)
		}
		kind, _ := l["kind"].(string)
		kinds[kind] = append(kinds[kind], l)
	}
	return kinds
}

// importKeys are the fields of feedd import's lines: an export's lines of
// these kinds hold exactly these, and "kind" (data is optional).
var importKeys = map[string][]string{
	"user":   {"id", "kind", "name"},
	"follow": {"followee_id", "follower_id", "kind"},
	"post":   {"author_id", "content", "created_at", "data", "external_id", "kind"},
	"like":   {"author_id", "external_id", "kind", "user_id"},
}

// TestExport: a user with one of everything exports it over the API (as
// themselves and as the admin) and with `feedd export`, on every stack,
// and every kind of line says what the API shows: profile, marker,
// follows both ways, mutes, blocks, posts with their data and external
// ids, likes. Another user's token is 403; an unknown or deleted user 404.
func TestExport(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		alice, aliceTok := in.user("alice")
		bob, bobTok := in.user("bob")
		carol, carolTok := in.user("carol")
		dave, _ := in.user("dave")
		eve, _ := in.user("eve")
		in.follow(aliceTok, bob)
		in.follow(carolTok, alice)
		p1 := in.must(201, "POST", "/v1/posts", aliceTok, map[string]any{
			"content": "first <post> & more", "data": map[string]any{"title": "t", "n": []int{1, 2}}, "external_id": "blog-1",
		}).str("id")
		p2 := in.post(aliceTok, "second")
		b1 := in.post(bobTok, "bob's")
		for _, p := range []string{p1, b1} {
			in.must(200, "PUT", "/v1/posts/"+p+"/like", aliceTok, nil)
		}
		in.must(204, "PUT", "/v1/me/mutes/"+dave, aliceTok, nil)
		in.must(204, "PUT", "/v1/me/blocks/"+eve, aliceTok, nil)
		in.must(204, "PUT", "/v1/me/mutes/"+alice, carolTok, nil) // carol's, not alice's
		in.must(200, "PUT", "/v1/me/markers/home", aliceTok, map[string]any{"last_read_id": b1})

		// Likes reach SQL in batches, shortly after they are answered.
		var body []byte
		var kinds map[string][]exportLine
		testenv.Eventually(t, 10*time.Second, "both likes in the export", func() bool {
			body = in.exportBody(alice, aliceTok)
			kinds = splitExport(t, body)
			return len(kinds["like"]) == 2
		})
		for kind, lines := range kinds {
			want, ok := importKeys[kind]
			for _, l := range lines {
				if keys := slices.Sorted(maps.Keys(l)); ok && !slices.Equal(keys, want) && !slices.Equal(keys, slices.DeleteFunc(slices.Clone(want), func(k string) bool { return k == "data" })) {
					t.Errorf("%s line %v: keys %v; want the import format's %v", kind, l, keys, want)
				}
			}
		}

		// user and profile are GET /v1/users/{id}.
		prof := in.must(200, "GET", "/v1/users/"+alice, aliceTok, nil)
		if u := kinds["user"]; len(u) != 1 || u[0]["id"] != alice || u[0]["name"] != prof.body["name"] {
			t.Errorf("user lines %v; want one of %s, %v", u, alice, prof.body["name"])
		}
		if p := kinds["profile"]; len(p) != 1 || p[0]["user_id"] != alice ||
			p[0]["follower_count"] != prof.body["follower_count"] || p[0]["following_count"] != prof.body["following_count"] {
			t.Errorf("profile lines %v; want the counts of %v", p, prof.body)
		}
		// marker is GET /v1/me/markers/home.
		mk := in.must(200, "GET", "/v1/me/markers/home", aliceTok, nil)
		if m := kinds["marker"]; len(m) != 1 || m[0]["last_read_id"] != mk.body["last_read_id"] || m[0]["updated_at"] != mk.body["updated_at"] {
			t.Errorf("marker lines %v; want %v", m, mk.body)
		}
		// follows are the two follow lists.
		var wantFollows, gotFollows []string
		for _, it := range in.must(200, "GET", "/v1/users/"+alice+"/following", aliceTok, nil).items() {
			wantFollows = append(wantFollows, alice+">"+it["id"].(string))
		}
		for _, it := range in.must(200, "GET", "/v1/users/"+alice+"/followers", aliceTok, nil).items() {
			wantFollows = append(wantFollows, it["id"].(string)+">"+alice)
		}
		for _, l := range kinds["follow"] {
			gotFollows = append(gotFollows, l["follower_id"].(string)+">"+l["followee_id"].(string))
		}
		if !slices.Equal(gotFollows, wantFollows) || !slices.Equal(wantFollows, []string{alice + ">" + bob, carol + ">" + alice}) {
			t.Errorf("follow lines %v; the API shows %v", gotFollows, wantFollows)
		}
		// mutes and blocks are the user's own lists.
		for _, c := range []struct{ kind, list, who, target string }{
			{"mute", "/v1/me/mutes", "user_id", "target_id"}, {"block", "/v1/me/blocks", "blocker_id", "blocked_id"},
		} {
			var want, got []string
			for _, it := range in.must(200, "GET", c.list, aliceTok, nil).items() {
				want = append(want, it["id"].(string))
			}
			for _, l := range kinds[c.kind] {
				if l[c.who] != alice {
					t.Errorf("%s line %v is not alice's", c.kind, l)
				}
				got = append(got, l[c.target].(string))
			}
			if !slices.Equal(got, want) || len(want) != 1 {
				t.Errorf("%s lines name %v; %s shows %v", c.kind, got, c.list, want)
			}
		}
		// posts are GET /v1/users/{id}/posts, newest first, field for
		// field; a post without an external id goes by its feedd id.
		items := in.must(200, "GET", "/v1/users/"+alice+"/posts", aliceTok, nil).items()
		if len(items) != 2 || len(kinds["post"]) != 2 {
			t.Fatalf("%d post lines, %d posts in the API; want 2 and 2", len(kinds["post"]), len(items))
		}
		for i, it := range items {
			l := kinds["post"][i]
			ext := it["id"]
			if e, ok := it["external_id"]; ok {
				ext = e
			}
			if l["author_id"] != alice || l["external_id"] != ext || l["content"] != it["content"] ||
				l["created_at"] != it["created_at"] || !jsonEqual(t, l["data"], it["data"]) {
				t.Errorf("post line %v; the API shows %v", l, it)
			}
		}
		if kinds["post"][0]["external_id"] != p2 || kinds["post"][1]["external_id"] != "blog-1" {
			t.Errorf("post lines' external ids: %v, %v; want %s (its feedd id) and blog-1", kinds["post"][0]["external_id"], kinds["post"][1]["external_id"], p2)
		}
		// likes are GET /v1/users/{id}/likes, named as posts are.
		var wantLikes, gotLikes []string
		for _, it := range in.must(200, "GET", "/v1/users/"+alice+"/likes", aliceTok, nil).items() {
			ext := it["id"].(string)
			if e, ok := it["external_id"].(string); ok {
				ext = e
			}
			wantLikes = append(wantLikes, it["author_id"].(string)+"/"+ext)
		}
		for _, l := range kinds["like"] {
			if l["user_id"] != alice {
				t.Errorf("like line %v is not alice's", l)
			}
			gotLikes = append(gotLikes, l["author_id"].(string)+"/"+l["external_id"].(string))
		}
		slices.Sort(wantLikes)
		slices.Sort(gotLikes)
		if !slices.Equal(gotLikes, wantLikes) || !slices.Equal(gotLikes, slices.Sorted(slices.Values([]string{alice + "/blog-1", bob + "/" + b1}))) {
			t.Errorf("like lines %v; the API shows %v", gotLikes, wantLikes)
		}
		if len(kinds) != 8 {
			t.Errorf("kinds %v; want user, profile, marker, follow, mute, block, post, like", slices.Sorted(maps.Keys(kinds)))
		}

		// The admin gets the same; another user 403.
		if got := in.exportBody(alice, in.admin); !bytes.Equal(got, body) {
			t.Errorf("the admin's export differs from alice's:\n%s\n%s", got, body)
		}
		if r := in.do("GET", "/v1/users/"+alice+"/export", bobTok, nil); r.status != 403 || r.errCode() != "forbidden" {
			t.Errorf("bob exports alice: status %d, code %q; want 403 forbidden", r.status, r.errCode())
		}

		// feedd export writes the same document from the store.
		getenv := func(k string) string { return env[k] }
		out := filepath.Join(t.TempDir(), "alice.jsonl")
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"export", "-user", alice, "-out", out}, getenv, nil, &stdout, &stderr); err != nil {
			t.Fatalf("feedd export: %v; stderr %s", err, stderr.String())
		}
		file, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(file, body) {
			t.Errorf("feedd export wrote\n%s\nthe API answered\n%s", file, body)
		}
		if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("export file mode %v, %v; want 0600", fi.Mode().Perm(), err)
		}
		stdout.Reset()
		if err := run(context.Background(), []string{"export", "-user", alice}, getenv, nil, &stdout, &stderr); err != nil || !bytes.Equal(stdout.Bytes(), body) {
			t.Errorf("feedd export to standard output: %v, %d bytes; want the API's %d", err, stdout.Len(), len(body))
		}
		// Unknown and deleted users 404. Deleting dave purges, in the
		// background, the rows that name him (alice's mute of him too):
		// hence after the exports of alice.
		in.must(202, "DELETE", "/v1/users/"+dave, in.admin, nil)
		for _, id := range []string{"999999999", dave} {
			if r := in.do("GET", "/v1/users/"+id+"/export", in.admin, nil); r.status != 404 || r.errCode() != "not_found" {
				t.Errorf("export of %s: status %d, code %q; want 404 not_found", id, r.status, r.errCode())
			}
		}
		err = run(context.Background(), []string{"export", "-user", dave, "-out", out + ".dave"}, getenv, nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "not_found") || exitCode(err) != 1 {
			t.Errorf("feedd export of a deleted user: %v (exit %d); want not found, exit 1", err, exitCode(err))
		}
		if _, err := os.Stat(out + ".dave"); !os.IsNotExist(err) {
			t.Errorf("a failed export left its file: %v", err)
		}
		if err := run(context.Background(), []string{"export"}, getenv, nil, io.Discard, io.Discard); exitCode(err) != 2 {
			t.Errorf("feedd export without -user: %v (exit %d); want a usage error, exit 2", err, exitCode(err))
		}
	})
}

// jsonEqual reports whether two decoded JSON values are the same.
func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
