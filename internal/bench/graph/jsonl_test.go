package graph

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/jsonl"
)

// TestJSONLWriter: the files hold the graph's every user, edge and post,
// LikesPerPost likes of each post by distinct users, each line a JSON
// object of the fields feedd import reads (decoded strictly, as the
// import does), and likes name posts that are in posts.jsonl.
func TestJSONLWriter(t *testing.T) {
	opts := DefaultOptions()
	opts.Users, opts.CelebrityFollowers, opts.Cohorts, opts.SampleUsers, opts.PostsPerUser = 500, 100, []int{20}, 10, 3
	g, err := Plan(opts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := NewJSONLWriter(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := g.Load(t.Context(), w, 3, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(name string, line any, fields ...string) []map[string]string {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []map[string]string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var l map[string]any
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s: %q: %v", name, sc.Text(), err)
			}
			if err := jsonl.Decode(sc.Bytes(), line); err != nil {
				t.Fatalf("%s: %q: %v", name, sc.Text(), err)
			}
			row := map[string]string{}
			for _, k := range fields {
				s, ok := l[k].(string)
				if !ok || s == "" {
					t.Fatalf("%s: %q lacks the string %s", name, sc.Text(), k)
				}
				row[k] = s
			}
			out = append(out, row)
		}
		return out
	}
	users := read("users.jsonl", &jsonl.UserLine{}, "id", "name")
	follows := read("follows.jsonl", &jsonl.FollowLine{}, "follower_id", "followee_id")
	posts := read("posts.jsonl", &jsonl.PostLine{}, "author_id", "external_id", "content", "created_at")
	likes := read("likes.jsonl", &jsonl.LikeLine{}, "user_id", "author_id", "external_id")
	if len(users) != m.Users || int64(len(follows)) != m.Follows || int64(len(posts)) != m.Posts || len(likes) != 3*len(posts) {
		t.Errorf("%d users, %d follows, %d posts, %d likes; want %d, %d, %d, %d",
			len(users), len(follows), len(posts), len(likes), m.Users, m.Follows, m.Posts, 3*m.Posts)
	}
	post := map[string]bool{}
	for _, p := range posts {
		post[p["author_id"]+"/"+p["external_id"]] = true
	}
	pair := map[string]bool{}
	for _, l := range likes {
		if !post[l["author_id"]+"/"+l["external_id"]] {
			t.Fatalf("like %v names no post of posts.jsonl", l)
		}
		k := l["user_id"] + "/" + l["author_id"] + "/" + l["external_id"]
		if pair[k] {
			t.Fatalf("like %v twice", l)
		}
		pair[k] = true
	}
}
