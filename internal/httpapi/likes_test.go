package httpapi

import (
	"net/http"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// TestLikeActsAsTokenUser: a like is always the token's user's, whatever
// the path or body says, and answers the count and state.
func TestLikeActsAsTokenUser(t *testing.T) {
	e := newEnv(t)
	p := e.svc.seedPost(alice, "hi")
	path := "/v1/posts/" + feed.FormatID(p.ID) + "/like"
	r := e.do(req{method: "PUT", path: path, token: userToken(t, bob), body: `{"user_id":"1"}`})
	wantStatus(t, r, http.StatusOK)
	if v := r.json(t); v["like_count"] != 1.0 || v["liked_by_me"] != true || len(v) != 2 {
		t.Errorf("like = %s; want {like_count:1, liked_by_me:true}", r.body)
	}
	wantCalls(t, e.svc, "Like[2 "+feed.FormatID(p.ID)+"]")
	r = e.do(req{method: "DELETE", path: path, token: userToken(t, bob)})
	wantStatus(t, r, http.StatusOK)
	if v := r.json(t); v["like_count"] != 0.0 || v["liked_by_me"] != false {
		t.Errorf("unlike = %s; want {like_count:0, liked_by_me:false}", r.body)
	}
	wantCalls(t, e.svc, "Unlike[2 "+feed.FormatID(p.ID)+"]")

	// The admin has no likes of its own; a missing token is 401.
	wantStatus(t, e.do(req{method: "PUT", path: path, token: testAdmin}), http.StatusForbidden)
	wantStatus(t, e.do(req{method: "PUT", path: path}), http.StatusUnauthorized)
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/posts/12x/like", token: userToken(t, bob)}), http.StatusBadRequest)
	wantStatus(t, e.do(req{method: "PUT", path: "/v1/posts/999/like", token: userToken(t, bob)}), http.StatusNotFound)
	wantCalls(t, e.svc, "Like[2 999]")
}

// TestPostsCarryLikes: every route that shows posts shows the viewer's
// likes; the admin sees counts and liked_by_me false.
func TestPostsCarryLikes(t *testing.T) {
	e := newEnv(t)
	p := e.svc.seedPost(alice, "hi")
	e.svc.seedFollow(bob, alice)
	if _, err := e.svc.Like(t.Context(), bob, p.ID); err != nil {
		t.Fatal(err)
	}
	e.svc.calls()
	id := feed.FormatID(p.ID)
	for _, tc := range []struct {
		path, token string
		liked       bool
	}{
		{"/v1/posts/" + id, userToken(t, bob), true},
		{"/v1/posts/" + id, userToken(t, alice), false},
		{"/v1/posts/" + id, testAdmin, false},
		{"/v1/me/feed", userToken(t, bob), true},
		{"/v1/users/1/posts", userToken(t, bob), true},
		{"/v1/users/2/likes", userToken(t, bob), true},
		{"/v1/posts/top", userToken(t, alice), false},
	} {
		r := e.do(req{method: "GET", path: tc.path, token: tc.token})
		wantStatus(t, r, http.StatusOK)
		v := r.json(t)
		post := v
		if items, ok := v["items"].([]any); ok {
			if len(items) != 1 {
				t.Fatalf("%s: %s; want one post", tc.path, r.body)
			}
			post = checkPost(t, items[0])
		} else {
			checkPost(t, v)
		}
		if post["like_count"] != 1.0 || post["liked_by_me"] != tc.liked {
			t.Errorf("%s: like_count %v liked_by_me %v; want 1, %v", tc.path, post["like_count"], post["liked_by_me"], tc.liked)
		}
	}
}

func TestLikesBadInput(t *testing.T) {
	e := newEnv(t)
	p := e.svc.seedPost(alice, "hi")
	id := feed.FormatID(p.ID)
	tok := userToken(t, bob)
	for _, path := range []string{
		"/v1/posts/" + id + "/likes?limit=0",
		"/v1/posts/" + id + "/likes?limit=101",
		"/v1/posts/" + id + "/likes?cursor=" + feed.EncodeCursor(feed.CursorFeed, 5), // another list's cursor
		"/v1/users/2/likes?cursor=" + feed.EncodeLikerCursor(5, 1),
		"/v1/users/0/likes",
		"/v1/posts/top?cursor=abc",
	} {
		r := e.do(req{method: "GET", path: path, token: tok})
		wantStatus(t, r, http.StatusBadRequest)
		if got := r.errorCode(t); got != feed.EINVALID {
			t.Errorf("%s: code %q; want invalid", path, got)
		}
	}
	wantCalls(t, e.svc)

	// Cursors round-trip: the likers' position is (version, user).
	for i := range 3 {
		u := int64(10 + i)
		e.svc.seedUser(u, "fan")
		if _, err := e.svc.Like(t.Context(), u, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	e.svc.calls()
	r := e.do(req{method: "GET", path: "/v1/posts/" + id + "/likes?limit=2", token: tok})
	wantStatus(t, r, http.StatusOK)
	next, _ := r.json(t)["next_cursor"].(string)
	if v, u, err := feed.DecodeLikerCursor(next); err != nil || u != 11 || v != 2 {
		t.Errorf("next_cursor %q = (%d, %d), %v; want the second liker's (2, 11)", next, v, u, err)
	}
	wantCalls(t, e.svc, "PostLikers["+id+" 0 0 2]")
	r = e.do(req{method: "GET", path: "/v1/posts/top?window=7d&limit=5", token: tok})
	wantStatus(t, r, http.StatusOK)
	wantCalls(t, e.svc, "TopPosts[7d 5]")
	// The window's rule is the likes service's (likes.TestTopWindow); its
	// refusal is a 400 invalid.
	for _, w := range []string{"0s", "1x", "d"} {
		r := e.do(req{method: "GET", path: "/v1/posts/top?window=" + w, token: tok})
		wantStatus(t, r, http.StatusBadRequest)
		if got := r.errorCode(t); got != feed.EINVALID {
			t.Errorf("window %s: code %q; want invalid", w, got)
		}
	}
}
