package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// postViews returns every representation of post id a reader gets, by
// where it comes from: the reader's feed, the author's posts, the post
// itself, the likes of liker and the top posts. Each is the raw JSON of
// the post.
func (in *instance) postViews(token, id, author, liker string) map[string]json.RawMessage {
	in.t.Helper()
	views := map[string]json.RawMessage{}
	page := func(where, path string) {
		in.t.Helper()
		var body struct{ Items []json.RawMessage }
		if err := json.Unmarshal(in.must(200, "GET", path, token, nil).raw, &body); err != nil {
			in.t.Fatalf("GET %s: %v", path, err)
		}
		for _, it := range body.Items {
			var p struct{ ID string }
			if json.Unmarshal(it, &p) == nil && p.ID == id {
				views[where] = it
			}
		}
	}
	page("feed", "/v1/me/feed?limit=100")
	page("author page", "/v1/users/"+author+"/posts?limit=100")
	page("likes list", "/v1/users/"+liker+"/likes?limit=100")
	page("top posts", "/v1/posts/top?limit=100")
	views["post page"] = bytes.TrimSpace(in.must(200, "GET", "/v1/posts/"+id, token, nil).raw)
	return views
}

// viewsShow reports whether every representation of a post (postViews)
// holds its content and data (raw, as the API stores it: compact), and
// which do not.
func viewsShow(views map[string]json.RawMessage, content, data string) []string {
	var stale []string
	for _, where := range []string{"feed", "author page", "likes list", "top posts", "post page"} {
		v, ok := views[where]
		var p struct{ Content string }
		hasData := bytes.Contains(v, []byte(`"data":`+data+`,"created_at"`))
		if data == "" {
			hasData = !bytes.Contains(v, []byte(`"data":`))
		}
		if !ok || json.Unmarshal(v, &p) != nil || p.Content != content || !hasData {
			stale = append(stale, where)
		}
	}
	return stale
}

