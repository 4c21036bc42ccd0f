package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// handlesOf returns the handles of a search's items, "" for a user
// without one, and their names.
func handlesOf(r resp) (handles, names []string) {
	for _, it := range r.items() {
		h, _ := it["handle"].(string)
		n, _ := it["name"].(string)
		handles, names = append(handles, h), append(names, n)
	}
	return handles, names
}

// purged waits for the purge of a deleted user to be done.
func (in *instance) purged(id string) {
	in.t.Helper()
	testenv.Eventually(in.t, 30*time.Second, "the purge of "+id+" is done", func() bool {
		return in.must(200, "GET", "/v1/admin/jobs/"+id, in.admin, nil).str("status") == "done"
	})
}

// TestHandles: handles are unique whatever their case (also when two
// users of two shards take one at once), renaming frees the old one,
// by-handle finds the holder, the search lists handle prefix matches
// before name matches and leaves out users a block stands between either
// way, relationships say each state, a purge frees the handle, and an
// export carries it through `feedd import` back.
func TestHandles(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_RATE_USER_READ", "0")
		admin := in.admin
		create := func(want int, body map[string]any) resp {
			t.Helper()
			return in.must(want, "POST", "/v1/users", admin, body)
		}

		// Unique whatever the case; bad input changes nothing.
		alice := create(201, map[string]any{"name": "Alice", "handle": "Alice"})
		if h := alice.str("handle"); h != "alice" {
			t.Fatalf("handle Alice stored as %q; want alice", h)
		}
		if r := create(409, map[string]any{"name": "imposter", "handle": "ALICE", "id": "9001"}); r.errCode() != "handle_taken" {
			t.Fatalf("a taken handle in capitals: %s; want handle_taken", r.raw)
		}
		in.must(404, "GET", "/v1/users/9001", admin, nil)
		for _, bad := range []any{"", "a-b", "ünï", "x123456789012345678901234567890", 7, "a b"} {
			if r := create(400, map[string]any{"name": "bad", "handle": bad, "id": "9002"}); r.errCode() != "invalid" {
				t.Fatalf("handle %v: %s; want invalid", bad, r.raw)
			}
		}
		in.must(404, "GET", "/v1/users/9002", admin, nil)
		noHandle := create(201, map[string]any{"name": "nobody's", "handle": nil})
		if _, ok := noHandle.body["handle"]; ok {
			t.Fatalf("a user without a handle: %s; want no handle key", noHandle.raw)
		}

		// By handle, whatever the case.
		if got := in.must(200, "GET", "/v1/users/by-handle/ALICE", admin, nil); got.str("id") != alice.str("id") {
			t.Fatalf("by-handle ALICE: %s; want alice", got.raw)
		}
		in.must(404, "GET", "/v1/users/by-handle/nobody", admin, nil)
		in.must(404, "GET", "/v1/users/by-handle/followers", admin, nil)
		in.must(400, "GET", "/v1/users/by-handle/a-b", admin, nil)

		// Renaming frees the old handle, at once; a taken one changes nothing.
		aliceID := alice.str("id")
		if r := in.must(200, "PATCH", "/v1/users/"+aliceID, admin, map[string]any{"handle": "Alice2"}); r.str("handle") != "alice2" || r.str("name") != "Alice" {
			t.Fatalf("rename: %s", r.raw)
		}
		in.must(404, "GET", "/v1/users/by-handle/alice", admin, nil)
		bob := create(201, map[string]any{"name": "Bob", "handle": "alice"})
		bobID := bob.str("id")
		bobTok := in.must(201, "POST", "/v1/users/"+bobID+"/tokens", admin, nil).str("token")
		if r := in.must(409, "PATCH", "/v1/me", bobTok, map[string]any{"handle": "ALICE2", "name": "Robert"}); r.errCode() != "handle_taken" {
			t.Fatalf("rename to a taken handle: %s", r.raw)
		}
		if r := in.must(200, "GET", "/v1/users/"+bobID, bobTok, nil); r.str("name") != "Bob" || r.str("handle") != "alice" {
			t.Fatalf("after a refused rename: %s; want Bob, alice", r.raw)
		}
		in.must(400, "PATCH", "/v1/me", bobTok, map[string]any{})
		in.must(400, "PATCH", "/v1/me", bobTok, map[string]any{"handle": "no way"})
		in.must(403, "PATCH", "/v1/users/"+bobID, bobTok, map[string]any{"name": "x"})
		in.must(404, "PATCH", "/v1/users/987654", admin, map[string]any{"name": "x"})
		if r := in.must(200, "PATCH", "/v1/me", bobTok, map[string]any{"name": "Bobby"}); r.str("handle") != "alice" || r.str("name") != "Bobby" {
			t.Fatalf("a name change: %s; want the handle kept", r.raw)
		}

		// Two users take one handle at once, from every shard: one wins.
		const racers = 8
		var wg sync.WaitGroup
		statuses := make([]int, racers)
		for i := range racers {
			wg.Go(func() {
				h := "Racer"
				if i%2 == 1 {
					h = "rAcEr"
				}
				statuses[i] = in.do("POST", "/v1/users", admin, map[string]any{"name": "racer", "handle": h, "id": fmt.Sprint(7100 + i)}).status
			})
		}
		wg.Wait()
		slices.Sort(statuses)
		if want := append([]int{201}, slices.Repeat([]int{409}, racers-1)...); !slices.Equal(statuses, want) {
			t.Fatalf("%d users creating handle racer at once: %v; want one 201, the rest 409", racers, statuses)
		}
		in.must(200, "GET", "/v1/users/by-handle/racer", admin, nil)

		// The search: handle prefix matches first, in handle order, then
		// name matches in name order, each user once.
		viewerID, viewer := in.user("viewer")
		zb := create(201, map[string]any{"name": "Second", "handle": "zq_b"}).str("id")
		create(201, map[string]any{"name": "Zq first", "handle": "zq_a"})
		create(201, map[string]any{"name": "Zq Carol"})
		create(201, map[string]any{"name": "zqx dave", "handle": "other_d"})
		za := in.must(200, "GET", "/v1/users/by-handle/zq_a", admin, nil).str("id")
		handles, names := handlesOf(in.must(200, "GET", "/v1/users/search?q=ZQ", viewer, nil))
		if want := []string{"zq_a", "zq_b", "", "other_d"}; !slices.Equal(handles, want) || names[2] != "Zq Carol" {
			t.Fatalf("search zq: handles %v names %v; want %v (Zq Carol third)", handles, names, want)
		}
		if h, _ := handlesOf(in.must(200, "GET", "/v1/users/search?q=zq&limit=2", viewer, nil)); !slices.Equal(h, []string{"zq_a", "zq_b"}) {
			t.Fatalf("search zq, limit 2: %v", h)
		}
		if h, _ := handlesOf(in.must(200, "GET", "/v1/users/search?q=@zq", viewer, nil)); !slices.Equal(h, []string{"zq_a", "zq_b"}) {
			t.Fatalf("search @zq (handles only): %v", h)
		}
		if h, names := handlesOf(in.must(200, "GET", "/v1/users/search?q=zq%20c", viewer, nil)); len(h) != 1 || names[0] != "Zq Carol" {
			t.Fatalf("search 'zq c' (names only): %v %v", h, names)
		}
		in.must(400, "GET", "/v1/users/search", viewer, nil)
		in.must(400, "GET", "/v1/users/search?q=%20", viewer, nil)
		in.must(400, "GET", "/v1/users/search?q=zq&limit=0", viewer, nil)
		in.must(400, "GET", "/v1/users/search?q=zq&q=x", viewer, nil)

		// Blocked users, either way, are left out of the search and by-handle.
		in.must(204, "PUT", "/v1/me/blocks/"+zb, viewer, nil)
		zaTok := in.must(201, "POST", "/v1/users/"+za+"/tokens", admin, nil).str("token")
		in.must(204, "PUT", "/v1/me/blocks/"+viewerID, zaTok, nil)
		if h, _ := handlesOf(in.must(200, "GET", "/v1/users/search?q=zq", viewer, nil)); !slices.Equal(h, []string{"", "other_d"}) {
			t.Fatalf("search zq with blocks both ways: %v; want the name matches only", h)
		}
		if h, _ := handlesOf(in.must(200, "GET", "/v1/users/search?q=zq", admin, nil)); len(h) != 4 {
			t.Fatalf("the admin's search zq: %v; want all 4", h)
		}
		in.must(404, "GET", "/v1/users/by-handle/zq_a", viewer, nil)
		in.must(404, "GET", "/v1/users/by-handle/zq_b", viewer, nil)

		// Relationships, in each state.
		rel := func(tok, id string) map[string]any {
			t.Helper()
			return in.must(200, "GET", "/v1/me/relationships/"+id, tok, nil).body
		}
		want := func(following, followedBy, muting, blocking bool) map[string]any {
			return map[string]any{"following": following, "followed_by": followedBy, "reposts": following, "muting": muting, "blocking": blocking}
		}
		check := func(what string, got, want map[string]any) {
			t.Helper()
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("%s: relationship %v; want %v", what, got, want)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s: relationship %v has other keys than %v", what, got, want)
			}
		}
		check("strangers", rel(viewer, bobID), want(false, false, false, false))
		in.follow(viewer, bobID)
		check("following", rel(viewer, bobID), want(true, false, false, false))
		check("followed by", rel(bobTok, viewerID), want(false, true, false, false))
		in.follow(bobTok, viewerID)
		in.must(204, "PUT", "/v1/me/mutes/"+bobID, viewer, nil)
		check("both ways, muted", rel(viewer, bobID), want(true, true, true, false))
		in.must(204, "PUT", "/v1/me/blocks/"+bobID, viewer, nil)
		check("blocking", rel(viewer, bobID), want(false, false, true, true))
		in.must(404, "GET", "/v1/me/relationships/"+viewerID, bobTok, nil) // blocked by the viewer
		check("blocking, from the other side of a block", rel(viewer, zb), want(false, false, false, true))
		in.must(404, "GET", "/v1/me/relationships/"+za, viewer, nil) // za blocks the viewer
		in.must(400, "GET", "/v1/me/relationships/"+viewerID, viewer, nil)
		in.must(404, "GET", "/v1/me/relationships/987654", viewer, nil)
		in.must(401, "GET", "/v1/me/relationships/"+bobID, "", nil)

		// A user's handle in every list that shows users.
		in.must(204, "DELETE", "/v1/me/blocks/"+bobID, viewer, nil)
		in.follow(viewer, bobID)
		if h, _ := handlesOf(in.must(200, "GET", "/v1/users/"+viewerID+"/following", viewer, nil)); !slices.Contains(h, "alice") {
			t.Fatalf("the following list: %v; want bob's handle alice", h)
		}

		// A purge frees the handle: taken while it runs, free once done.
		in.must(202, "DELETE", "/v1/users/"+bobID, admin, nil)
		in.purged(bobID)
		in.must(404, "GET", "/v1/users/by-handle/alice", admin, nil)
		create(201, map[string]any{"name": "Carol", "handle": "alice"})

		// An export carries the handle; importing it after a deletion
		// brings it back, and a handle another holds is not imported.
		daveID := create(201, map[string]any{"name": "Dave", "handle": "dave_h"}).str("id")
		doc := in.exportBody(daveID, admin)
		if lines := splitExport(t, doc)["user"]; len(lines) != 1 || lines[0]["handle"] != "dave_h" {
			t.Fatalf("export's user line: %v; want handle dave_h", lines)
		}
		in.must(202, "DELETE", "/v1/users/"+daveID, admin, nil)
		in.purged(daveID)
		dir := t.TempDir()
		file := filepath.Join(dir, "dave.jsonl")
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		taken := filepath.Join(dir, "users.jsonl")
		if err := os.WriteFile(taken, []byte(`{"id":"7300","name":"late","handle":"Zq_A"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if serverOf(env) == nil {
			in.stop() // the embedded cache is the serving process's memory
		}
		if out, err := importFile(t, env, "--export", file); err != nil {
			t.Fatalf("feedd import --export: %v\n%s", err, out)
		}
		if out, err := importFile(t, env, "--users", taken); err == nil || !strings.Contains(out, `user 7300: handle "zq_a" is taken`) {
			t.Errorf("importing a user with a taken handle: %v\n%s; want the line refused as taken", err, out)
		}
		if serverOf(env) == nil {
			in = startFeedd(t, env, nil)
		}
		if got := in.must(200, "GET", "/v1/users/by-handle/DAVE_H", in.admin, nil); got.str("id") != daveID || got.str("name") != "Dave" {
			t.Fatalf("by-handle after the import: %s; want dave", got.raw)
		}
		in.must(404, "GET", "/v1/users/7300", in.admin, nil)
	})
}

// importFile runs feedd import with args against env's deployment, and
// returns what it wrote.
func importFile(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out testenv.SyncBuffer
	err := run(t.Context(), append([]string{"import"}, args...), func(k string) string { return env[k] }, nil, &out, &out)
	return out.String(), err
}
