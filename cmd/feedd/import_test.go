package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// importedGraph is what a generated graph's files hold, as the API
// should show it after an import.
type importedGraph struct {
	users     []string
	following map[string][]string // follower -> followees
	followers map[string]int
	posts     map[string][]string // author -> external ids
	likes     map[string]int      // author/external id -> likes
}

func readJSONL(t *testing.T, path string, each func(m map[string]any)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		each(m)
	}
}

func loadImportedGraph(t *testing.T, dir string) importedGraph {
	g := importedGraph{following: map[string][]string{}, followers: map[string]int{}, posts: map[string][]string{}, likes: map[string]int{}}
	readJSONL(t, filepath.Join(dir, "users.jsonl"), func(m map[string]any) { g.users = append(g.users, m["id"].(string)) })
	readJSONL(t, filepath.Join(dir, "follows.jsonl"), func(m map[string]any) {
		a, b := m["follower_id"].(string), m["followee_id"].(string)
		g.following[a] = append(g.following[a], b)
		g.followers[b]++
	})
	readJSONL(t, filepath.Join(dir, "posts.jsonl"), func(m map[string]any) {
		a := m["author_id"].(string)
		g.posts[a] = append(g.posts[a], m["external_id"].(string))
	})
	readJSONL(t, filepath.Join(dir, "likes.jsonl"), func(m map[string]any) {
		g.likes[m["author_id"].(string)+"/"+m["external_id"].(string)]++
	})
	return g
}

// importSummary runs feedd import on dir's files and returns its summary
// lines by kind: read, imported, unchanged, skipped.
func importSummary(t *testing.T, env map[string]string, dir string) map[string][4]int {
	t.Helper()
	var out, errs bytes.Buffer
	args := []string{"import"}
	for _, k := range []string{"users", "follows", "posts", "likes"} {
		args = append(args, "--"+k, filepath.Join(dir, k+".jsonl"))
	}
	if err := run(t.Context(), args, func(k string) string { return env[k] }, nil, &out, &errs); err != nil {
		t.Fatalf("feedd import: %v\n%s", err, errs.String())
	}
	sum := map[string][4]int{}
	for _, line := range strings.Split(out.String(), "\n")[1:] {
		var kind string
		var c [4]int
		if n, _ := fmt.Sscan(line, &kind, &c[0], &c[1], &c[2], &c[3]); n == 5 {
			sum[kind] = c
		}
	}
	return sum
}

