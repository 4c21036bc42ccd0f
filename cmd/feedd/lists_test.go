package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/testenv"
)

// listFeedAll pages through a whole list's feed, pages full but the last.
func (in *instance) listFeedAll(token string, list client.ID, limit int) []string {
	in.t.Helper()
	return in.pageAll("list", limit, func(p client.PageParams) (client.Page[client.Post], error) {
		return in.as(token).ListFeedPage(context.Background(), list, p)
	})
}

// TestLists: a user's lists and their members through the API, on every
// stack and model: the owner's alone (another's is 404), names and replies
// checked, members any user one may see (a block either way is 403, and a
// block later removes them), idempotent; the list's feed holds the
// members' posts, followed or not, newest first, in full pages, from the
// moment they are added and none once removed, without muted members; an
// exclusive list takes its members out of the home feed and back; at most
// 100 lists.
func TestLists(t *testing.T) { forEachListMode(t, testLists) }

// person is a user of a test: its id and token.
type person struct{ id, tok string }

// listCast are the users of the lists' tests: owner follows alice and
// carol, other follows alice; bob and dave are followed by no one.
type listCast struct {
	in                                    *instance
	env                                   map[string]string
	owner, alice, bob, carol, dave, other person
}

// forEachListMode runs f on every stack, on push and on hybrid (where
// alice, with two followers, is pulled), with a fresh feedd and cast.
func forEachListMode(t *testing.T, f func(t *testing.T, c listCast)) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for _, mode := range []string{"push", "hybrid"} {
			t.Run(mode, func(t *testing.T) {
				in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", mode, "FEEDD_PULL_THRESHOLD", "2")
				c := listCast{in: in, env: env}
				for _, p := range []struct {
					name string
					to   *person
				}{{"owner", &c.owner}, {"alice", &c.alice}, {"bob", &c.bob}, {"carol", &c.carol}, {"dave", &c.dave}, {"other", &c.other}} {
					p.to.id, p.to.tok = in.user(p.name)
				}
				in.follow(c.owner.tok, c.alice.id)
				in.follow(c.owner.tok, c.carol.id)
				in.follow(c.other.tok, c.alice.id)
				f(t, c)
			})
		}
	})
}

