package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed/feedtest"
	"github.com/feedd/feedd/internal/testenv"
)

// TestSameAnswersOnPostgres: a feedd on MariaDB and one on PostgreSQL,
// loaded with the same data (one export file imported into each, so
// users, post ids and times are the same), answer the same requests with
// the same status, headers and body bytes, on each delivery model (hybrid
// with a low pull threshold, push, pull): users, their posts, home feeds
// paged to the end by their cursors, likes, top posts, follow lists,
// markers, mutes, blocks, exports, and error answers. Requests whose
// answers carry a value of the request's own time (a token's expiry, a
// marker's update, an edit, a new post's id) are not in the list.
func TestSameAnswersOnPostgres(t *testing.T) {
	feedtest.RequireServices(t, "127.0.0.1:6379", "127.0.0.1:5672")
	for _, mode := range []string{"hybrid", "push", "pull"} {
		t.Run(mode, func(t *testing.T) { testSameAnswers(t, mode) })
	}
}

func testSameAnswers(t *testing.T, mode string) {
	redisURL := testenv.Getenv("FEEDD_TEST_E2E_REDIS_URL", testRedis)
	my, pg := servicesEnv(t, mariaDB, redisURL), servicesEnv(t, postgreSQL, redisURL)
	// One admin token and JWT secret: the answers of both sides to
	// a request must not depend on which side's secret signed it.
	pg["FEEDD_ADMIN_TOKEN"], pg["FEEDD_JWT_SECRET"] = my["FEEDD_ADMIN_TOKEN"], my["FEEDD_JWT_SECRET"]
	for _, env := range []map[string]string{my, pg} {
		env["FEEDD_FANOUT_MODE"] = mode
		env["FEEDD_PULL_THRESHOLD"] = "3"
		env["FEEDD_RATE_USER_READ"] = "0"
	}

	file := writeSameData(t)
	for _, env := range []map[string]string{my, pg} {
		if out, err := runOnce(t, env, "import", "--writers", "1", "--export", file); err != nil {
			t.Fatalf("feedd import on %s: %v; output:\n%s", sqlName(env), err, out)
		}
	}
	tw := &twin{t: t, a: startFeedd(t, my, nil), b: startFeedd(t, pg, nil), tokens: map[string][2]string{}}
	for id := range sameUsers {
		tw.token(id)
	}

	// Users, and what the API refuses about them.
	for _, id := range []string{"101", "102", "104", "110", "112"} {
		tw.same(200, "GET", "/v1/users/"+id, "103", nil)
	}
	tw.same(404, "GET", "/v1/users/999999", "103", nil)                                        // 404 unknown user
	tw.same(400, "GET", "/v1/users/abc", "103", nil)                                           // 400 not an id
	tw.same(201, "POST", "/v1/users", "admin", map[string]string{"id": "113", "name": "mia"})  // 201, Location
	tw.same(409, "POST", "/v1/users", "admin", map[string]string{"id": "101", "name": "ann2"}) // 409 the id exists
	tw.same(400, "POST", "/v1/users", "admin", map[string]string{"id": "114", "name": ""})     // 400 bad name
	tw.same(403, "POST", "/v1/users", "103", map[string]string{"id": "115", "name": "x"})      // 403 not the admin
	tw.same(200, "GET", "/v1/users/113", "103", nil)

	// The relations made over the API: follows, mutes and blocks, and
	// their errors.
	tw.same(204, "PUT", "/v1/me/following/106", "110", nil)
	tw.same(400, "PUT", "/v1/me/following/110", "110", nil)    // 400 oneself
	tw.same(404, "PUT", "/v1/me/following/999999", "110", nil) // 404 unknown user
	tw.same(204, "DELETE", "/v1/me/following/105", "106", nil) // an unfollow
	tw.same(204, "PUT", "/v1/me/mutes/102", "105", nil)
	tw.same(204, "PUT", "/v1/me/mutes/107", "105", nil)
	tw.same(204, "PUT", "/v1/me/blocks/108", "105", nil)
	tw.same(204, "PUT", "/v1/me/blocks/111", "109", nil)
	tw.same(403, "PUT", "/v1/me/following/109", "111", nil) // blocked by 109
	tw.same(404, "GET", "/v1/users/109", "111", nil)        // blocked: hidden
	tw.same(200, "GET", "/v1/me/mutes", "105", nil)
	tw.same(200, "GET", "/v1/me/blocks", "105", nil)
	tw.same(200, "GET", "/v1/me/blocks", "109", nil)
	tw.same(200, "GET", "/v1/me/mutes?limit=1", "105", nil)

	// Posts: every author's, paged to the end, and single posts.
	posts := map[string][]string{} // author -> post ids, newest first
	for _, id := range []string{"101", "102", "103", "104", "105", "106", "107", "108"} {
		for _, page := range tw.pages("/v1/users/"+id+"/posts?limit=4", "110") {
			for _, it := range page.items() {
				posts[id] = append(posts[id], it["id"].(string))
			}
		}
		tw.pages("/v1/users/"+id+"/posts", "admin")
	}
	if len(posts["101"]) != 14 {
		t.Fatalf("101 has %d posts; want 14: %v", len(posts["101"]), posts["101"])
	}
	for _, p := range []string{posts["101"][0], posts["101"][13], posts["104"][1], posts["102"][0]} {
		tw.same(200, "GET", "/v1/posts/"+p, "103", nil)
	}
	tw.same(404, "GET", "/v1/posts/12345", "103", nil)                                                   // 404 unknown post
	tw.same(400, "GET", "/v1/posts/x1", "103", nil)                                                      // 400 not an id
	tw.same(403, "PATCH", "/v1/posts/"+posts["101"][0], "102", map[string]string{"content": "not mine"}) // 403
	tw.same(403, "DELETE", "/v1/posts/"+posts["101"][0], "102", nil)                                     // 403
	tw.same(400, "POST", "/v1/posts", "102", map[string]any{"content": ""})                              // 400
	tw.same(400, "GET", "/v1/users/101/posts?cursor=nonsense", "103", nil)                               // 400
	tw.same(400, "GET", "/v1/users/101/posts?limit=0", "103", nil)                                       // 400

	// Likes over the API, then, once their writer has stored them, the
	// lists and counts.
	tw.same(200, "PUT", "/v1/posts/"+posts["104"][0]+"/like", "110", nil)
	tw.same(200, "PUT", "/v1/posts/"+posts["104"][0]+"/like", "111", nil)
	tw.same(200, "DELETE", "/v1/posts/"+posts["101"][0]+"/like", "102", nil)
	tw.same(404, "PUT", "/v1/posts/12345/like", "110", nil) // 404
	// The likers of a post are read from SQL, where the likes writer
	// puts them a batch delay after their answers.
	for _, in := range []*instance{tw.a, tw.b} {
		testenv.Eventually(t, 20*time.Second, "the likes stored in SQL", func() bool {
			r := in.do("GET", "/v1/posts/"+posts["104"][0]+"/likes", in.admin, nil)
			q := in.do("GET", "/v1/posts/"+posts["101"][0]+"/likes", in.admin, nil)
			return r.status == 200 && strings.Contains(string(r.raw), `"110"`) && strings.Contains(string(r.raw), `"111"`) &&
				q.status == 200 && !strings.Contains(string(q.raw), `"102"`)
		})
	}
	for _, p := range []string{posts["101"][0], posts["101"][1], posts["104"][0], posts["102"][0]} {
		tw.pages("/v1/posts/"+p+"/likes?limit=2", "103")
	}
	for _, u := range []string{"102", "103", "110", "111"} {
		tw.pages("/v1/users/"+u+"/likes?limit=2", u)
	}
	tw.same(200, "GET", "/v1/posts/top", "103", nil)
	tw.same(200, "GET", "/v1/posts/top?window=30d&limit=5", "110", nil)
	tw.same(400, "GET", "/v1/posts/top?window=3650d", "admin", nil) // over 30d
	tw.same(400, "GET", "/v1/posts/top?cursor=x", "103", nil)       // 400

	// Follow lists.
	for _, u := range []string{"101", "104", "106", "110"} {
		tw.pages("/v1/users/"+u+"/followers?limit=3", "103")
		tw.pages("/v1/users/"+u+"/following?limit=3", "103")
	}

	// Home feeds: readers of pulled authors (101 and 104 have 3 or more
	// followers), of pushed ones, with mutes and blocks, in small pages
	// and whole; each twice, the second from the inboxes the first built.
	for range 2 {
		for _, r := range []string{"101", "102", "103", "105", "106", "109", "110", "111", "112"} {
			tw.pages("/v1/me/feed?limit=5", r)
			tw.pages("/v1/me/feed", r)
			tw.same(200, "GET", "/v1/me/markers/home", r, nil)
		}
	}
	tw.same(400, "GET", "/v1/me/feed?limit=1000", "102", nil)              // 400
	tw.same(401, "GET", "/v1/me/feed", "", nil)                            // 401
	tw.same(400, "PUT", "/v1/me/markers/home", "102", map[string]string{}) // 400

	// Exports, and who may have them.
	for _, u := range []string{"101", "105", "109"} {
		tw.same(200, "GET", "/v1/users/"+u+"/export", "admin", nil)
	}
	tw.same(200, "GET", "/v1/users/104/export", "104", nil)
	tw.same(403, "GET", "/v1/users/104/export", "103", nil)      // 403
	tw.same(404, "GET", "/v1/users/999999/export", "admin", nil) // 404

	// Deletion: the user's answers once it is gone.
	tw.same(403, "DELETE", "/v1/users/112", "103", nil) // 403
	tw.same(200, "GET", "/v1/users/112/followers", "103", nil)
	t.Logf("%d requests, the same answers", tw.n)
}