// TestImportGraph imports a generated graph (a decade of history and the
// last days), reads the feeds over HTTP, and imports it again. On the
// services stacks the import runs while feedd serves and has built its
// readers' inboxes; on the embedded default, whose cache is the serving
// process's memory, before it starts.
func TestImportGraph(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		dir := t.TempDir()
		var out bytes.Buffer
		err := run(t.Context(), []string{"bench", "graph", "--jsonl", dir, "--out", filepath.Join(dir, "manifest.json"),
			"--users", "60", "--celebrities", "1", "--celebrity-followers", "25", "--cohorts", "12", "--cohort-readers", "3",
			"--cohort-celebrities", "1", "--sample-users", "5", "--posts-per-user", "4", "--following", "4",
			"--post-span", "150000h", "--likes-per-post", "3"}, func(string) string { return "" }, nil, &out, &out)
		if err != nil {
			t.Fatalf("bench graph --jsonl: %v\n%s", err, out.String())
		}
		g := loadImportedGraph(t, dir)
		want := map[string][4]int{
			"users": {len(g.users), len(g.users), 0, 0}, "follows": {0, 0, 0, 0},
			"posts": {0, 0, 0, 0}, "likes": {0, 0, 0, 0},
		}
		for _, fs := range g.following {
			want["follows"] = [4]int{want["follows"][0] + len(fs), want["follows"][1] + len(fs)}
		}
		for _, ps := range g.posts {
			want["posts"] = [4]int{want["posts"][0] + len(ps), want["posts"][1] + len(ps)}
		}
		for _, n := range g.likes {
			want["likes"] = [4]int{want["likes"][0] + n, want["likes"][1] + n}
		}

		// The readers: whoever follows the most, and a cohort reader.
		readers := slices.Clone(g.users)
		slices.SortStableFunc(readers, func(a, b string) int { return len(g.following[b]) - len(g.following[a]) })
		readers = readers[:3]

		// The check pages whole feeds of a few readers at 7 a page: more
		// reads from one user than the default per-user read rate allows.
		env = maps.Clone(env)
		env["FEEDD_RATE_USER_READ"] = "0"
		var in *instance
		var sum map[string][4]int
		var live *sseStream // readers[0]'s live stream, open across the import
		if serverOf(env) == nil {
			sum = importSummary(t, env, dir)
			in = startFeedd(t, env, nil)
		} else {
			in = startFeedd(t, env, nil)
			// Readers with inboxes built before the import: it must
			// drop them, or they would show an empty feed as complete.
			for _, r := range readers {
				in.must(201, "POST", "/v1/users", in.admin, map[string]any{"id": r, "name": "early"})
				tok := in.must(201, "POST", "/v1/users/"+r+"/tokens", in.admin, map[string]any{"ttl_seconds": 3600}).str("token")
				if got := in.feedAll(tok, 10); len(got) != 0 {
					t.Fatalf("reader %s's feed before the import: %v; want empty", r, got)
				}
				if live == nil {
					live = in.openStream("/v1/me/feed/stream", tok)
				}
			}
			sum = importSummary(t, env, dir)
			want["users"] = [4]int{len(g.users), len(g.users) - len(readers), len(readers), 0}
		}
		if !mapsEqual(sum, want) {
			t.Fatalf("import summary %v; want %v", sum, want)
		}

		check := func(t *testing.T, fresh string) {
			for _, r := range readers {
				tok := in.must(201, "POST", "/v1/users/"+r+"/tokens", in.admin, map[string]any{"ttl_seconds": 3600}).str("token")
				var wantPosts []string
				// A home feed holds the reader's own posts and its followees'.
				authors := append([]string{r}, slices.DeleteFunc(slices.Clone(g.following[r]), func(a string) bool { return a == r })...)
				for _, a := range authors {
					for _, ext := range g.posts[a] {
						wantPosts = append(wantPosts, a+"/"+ext)
					}
				}
				if len(wantPosts) == 0 {
					t.Fatalf("reader %s follows no one with posts: the graph is too small to test with", r)
				}
				var items []map[string]any
				testenv.Eventually(t, 10*time.Second, "reader "+r+"'s feed holds the imported posts", func() bool {
					items = feedItems(t, in, tok, 7)
					return len(items) == len(wantPosts)+min(len(fresh), 1)
				})
				if fresh != "" && items[0]["id"] != fresh {
					t.Errorf("reader %s: the newest post is %v; want the one made after the import, %s", r, items[0]["id"], fresh)
				}
				var got []string
				last := time.Now().Add(time.Hour)
				for _, it := range items {
					at, err := time.Parse(time.RFC3339Nano, it["created_at"].(string))
					if err != nil {
						t.Fatal(err)
					}
					if at.After(last) {
						t.Errorf("reader %s: post %v of %s after one of %s: want newest first", r, it["id"], at, last)
					}
					last = at
					if it["id"] == fresh {
						continue
					}
					key := it["author_id"].(string) + "/" + fmt.Sprint(it["external_id"])
					got = append(got, key)
					if n, _ := it["like_count"].(float64); int(n) != g.likes[key] {
						t.Errorf("post %s: like_count %v; want %d", key, it["like_count"], g.likes[key])
					}
				}
				slices.Sort(got)
				slices.Sort(wantPosts)
				if !slices.Equal(got, wantPosts) {
					t.Errorf("reader %s's feed: %d posts; want the %d of its followees and its own", r, len(got), len(wantPosts))
				}
			}
			for _, u := range g.users {
				p := in.must(200, "GET", "/v1/users/"+u, in.admin, nil)
				if p.body["follower_count"] != float64(g.followers[u]) || p.body["following_count"] != float64(len(g.following[u])) {
					t.Errorf("user %s: followers %v, following %v; want %d, %d", u, p.body["follower_count"], p.body["following_count"], g.followers[u], len(g.following[u]))
				}
			}
		}
		t.Run("imported", func(t *testing.T) { check(t, "") })

		// A post made now sorts above the whole imported history.
		author := g.following[readers[0]][0]
		tok := in.must(201, "POST", "/v1/users/"+author+"/tokens", in.admin, map[string]any{"ttl_seconds": 3600}).str("token")
		fresh := in.post(tok, "made after the import")
		if live != nil {
			// The stream opened before the import listens to the
			// followees the import gave its reader.
			live.expectPost(fresh)
		}

		// Again: nothing changes, while feedd serves.
		sum = importSummary(t, env, dir)
		for k, c := range want {
			want[k] = [4]int{c[0], 0, c[0], 0}
		}
		if !mapsEqual(sum, want) {
			t.Errorf("second import summary %v; want %v", sum, want)
		}
		readers = readers[:1] // who follows the author of the fresh post
		t.Run("again", func(t *testing.T) { check(t, fresh) })
	})
}

