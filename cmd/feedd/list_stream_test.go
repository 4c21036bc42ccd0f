package main

import (
	"context"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// TestListStream: GET /v1/me/feed/stream?list= carries the posts of the
// list's members, followed or not, as they are made, and no one else's
// (not the owner's own, not a followee's outside the list); a member
// added while it is open is heard at once, one removed is not; a resume
// replays the list's missed posts; an exclusive list's members reach its
// stream and not the home stream; another user's list is 404, a malformed
// id 400; a deleted list ends its stream. On push and hybrid (alice, with
// two followers, pulled).
func TestListStream(t *testing.T) { forEachListMode(t, testListStream) }

func testListStream(t *testing.T, c listCast) {
	ctx := context.Background()
	in, ownerTok, otherTok := c.in, c.owner.tok, c.other.tok
	alice, aliceTok, bob, bobTok := c.alice.id, c.alice.tok, c.bob.id, c.bob.tok
	carolTok, dave, daveTok := c.carol.tok, c.dave.id, c.dave.tok
	owner := in.as(ownerTok)
	l, err := owner.CreateList(ctx, client.CreateListParams{Name: "close friends"})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/lists/" + l.ID.String()
	in.must(204, "PUT", path+"/members/"+alice, ownerTok, nil)
	in.must(204, "PUT", path+"/members/"+bob, ownerTok, nil)
	streamPath := "/v1/me/feed/stream?list=" + l.ID.String()

	if _, res := in.tryStream(streamPath, otherTok); res.StatusCode != 404 {
		t.Errorf("a stream of another user's list: status %d; want 404", res.StatusCode)
	}
	if _, res := in.tryStream("/v1/me/feed/stream?list=abc", ownerTok); res.StatusCode != 400 {
		t.Errorf("a stream of list abc: status %d; want 400", res.StatusCode)
	}

	s := in.openStream(streamPath, ownerTok)
	// Members, followed (alice) or not (bob); then neither the owner's own
	// post nor a followee outside the list (carol) reach it.
	a1 := in.post(aliceTok, "alice 1")
	s.expectPost(a1)
	b1 := in.post(bobTok, "bob 1")
	s.expectPost(b1)
	in.post(ownerTok, "the owner's own")
	in.post(carolTok, "carol, followed, not a member")
	a2 := in.post(aliceTok, "alice 2")
	s.expectPost(a2)

	// A member added while open is heard; one removed is not.
	in.must(204, "PUT", path+"/members/"+dave, ownerTok, nil)
	in.must(204, "DELETE", path+"/members/"+bob, ownerTok, nil)
	time.Sleep(time.Second)
	in.post(bobTok, "bob, removed")
	d1 := in.post(daveTok, "dave, added")
	s.expectPost(d1)

	// A resume replays what the list got meanwhile, oldest first.
	s.Close()
	d2 := in.post(daveTok, "dave 2")
	in.post(carolTok, "carol again")
	a3 := in.post(aliceTok, "alice 3")
	var r *sseStream
	eventually(t, func() bool { // the closed stream leaves its slot
		r, _ = in.tryStream(streamPath, ownerTok, "Last-Event-ID", d1)
		return r != nil
	})
	r.expectPost(d2)
	r.expectPost(a3)

	// Exclusive: alice's posts reach the list's stream, not the home one.
	yes := true
	if _, err := owner.EditList(ctx, l.ID, client.EditListParams{Exclusive: &yes}); err != nil {
		t.Fatal(err)
	}
	// From a3 on: a post made before it ("carol again") whose
	// announcement comes late on a loaded machine is not sent.
	home := in.openStream("/v1/me/feed/stream", ownerTok, "Last-Event-ID", a3)
	a4 := in.post(aliceTok, "alice 4, exclusive")
	r.expectPost(a4)
	home.expectPost(in.post(carolTok, "carol, home")) // and not alice's before it
	home.Close()

	// A deleted list ends its stream.
	in.must(204, "DELETE", path, ownerTok, nil)
	deadline := time.Now().Add(10 * time.Second)
	for !r.Ended(time.Second) {
		if time.Now().After(deadline) {
			t.Fatal("a deleted list's stream did not end")
		}
	}
	if _, res := in.tryStream(streamPath, ownerTok); res.StatusCode != 404 {
		t.Errorf("a stream of a deleted list: status %d; want 404", res.StatusCode)
	}
}