// sameUsers are the users of TestSameAnswersOnPostgres, by id.
var sameUsers = map[string]string{
	"101": "ann", "102": "ben", "103": "cleo", "104": "dan", "105": "eve", "106": "fay",
	"107": "gus", "108": "hal", "109": "ida", "110": "jo", "111": "kim", "112": "lee",
}

// writeSameData writes the data of TestSameAnswersOnPostgres as one
// export file: users with their creation times, follows, posts with
// external ids, data and times with milliseconds (some sharing one), and
// likes. The recent posts are an hour or two old, for the top posts.
func writeSameData(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	line := func(kv ...any) {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		j, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	for _, id := range slices.Sorted(maps.Keys(sameUsers)) {
		line("kind", "user", "id", id, "name", sameUsers[id])
		line("kind", "profile", "user_id", id, "created_at", "2024-02-29T23:59:59."+id[:3]+"Z", "follower_count", 0, "following_count", 0)
	}
	follows := map[string][]string{ // follower -> followees
		"102": {"101", "103", "104"}, "103": {"101", "102", "104"}, "104": {"101", "102"},
		"105": {"101", "102", "104", "107", "108"}, "106": {"101", "105"}, "107": {"101"},
		"108": {"101", "103"}, "109": {"101", "104", "111"}, "110": {"101", "103"},
		"111": {"109", "110"}, "101": {"103", "104"},
	}
	for _, f := range slices.Sorted(maps.Keys(follows)) {
		for _, e := range follows[f] {
			line("kind", "follow", "follower_id", f, "followee_id", e)
		}
	}
	recent := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	at := func(base time.Time, ms int) string {
		return base.Add(time.Duration(ms) * time.Millisecond).Format("2006-01-02T15:04:05.000Z")
	}
	old := time.Date(2019, 5, 1, 12, 0, 0, 0, time.UTC)
	authors := []string{"101", "102", "103", "104", "105", "106", "107", "108"}
	for i, a := range authors {
		n := 3 + i%3
		if a == "101" {
			n = 14
		}
		for k := range n {
			ext := fmt.Sprintf("blog-%s-%d", a, k)
			var created string
			switch {
			case k%4 == 3: // three posts of different authors in one millisecond
				created = at(old, 1000*k+7)
			case k%2 == 0:
				created = at(recent, 60000*i+1000*k+123)
			default:
				created = at(old.AddDate(0, i, 0), 86400000*k+999)
			}
			kv := []any{"kind", "post", "author_id", a, "external_id", ext, "content", fmt.Sprintf("post %d of %s — ünïcødé ✓ 🎉", k, sameUsers[a]), "created_at", created}
			if k%3 == 0 {
				kv = append(kv, "data", map[string]any{"tags": []string{"x", "y"}, "n": 1.5, "deep": map[string]any{"b": true, "a": nil}})
			}
			line(kv...)
		}
	}
	likes := [][3]string{ // user, author, external id
		{"102", "101", "blog-101-0"}, {"103", "101", "blog-101-0"}, {"104", "101", "blog-101-0"},
		{"105", "101", "blog-101-1"}, {"102", "101", "blog-101-2"}, {"110", "102", "blog-102-0"},
		{"103", "104", "blog-104-0"}, {"102", "104", "blog-104-0"}, {"106", "101", "blog-101-4"},
		{"107", "101", "blog-101-4"}, {"108", "103", "blog-103-2"}, {"109", "105", "blog-105-0"},
		{"103", "102", "blog-102-2"}, {"110", "101", "blog-101-6"}, {"111", "101", "blog-101-1"},
	}
	for _, l := range likes {
		line("kind", "like", "user_id", l[0], "author_id", l[1], "external_id", l[2])
	}
	path := filepath.Join(t.TempDir(), "same.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func sqlName(env map[string]string) string {
	if env["FEEDD_POSTGRES_DSN"] != "" {
		return "PostgreSQL"
	}
	return "MariaDB"
}

// twin is a pair of feedds that must answer alike: a on MariaDB, b on
// PostgreSQL.
type twin struct {
	t      *testing.T
	a, b   *instance
	tokens map[string][2]string // user id -> its token on a and on b
	n      int                  // requests compared
}

// token mints a token for user on each side.
func (tw *twin) token(user string) {
	tw.t.Helper()
	var tok [2]string
	for i, in := range []*instance{tw.a, tw.b} {
		tok[i] = in.must(201, "POST", "/v1/users/"+user+"/tokens", in.admin, nil).str("token")
	}
	tw.tokens[user] = tok
}

// unrelatedHeaders differ between two answers by design.
var unrelatedHeaders = []string{"Date", "X-Request-Id"}

// same sends one request to both sides as who ("admin", "" for none, or
// a user id) and fails the test unless the answers are the same: status,
// headers but unrelatedHeaders, and body bytes. It returns a's answer.
func (tw *twin) same(want int, method, path, who string, body any) resp {
	tw.t.Helper()
	tw.n++
	var r [2]resp
	for i, in := range []*instance{tw.a, tw.b} {
		tok := ""
		switch who {
		case "":
		case "admin":
			tok = in.admin
		default:
			tok = tw.tokens[who][i]
		}
		r[i] = in.do(method, path, tok, body)
	}
	for _, h := range unrelatedHeaders {
		r[0].header.Del(h)
		r[1].header.Del(h)
	}
	if r[0].status != want {
		tw.t.Errorf("%s %s as %q: status %d on MariaDB; want %d; body %s", method, path, who, r[0].status, want, r[0].raw)
	}
	if r[0].status != r[1].status || !bytes.Equal(r[0].raw, r[1].raw) || !headersEqual(r[0].header, r[1].header) {
		tw.t.Errorf("%s %s as %q: answers differ\nMariaDB:    %d %v\n%s\nPostgreSQL: %d %v\n%s",
			method, path, who, r[0].status, r[0].header, r[0].raw, r[1].status, r[1].header, r[1].raw)
	}
	if os.Getenv("FEEDD_TEST_SHOW_ANSWERS") != "" {
		tw.t.Logf("%s %s as %q: %d %s", method, path, who, r[0].status, r[0].raw)
	}
	return r[0]
}

func headersEqual(a, b http.Header) bool {
	return maps.EqualFunc(a, b, slices.Equal[[]string])
}

// pages reads a list to its end through next_cursor on both sides,
// comparing every page, and returns a's pages.
func (tw *twin) pages(path, who string) []resp {
	tw.t.Helper()
	var out []resp
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	next := path
	for len(out) < 100 {
		r := tw.same(200, "GET", next, who, nil)
		out = append(out, r)
		c, _ := r.body["next_cursor"].(string)
		if r.status != 200 || c == "" {
			return out
		}
		next = path + sep + "cursor=" + url.QueryEscape(c)
	}
	tw.t.Fatalf("GET %s: more than 100 pages", path)
	return nil
}