func mapsEqual(a, b map[string][4]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// feedItems pages through a whole home feed and returns its items.
func feedItems(t *testing.T, in *instance, token string, limit int) []map[string]any {
	t.Helper()
	var items []map[string]any
	cursor := ""
	for pages := 0; pages < 1000; pages++ {
		r := in.must(200, "GET", fmt.Sprintf("/v1/me/feed?limit=%d&cursor=%s", limit, cursor), token, nil)
		items = append(items, r.items()...)
		next, ok := r.body["next_cursor"].(string)
		if !ok {
			return items
		}
		cursor = next
	}
	t.Fatal("feed paging does not end")
	return nil
}

// TestImportUsage: a wrong command line is a usage error (exit status 2)
// that names what is wrong; a file that is not there is a failure (1);
// bad lines are a failure (1) after the summary.
func TestImportUsage(t *testing.T) {
	dir := t.TempDir()
	env := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"import"}, 2, "name at least one file"},
		{[]string{"import", "--users", "a", "--follows", "-", "--posts", "-"}, 2, "only one file can be standard input"},
		{[]string{"import", "--follows", "f", "--fanout-mode", "sideways"}, 2, `-fanout-mode "sideways": want push, pull or hybrid`},
		{[]string{"import", "--follows", "f", "--batch", "0"}, 2, `-batch "0": want 1 to 100000`},
		{[]string{"import", "--follows", filepath.Join(dir, "absent.jsonl")}, 1, "no such file"},
	} {
		var out, errs bytes.Buffer
		err := run(t.Context(), c.args, env, nil, &out, &errs)
		if exitCode(err) != c.code || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v: %v (exit %d); want exit %d saying %q", c.args, err, exitCode(err), c.code, c.says)
		}
	}

	users := filepath.Join(dir, "users.jsonl")
	if err := os.WriteFile(users, []byte("{\"id\":\"1\",\"name\":\"alice\"}\n{\"id\":\"2\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	err := run(t.Context(), []string{"import", "--data-dir", filepath.Join(dir, "data"), "--users", users}, env, nil, &out, &errs)
	if exitCode(err) != 1 || !strings.Contains(errs.String(), users+":2: name is required") {
		t.Errorf("import with a bad line: %v (exit %d), stderr:\n%s\nwant exit 1 and the line reported", err, exitCode(err), errs.String())
	}
	if !strings.Contains(out.String(), "users") || !strings.Contains(out.String(), "skipped") {
		t.Errorf("no summary on stdout:\n%s", out.String())
	}
}

// TestImportExportFile: what feedd export writes, feedd import --export
// takes as it is, from a file or standard input, into a fresh database,
// whose export is then the same (this one has no kind an import does not
// carry); the export given as a file of users is refused, pointing to
// --export.
func TestImportExportFile(t *testing.T) {
	dir := t.TempDir()
	env := func(string) string { return "" }
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	users := write("users.jsonl", `{"id":"1","name":"alice"}`+"\n")
	posts := write("posts.jsonl", `{"author_id":"1","external_id":"a","content":"old <&>","created_at":"2019-05-01T12:00:00.123Z","data":{"t":[1,"x"]}}`+"\n"+
		`{"author_id":"1","external_id":"b","content":"newer","created_at":"2025-05-01T12:00:00Z"}`+"\n")
	var out, errs bytes.Buffer
	if err := runImport(t.Context(), []string{"--data-dir", filepath.Join(dir, "a"), "--users", users, "--posts", posts}, env, nil, &out, &errs); err != nil {
		t.Fatalf("import: %v\n%s", err, errs.String())
	}
	exported := filepath.Join(dir, "alice.jsonl")
	if err := runExport(t.Context(), []string{"--data-dir", filepath.Join(dir, "a"), "-user", "1", "-out", exported}, env, nil, &out, &errs); err != nil {
		t.Fatalf("export: %v\n%s", err, errs.String())
	}
	doc, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{"file": {"--export", exported}, "stdin": {"--export", "-"}} {
		data := filepath.Join(dir, "fresh-"+name)
		var out, errs bytes.Buffer
		if err := runImport(t.Context(), append([]string{"--data-dir", data}, args...), env, bytes.NewReader(doc), &out, &errs); err != nil {
			t.Fatalf("%s: import --export: %v\n%s", name, err, errs.String())
		}
		if strings.Contains(errs.String(), "not imported") {
			t.Errorf("%s: stderr says something was not imported:\n%s", name, errs.String())
		}
		var again bytes.Buffer
		if err := runExport(t.Context(), []string{"--data-dir", data, "-user", "1"}, env, nil, &again, &errs); err != nil {
			t.Fatalf("%s: export: %v\n%s", name, err, errs.String())
		}
		if got, want := again.String(), string(doc); got != want || !strings.Contains(got, `"data":{"t":[1,"x"]}`) {
			t.Errorf("%s: export after the round trip\n%s\nwant\n%s", name, got, want)
		}
	}
	out.Reset()
	errs.Reset()
	err = runImport(t.Context(), []string{"--data-dir", filepath.Join(dir, "b"), "--users", exported}, env, nil, &out, &errs)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "--export "+exported) {
		t.Errorf("an export given as users: %v (exit %d); want exit 1 pointing to --export", err, exitCode(err))
	}
}