// TestPostDataAndEdits checks custom data and edits end to end: data is
// stored and served as sent (compacted) on every representation of a
// post, an edit by the author shows on all of them, in the order the post
// always had, and bad data or edits change nothing. On the services
// stacks a second process serving the same feeds shows the edit within
// FEEDD_HOT_POST_TTL, though it held the old post in memory.
func TestPostDataAndEdits(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		const hotTTL = 2 * time.Second
		env["FEEDD_HOT_POST_TTL"] = hotTTL.String()
		// The test polls five views of a post every 10 ms as one reader,
		// faster than the per-user read bucket lets a user read.
		env["FEEDD_RATE_USER_READ"] = "0"
		in := startFeedd(t, env, nil)
		aliceID, alice := in.user("alice")
		bobID, bob := in.user("bob")
		in.follow(bob, aliceID)

		const sent = `{ "title": "Launch <day> & more", "image": "https://example.com/a.png?x=1&y=2",
			"type": "link", "n": [1, 2.50, {"deep": {"er": null}}], "emoji": "🚀" }`
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(sent)); err != nil {
			t.Fatal(err)
		}
		data := compact.String()

		before := in.post(alice, "a plain post")
		created := in.must(201, "POST", "/v1/posts", alice, `{"content":"with data","data":`+sent+`}`)
		if !bytes.Contains(created.raw, []byte(`"data":`+data)) {
			t.Fatalf("created post = %s; want data %s", created.raw, data)
		}
		if _, ok := created.body["edited_at"]; ok {
			t.Fatalf("created post = %s; want no edited_at", created.raw)
		}
		id := created.str("id")
		after := in.post(alice, "another plain post")
		plain := in.must(200, "GET", "/v1/posts/"+before, bob, nil)
		if _, ok := plain.body["data"]; ok {
			t.Errorf("a post without data = %s; want no data field", plain.raw)
		}
		in.must(200, "PUT", "/v1/posts/"+id+"/like", bob, nil)
		order := []string{after, id, before}
		in.feedEventually(bob, 20, order)
		testenv.Eventually(t, 10*time.Second, "data on every representation of the post", func() bool {
			return len(viewsShow(in.postViews(bob, id, aliceID, bobID), "with data", data)) == 0
		})

		// Bad data and bad edits are refused and change nothing.
		for _, bad := range []string{`[1]`, `"x"`, `3`, `null`, strings.Repeat(`{"a":`, 33) + "1" + strings.Repeat("}", 33),
			`{"s":"` + strings.Repeat("x", 16<<10) + `"}`} {
			status := 400
			if bad == "null" {
				status = 201 // null is no data on a new post
			}
			r := in.must(status, "POST", "/v1/posts", alice, `{"content":"bad data","data":`+bad+`}`)
			if bad == "null" {
				order = append([]string{r.str("id")}, order...)
			} else {
				in.must(400, "PATCH", "/v1/posts/"+id, alice, `{"data":`+bad+`}`)
			}
		}
		in.feedEventually(bob, 20, order)
		for _, bad := range []string{`{}`, `{"content":""}`, `{"content":null}`, `{"content":"x","extra":1}`} {
			in.must(400, "PATCH", "/v1/posts/"+id, alice, bad)
		}
		in.must(403, "PATCH", "/v1/posts/"+id, bob, `{"content":"not mine"}`)
		in.must(404, "PATCH", "/v1/posts/999999999", alice, `{"content":"nobody's"}`)

		// A second process reads the same post, so it holds it in memory.
		var second *instance
		if serverOf(env) != nil {
			second = startRole(t, "serve", env, nil)
			if stale := viewsShow(second.postViews(bob, id, aliceID, bobID), "with data", data); len(stale) > 0 {
				t.Fatalf("second process: data missing from %v", stale)
			}
		}

		const newData = `{"title":"Edited","v":2}`
		edited := in.must(200, "PATCH", "/v1/posts/"+id, alice, `{"content":"edited", "data": {"title": "Edited", "v": 2}}`)
		editedAt := edited.str("edited_at")
		if edited.str("content") != "edited" || !bytes.Contains(edited.raw, []byte(`"data":`+newData)) ||
			edited.str("id") != id || edited.str("created_at") != created.str("created_at") || !timeRE(editedAt) {
			t.Fatalf("edit = %s; want the post with its new content and data, and edited_at", edited.raw)
		}
		editDone := time.Now()
		// Bob has written nothing: on a stack with a read replica his reads
		// may lag the edit by the replica's lag, as documented; elsewhere
		// the editing process shows it at once.
		shows := func(what, data string) {
			t.Helper()
			if readsFromReplica(env) {
				testenv.Eventually(t, 10*time.Second, "bob's views show the post "+what, func() bool {
					return len(viewsShow(in.postViews(bob, id, aliceID, bobID), what, data)) == 0
				})
				return
			}
			if stale := viewsShow(in.postViews(bob, id, aliceID, bobID), what, data); len(stale) > 0 {
				t.Errorf("the editing process shows the post not %s on %v", what, stale)
			}
		}
		shows("edited", newData)
		if got := in.feedAll(bob, 2); !slices.Equal(got, order) {
			t.Errorf("feed after the edit = %v; want the order unchanged, %v", got, order)
		}
		if second != nil {
			// Its copy in memory was loaded before the edit, so it expires
			// within the hot ttl of the edit (plus a second of slack for
			// a page's requests on this machine); until then, the post may
			// show as it was, as documented.
			testenv.Eventually(t, hotTTL+time.Second, "the second process shows the edit", func() bool {
				return len(viewsShow(second.postViews(bob, id, aliceID, bobID), "edited", newData)) == 0
			})
			t.Logf("second process showed the edit %v after it", time.Since(editDone).Round(time.Millisecond))
		}

		// Removing the data leaves a post without the field.
		r := in.must(200, "PATCH", "/v1/posts/"+id, alice, `{"data":null}`)
		if _, ok := r.body["data"]; ok || r.str("content") != "edited" || r.str("edited_at") <= editedAt {
			t.Errorf("edit removing data = %s; want no data, content kept, a later edited_at", r.raw)
		}
		shows("edited", "")

		in.must(204, "DELETE", "/v1/posts/"+id, alice, nil)
		in.must(404, "PATCH", "/v1/posts/"+id, alice, `{"content":"back from the dead"}`)
	})
}

// readsFromReplica reports whether env's feedd reads lag-tolerant data
// from a read replica.
func readsFromReplica(env map[string]string) bool {
	return env["FEEDD_MYSQL_READ_DSN"] != "" || env["FEEDD_POSTGRES_READ_DSN"] != ""
}

// timeRE reports whether s is RFC 3339 in UTC with milliseconds.
func timeRE(s string) bool {
	t, err := time.Parse("2006-01-02T15:04:05.000Z07:00", s)
	return err == nil && strings.HasSuffix(s, "Z") && t.Format("2006-01-02T15:04:05.000Z07:00") == s
}