func testLists(t *testing.T, c listCast) {
	ctx := context.Background()
	in, ownerTok, otherTok := c.in, c.owner.tok, c.other.tok
	alice, aliceTok, bob, bobTok := c.alice.id, c.alice.tok, c.bob.id, c.bob.tok
	carolTok, dave := c.carol.tok, c.dave.id
	owner := in.as(ownerTok)

	l, err := owner.CreateList(ctx, client.CreateListParams{Name: "close friends"})
	if err != nil || l.Name != "close friends" || l.Replies != "followed" || l.Exclusive || l.MemberCount != 0 {
		t.Fatalf("CreateList = %+v, %v; want close friends, replies followed, not exclusive, no members", l, err)
	}
	path := "/v1/lists/" + l.ID.String()
	for _, body := range []map[string]any{{"name": ""}, {"name": "x", "replies": "all"}, {"name": "x", "exclusive": "yes"}, {}} {
		if r := in.do("POST", "/v1/lists", ownerTok, body); r.status != 400 || r.errCode() != "invalid" {
			t.Errorf("POST /v1/lists %v: %d %s; want 400 invalid", body, r.status, r.raw)
		}
	}
	if r := in.do("PATCH", path, ownerTok, map[string]any{}); r.status != 400 {
		t.Errorf("an empty PATCH: %d %s; want 400", r.status, r.raw)
	}
	// Another user's list is no list of theirs.
	for _, r := range []resp{in.do("GET", path, otherTok, nil), in.do("GET", path+"/feed", otherTok, nil),
		in.do("PUT", path+"/members/"+bob, otherTok, nil), in.do("DELETE", path, otherTok, nil)} {
		if r.status != 404 {
			t.Errorf("another user's list: %d %s; want 404", r.status, r.raw)
		}
	}

	// Members: any user one may see, idempotently.
	for _, m := range []string{alice, bob, bob} {
		in.must(204, "PUT", path+"/members/"+m, ownerTok, nil)
	}
	if r := in.do("PUT", path+"/members/999999999", ownerTok, nil); r.status != 404 {
		t.Errorf("an unknown member: %d %s; want 404", r.status, r.raw)
	}
	in.must(204, "PUT", "/v1/me/blocks/"+dave, ownerTok, nil)
	if r := in.do("PUT", path+"/members/"+dave, ownerTok, nil); r.status != 403 || r.errCode() != "blocked" {
		t.Errorf("a blocked member: %d %s; want 403 blocked", r.status, r.raw)
	}
	if got, _ := owner.GetList(ctx, l.ID); got.MemberCount != 2 {
		t.Fatalf("member_count = %d; want 2", got.MemberCount)
	}

	// The feed: the members' posts, followed (alice) or not (bob).
	var alices, bobs []string // newest first
	for i := range 3 {
		alices = append([]string{in.post(aliceTok, fmt.Sprint("alice ", i))}, alices...)
		bobs = append([]string{in.post(bobTok, fmt.Sprint("bob ", i))}, bobs...)
	}
	in.post(carolTok, "carol, not a member")
	both := mergeNewest(alices, bobs)
	if got := in.listFeedAll(ownerTok, l.ID, 2); !slices.Equal(got, both) {
		t.Fatalf("list feed = %v; want %v", got, both)
	}
	// A post made since reaches the list (its author's list, read by the
	// process at most a second old).
	newest := in.post(aliceTok, "alice, after the list was read")
	alices, both = append([]string{newest}, alices...), append([]string{newest}, both...)
	testenv.Eventually(t, 10*time.Second, "alice's new post in the list", func() bool {
		time.Sleep(250 * time.Millisecond) // within the user's read rate
		return slices.Equal(in.listFeedAll(ownerTok, l.ID, 2), both)
	})
	// Ranked: the same posts, the liked one first; a member removed since
	// leaves the ranking at once.
	if _, err := in.as(carolTok).Like(ctx, mustID(t, bobs[2])); err != nil {
		t.Fatal(err)
	}
	rankedList := func() []string {
		return in.pageAll("ranked list", 3, func(p client.PageParams) (client.Page[client.Post], error) {
			return owner.RankedListFeedPage(ctx, l.ID, p)
		})
	}
	if got := rankedList(); len(got) != len(both) || got[0] != bobs[2] {
		t.Fatalf("ranked list = %v; want the %d posts, %s (liked) first", got, len(both), bobs[2])
	}
	// Removed: gone at once; added again: back at once.
	in.must(204, "DELETE", path+"/members/"+bob, ownerTok, nil)
	in.must(204, "DELETE", path+"/members/"+bob, ownerTok, nil)
	if got := in.listFeedAll(ownerTok, l.ID, 2); !slices.Equal(got, alices) {
		t.Fatalf("list feed without bob = %v; want %v", got, alices)
	}
	if got := rankedList(); !slices.Equal(got, alices) {
		t.Fatalf("ranked list without bob = %v; want %v", got, alices)
	}
	in.must(204, "PUT", path+"/members/"+bob, ownerTok, nil)
	if got := in.listFeedAll(ownerTok, l.ID, 4); !slices.Equal(got, both) {
		t.Fatalf("list feed with bob again = %v; want %v", got, both)
	}
	// The list's marker counts its unread posts, as the home marker does.
	if m, err := owner.ListMarker(ctx, l.ID); err != nil || m.UnreadCount != len(both) || m.LastReadID != 0 {
		t.Fatalf("ListMarker = %+v, %v; want %d unread and no position", m, err, len(both))
	}
	if m, err := owner.SetListMarker(ctx, l.ID, mustID(t, both[2])); err != nil || m.UnreadCount != 2 {
		t.Fatalf("SetListMarker(the third post) = %+v, %v; want 2 unread", m, err)
	}
	if m, err := owner.SetListMarker(ctx, l.ID, mustID(t, both[4])); err != nil || m.UnreadCount != 2 || m.LastReadID.String() != both[2] {
		t.Fatalf("SetListMarker back = %+v, %v; want it where it was", m, err)
	}
	if r := in.do("PUT", path+"/marker", otherTok, map[string]any{"last_read_id": both[0]}); r.status != 404 {
		t.Errorf("another user's list marker: %d %s; want 404", r.status, r.raw)
	}
	// Redis lost: the list's feed and ranking are the same, from SQL and
	// the author lists rebuilt. (The embedded stack has no Redis to lose.)
	if _, ok := c.env["FEEDD_REDIS_URL"]; ok {
		flushRedis(t, c.env)
		if got := in.listFeedAll(ownerTok, l.ID, 2); !slices.Equal(got, both) {
			t.Fatalf("list feed after Redis was lost = %v; want %v", got, both)
		}
		if got := rankedList(); len(got) != len(both) || got[0] != bobs[2] {
			t.Fatalf("ranked list after Redis was lost = %v; want the %d posts, %s (liked) first", got, len(both), bobs[2])
		}
	}
	// A muted member is left out, and back when unmuted.
	in.must(204, "PUT", "/v1/me/mutes/"+alice, ownerTok, nil)
	if got := in.listFeedAll(ownerTok, l.ID, 2); !slices.Equal(got, bobs) {
		t.Fatalf("list feed with alice muted = %v; want %v", got, bobs)
	}
	in.must(204, "DELETE", "/v1/me/mutes/"+alice, ownerTok, nil)

	// Exclusive: alice's posts leave the home feed, and come back.
	home := func() []string { return in.feedAll(ownerTok, 3) }
	withAlice := home()
	if !slices.Contains(withAlice, alices[0]) {
		t.Fatalf("home feed %v lacks alice's newest post", withAlice)
	}
	yes, no := true, false
	if got, err := owner.EditList(ctx, l.ID, client.EditListParams{Exclusive: &yes}); err != nil || !got.Exclusive {
		t.Fatalf("EditList(exclusive) = %+v, %v", got, err)
	}
	withoutAlice := slices.DeleteFunc(slices.Clone(withAlice), func(id string) bool { return slices.Contains(alices, id) })
	if got := home(); !slices.Equal(got, withoutAlice) {
		t.Fatalf("home feed with an exclusive list = %v; want %v", got, withoutAlice)
	}
	if got := in.must(200, "GET", "/v1/me/markers/home", ownerTok, nil).body["unread_count"]; got != float64(len(withoutAlice)) {
		t.Errorf("unread count with an exclusive list = %v; want %d", got, len(withoutAlice))
	}
	if got := in.listFeedAll(ownerTok, l.ID, 2); !slices.Equal(got, both) {
		t.Fatalf("an exclusive list's feed = %v; want %v", got, both)
	}
	if _, err := owner.EditList(ctx, l.ID, client.EditListParams{Exclusive: &no}); err != nil {
		t.Fatal(err)
	}
	if got := home(); !slices.Equal(got, withAlice) {
		t.Fatalf("home feed after exclusive is off = %v; want %v", got, withAlice)
	}

	// A block made later removes the member.
	in.must(204, "PUT", "/v1/me/blocks/"+bob, ownerTok, nil)
	var members []string
	for u, err := range owner.ListMembers(ctx, l.ID, client.PageParams{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, u.ID.String())
	}
	if !slices.Equal(members, []string{alice}) {
		t.Fatalf("members after blocking bob = %v; want [%s]", members, alice)
	}
	if got, _ := owner.GetList(ctx, l.ID); got.MemberCount != 1 {
		t.Fatalf("member_count after the block = %d; want 1", got.MemberCount)
	}

	// At most 100 lists; a deleted list is gone.
	for i := 1; i < 100; i++ {
		if _, err := owner.CreateList(ctx, client.CreateListParams{Name: fmt.Sprint("list ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := owner.CreateList(ctx, client.CreateListParams{Name: "one too many"}); client.ErrorCode(err) != client.CodeLimitReached {
		t.Fatalf("the 101st list: %v; want %s", err, client.CodeLimitReached)
	}
	if ls, err := owner.Lists(ctx); err != nil || len(ls) != 100 || ls[0].ID != l.ID {
		t.Fatalf("Lists = %d lists, %v; want 100, the first one first", len(ls), err)
	}
	in.must(204, "DELETE", path, ownerTok, nil)
	for _, r := range []resp{in.do("GET", path, ownerTok, nil), in.do("GET", path+"/feed", ownerTok, nil)} {
		if r.status != 404 {
			t.Errorf("a deleted list: %d %s; want 404", r.status, r.raw)
		}
	}
	if _, err := owner.CreateList(ctx, client.CreateListParams{Name: "room again"}); err != nil {
		t.Fatalf("a list after one was deleted: %v", err)
	}
}

// mergeNewest merges two lists of post ids, each newest first (ids grow
// with time), into one.
func mergeNewest(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, func(x, y string) int {
		if len(x) != len(y) {
			return len(y) - len(x)
		}
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	return out
}
