package clientsuite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// TestAPI calls every route through the client on every stack and checks
// what a caller relies on: the typed answers, the errors as *client.Error,
// and paging to the end.
func TestAPI(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *server) {
		ctx := context.Background()

		t.Run("users and tokens", func(t *testing.T) {
			own := client.ID(time.Now().UnixNano() % 1e15)
			u, err := s.admin.CreateUser(ctx, client.CreateUserParams{Name: "dana", ID: own})
			if err != nil || u.ID != own || u.Name != "dana" {
				t.Fatalf("CreateUser with the app's id = %+v, %v; want id %d", u, err, own)
			}
			_, err = s.admin.CreateUser(ctx, client.CreateUserParams{Name: "dana again", ID: own})
			var e *client.Error
			if !errors.As(fmt.Errorf("wrapped: %w", err), &e) || e.Status != http.StatusConflict || e.Code != client.CodeConflict || e.Message == "" {
				t.Fatalf("CreateUser with a taken id: %v; want *client.Error 409 conflict", err)
			}
			if _, err := s.admin.CreateUser(ctx, client.CreateUserParams{Name: ""}); client.ErrorCode(err) != client.CodeInvalid {
				t.Fatalf("CreateUser without a name: %v; want invalid", err)
			}
			tok, err := s.admin.CreateToken(ctx, u.ID, 90*time.Second)
			if err != nil || tok.Token == "" || time.Until(tok.ExpiresAt) < 80*time.Second || time.Until(tok.ExpiresAt) > 100*time.Second {
				t.Fatalf("CreateToken for 90s = %+v, %v", tok, err)
			}
			dana := s.admin.WithToken(tok.Token)
			got, err := dana.GetUser(ctx, u.ID)
			if err != nil || got.ID != u.ID || got.DeliveryMode == "" {
				t.Fatalf("GetUser = %+v, %v; want dana with a delivery mode", got, err)
			}
			if err := s.admin.RevokeTokens(ctx, u.ID); err != nil {
				t.Fatal(err)
			}
			eventually(t, 2*time.Second, func() error {
				if _, err := dana.GetUser(ctx, u.ID); !is(err, 401, client.CodeUnauthorized) {
					return fmt.Errorf("GET with a revoked token: %v; want 401 unauthorized", err)
				}
				return nil
			})
			if _, err := s.admin.GetUser(ctx, 123456789); !is(err, 404, client.CodeNotFound) {
				t.Fatalf("GetUser of nobody: %v; want 404 not_found", err)
			}
		})

		t.Run("follows, posts and paging", func(t *testing.T) {
			alice, asAlice := s.user(t, "alice")
			bob, asBob := s.user(t, "bob")
			if err := asBob.Follow(ctx, alice.ID); err != nil {
				t.Fatal(err)
			}
			if err := asBob.Follow(ctx, alice.ID); err != nil { // idempotent
				t.Fatal(err)
			}
			var want []client.ID
			for i := range 5 {
				want = append([]client.ID{post(t, asAlice, fmt.Sprint("post ", i)).ID}, want...)
			}
			eventually(t, 10*time.Second, func() error {
				var got []client.ID
				for p, err := range asBob.Feed(ctx, client.PageParams{Limit: 2}) {
					if err != nil {
						return err
					}
					got = append(got, p.ID)
				}
				if !slices.Equal(got, want) {
					return fmt.Errorf("feed = %v; want %v", got, want)
				}
				return nil
			})
			page, err := asBob.FeedPage(ctx, client.PageParams{Limit: 3})
			if err != nil || len(page.Items) != 3 || page.NextCursor == "" {
				t.Fatalf("FeedPage(3) = %d items, cursor %q, %v", len(page.Items), page.NextCursor, err)
			}
			p0 := page.Items[0]
			if p0.AuthorID != alice.ID || p0.Content != "post 4" || p0.CreatedAt.IsZero() || p0.EditedAt != nil ||
				p0.LikeCount == nil || *p0.LikeCount != 0 || p0.LikedByMe == nil || *p0.LikedByMe {
				t.Fatalf("first post of the feed = %+v", p0)
			}
			var into client.Page[client.Post]
			for _, cursor := range []string{"", page.NextCursor} {
				if err := asBob.FeedPageInto(ctx, client.PageParams{Cursor: cursor, Limit: 3}, &into); err != nil {
					t.Fatal(err)
				}
			}
			if ids := postIDs(into.Items); !slices.Equal(ids, want[3:]) || into.NextCursor != "" {
				t.Fatalf("FeedPageInto of the second page = %v cursor %q; want %v and no cursor", ids, into.NextCursor, want[3:])
			}
			if _, err := asBob.FeedPage(ctx, client.PageParams{Limit: 101}); !is(err, 400, client.CodeInvalid) {
				t.Fatalf("limit 101: %v; want 400 invalid", err)
			}
			var posts []client.ID
			for p, err := range asBob.UserPosts(ctx, alice.ID, client.PageParams{Limit: 4}) {
				if err != nil {
					t.Fatal(err)
				}
				posts = append(posts, p.ID)
			}
			if !slices.Equal(posts, want) {
				t.Fatalf("UserPosts = %v; want %v", posts, want)
			}
			if got := collectUsers(t, asAlice.Followers(ctx, alice.ID, client.PageParams{})); !slices.Equal(got, []client.ID{bob.ID}) {
				t.Fatalf("Followers = %v; want bob", got)
			}
			if got := collectUsers(t, asAlice.Following(ctx, bob.ID, client.PageParams{})); !slices.Equal(got, []client.ID{alice.ID}) {
				t.Fatalf("Following = %v; want alice", got)
			}
			fp, err := asAlice.FollowersPage(ctx, alice.ID, client.PageParams{Limit: 1})
			if err != nil || len(fp.Items) != 1 || fp.Items[0].FollowerCount != 0 || fp.Items[0].FollowingCount != 1 {
				t.Fatalf("FollowersPage = %+v, %v", fp, err)
			}
			if fl, err := asAlice.FollowingPage(ctx, bob.ID, client.PageParams{}); err != nil || len(fl.Items) != 1 {
				t.Fatalf("FollowingPage = %+v, %v", fl, err)
			}
			if err := asBob.Unfollow(ctx, alice.ID); err != nil {
				t.Fatal(err)
			}
			if u, err := asBob.GetUser(ctx, alice.ID); err != nil || u.FollowerCount != 0 {
				t.Fatalf("alice after the unfollow = %+v, %v; want 0 followers", u, err)
			}
			// Breaking out of an iterator stops its paging.
			n := 0
			for _, err := range asBob.UserPosts(ctx, alice.ID, client.PageParams{Limit: 1}) {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == 2 {
					break
				}
			}
			if n != 2 {
				t.Fatalf("iterated %d posts; want to stop at 2", n)
			}
			// An error is yielded once and ends the iteration.
			errs := 0
			for _, err := range asBob.UserPosts(ctx, 987654321, client.PageParams{}) {
				if !is(err, 404, client.CodeNotFound) {
					t.Fatalf("posts of nobody: %v; want 404", err)
				}
				errs++
			}
			if errs != 1 {
				t.Fatalf("posts of nobody yielded %d errors; want 1", errs)
			}
		})

		t.Run("post data, edits, idempotency and deletes", func(t *testing.T) {
			_, asAlice := s.user(t, "alice")
			_, asBob := s.user(t, "bob")
			p, err := asAlice.CreatePost(ctx, client.CreatePostParams{Content: "with data", Data: json.RawMessage(`{ "title": "T", "n": [1, 2] }`)})
			if err != nil || string(p.Data) != `{"title":"T","n":[1,2]}` {
				t.Fatalf("CreatePost with data = %s, %v; want the data compacted", p.Data, err)
			}
			got, err := asBob.GetPost(ctx, p.ID)
			if err != nil || got.ID != p.ID || string(got.Data) != string(p.Data) || !got.CreatedAt.Equal(p.CreatedAt) {
				t.Fatalf("GetPost = %+v, %v; want %+v", got, err, p)
			}
			content := "edited"
			ed, err := asAlice.EditPost(ctx, p.ID, client.EditPostParams{Content: &content})
			if err != nil || ed.Content != "edited" || ed.EditedAt == nil || string(ed.Data) != string(p.Data) {
				t.Fatalf("EditPost content = %+v, %v; want new content, edited_at, data kept", ed, err)
			}
			ed, err = asAlice.EditPost(ctx, p.ID, client.EditPostParams{Data: client.NoData()})
			if err != nil || ed.Data != nil || ed.Content != "edited" {
				t.Fatalf("EditPost NoData = %+v, %v; want the data gone", ed, err)
			}
			if _, err := asBob.EditPost(ctx, p.ID, client.EditPostParams{Content: &content}); !is(err, 403, client.CodeForbidden) {
				t.Fatalf("EditPost of another's post: %v; want 403 forbidden", err)
			}
			if _, err := asAlice.EditPost(ctx, p.ID, client.EditPostParams{}); !is(err, 400, client.CodeInvalid) {
				t.Fatalf("EditPost of nothing: %v; want 400 invalid", err)
			}

			key := client.NewIdempotencyKey()
			a, err1 := asAlice.CreatePost(ctx, client.CreatePostParams{Content: "once", IdempotencyKey: key})
			b, err2 := asAlice.CreatePost(ctx, client.CreatePostParams{Content: "once", IdempotencyKey: key})
			if err1 != nil || err2 != nil || a.ID != b.ID {
				t.Fatalf("the same key twice = %d (%v), %d (%v); want one post", a.ID, err1, b.ID, err2)
			}
			if _, err := asAlice.CreatePost(ctx, client.CreatePostParams{Content: "another", IdempotencyKey: key}); !is(err, 422, client.CodeIdempotencyKeyReused) {
				t.Fatalf("the key with another body: %v; want 422 idempotency_key_reused", err)
			}
			c1, c2 := post(t, asAlice, "same"), post(t, asAlice, "same")
			if c1.ID == c2.ID {
				t.Fatal("two creates without a key gave one post: the generated keys must differ")
			}

			if err := asBob.DeletePost(ctx, a.ID); !is(err, 403, client.CodeForbidden) {
				t.Fatalf("DeletePost of another's post: %v; want 403", err)
			}
			if err := asAlice.DeletePost(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := asBob.GetPost(ctx, a.ID); !is(err, 404, client.CodeNotFound) {
				t.Fatalf("GetPost of a deleted post: %v; want 404", err)
			}
		})

		t.Run("likes and top posts", func(t *testing.T) {
			_, asAlice := s.user(t, "alice")
			bob, asBob := s.user(t, "bob")
			p := post(t, asAlice, "like me")
			st, err := asBob.Like(ctx, p.ID)
			if err != nil || st != (client.LikeState{LikeCount: 1, LikedByMe: true}) {
				t.Fatalf("Like = %+v, %v", st, err)
			}
			if got, err := asBob.GetPost(ctx, p.ID); err != nil || *got.LikeCount != 1 || !*got.LikedByMe {
				t.Fatalf("the liked post = %+v, %v", got, err)
			}
			// Likes reach SQL in batches: the lists show them shortly.
			eventually(t, 10*time.Second, func() error {
				var likers, liked []client.ID
				for u, err := range asAlice.Likers(ctx, p.ID, client.PageParams{}) {
					if err != nil {
						return err
					}
					likers = append(likers, u.ID)
				}
				for lp, err := range asAlice.UserLikes(ctx, bob.ID, client.PageParams{}) {
					if err != nil {
						return err
					}
					liked = append(liked, lp.ID)
				}
				if !slices.Equal(likers, []client.ID{bob.ID}) || !slices.Equal(liked, []client.ID{p.ID}) {
					return fmt.Errorf("Likers = %v, UserLikes = %v; want bob and %d", likers, liked, p.ID)
				}
				return nil
			})
			if lp, err := asAlice.LikersPage(ctx, p.ID, client.PageParams{Limit: 1}); err != nil || len(lp.Items) != 1 {
				t.Fatalf("LikersPage = %+v, %v", lp, err)
			}
			if ul, err := asAlice.UserLikesPage(ctx, bob.ID, client.PageParams{Limit: 5}); err != nil || len(ul.Items) != 1 {
				t.Fatalf("UserLikesPage = %+v, %v", ul, err)
			}
			eventually(t, 5*time.Second, func() error {
				top, err := asBob.TopPosts(ctx, time.Hour, 5)
				if err != nil {
					return err
				}
				if len(top) == 0 || top[0].ID != p.ID || *top[0].LikeCount != 1 {
					return fmt.Errorf("TopPosts(1h) = %v; want %d first", postIDs(top), p.ID)
				}
				return nil
			})
			if _, err := asBob.TopPosts(ctx, 7*24*time.Hour, 0); err != nil {
				t.Fatalf("TopPosts(7d): %v", err)
			}
			if st, err := asBob.Unlike(ctx, p.ID); err != nil || st != (client.LikeState{}) {
				t.Fatalf("Unlike = %+v, %v", st, err)
			}
			if _, err := asBob.Like(ctx, 42); !is(err, 404, client.CodeNotFound) {
				t.Fatalf("Like of no post: %v; want 404", err)
			}
		})

		t.Run("markers, mutes and blocks", func(t *testing.T) {
			alice, asAlice := s.user(t, "alice")
			bob, asBob := s.user(t, "bob")
			m, err := asBob.HomeMarker(ctx)
			if err != nil || m.LastReadID != 0 || m.UpdatedAt != nil {
				t.Fatalf("HomeMarker before any = %+v, %v; want none", m, err)
			}
			if err := asBob.Follow(ctx, alice.ID); err != nil {
				t.Fatal(err)
			}
			p1, p2 := post(t, asAlice, "one"), post(t, asAlice, "two")
			m, err = asBob.SetHomeMarker(ctx, p1.ID)
			if err != nil || m.LastReadID != p1.ID || m.UpdatedAt == nil {
				t.Fatalf("SetHomeMarker = %+v, %v; want at %d", m, err, p1.ID)
			}
			eventually(t, 10*time.Second, func() error {
				m, err := asBob.HomeMarker(ctx)
				if err != nil || m.UnreadCount != 1 || m.UnreadCapped {
					return fmt.Errorf("HomeMarker = %+v, %v; want 1 unread (%d)", m, err, p2.ID)
				}
				return nil
			})
			if _, err := asBob.SetHomeMarker(ctx, 12345); !is(err, 400, client.CodeInvalid) {
				t.Fatalf("SetHomeMarker to no post: %v; want 400", err)
			}

			if err := asBob.Mute(ctx, alice.ID); err != nil {
				t.Fatal(err)
			}
			if got := collectUsers(t, asBob.Mutes(ctx, client.PageParams{})); !slices.Equal(got, []client.ID{alice.ID}) {
				t.Fatalf("Mutes = %v; want alice", got)
			}
			if mp, err := asBob.MutesPage(ctx, client.PageParams{Limit: 1}); err != nil || len(mp.Items) != 1 {
				t.Fatalf("MutesPage = %+v, %v", mp, err)
			}
			if err := asBob.Unmute(ctx, alice.ID); err != nil {
				t.Fatal(err)
			}
			if err := asBob.Mute(ctx, bob.ID); !is(err, 400, client.CodeInvalid) {
				t.Fatalf("Mute of oneself: %v; want 400", err)
			}

			if err := asAlice.Block(ctx, bob.ID); err != nil {
				t.Fatal(err)
			}
			if err := asBob.Follow(ctx, alice.ID); !is(err, 403, client.CodeBlocked) {
				t.Fatalf("Follow across a block: %v; want 403 blocked", err)
			}
			if _, err := asBob.GetUser(ctx, alice.ID); !is(err, 404, client.CodeNotFound) {
				t.Fatalf("GetUser across a block: %v; want 404", err)
			}
			if got := collectUsers(t, asAlice.Blocks(ctx, client.PageParams{})); !slices.Equal(got, []client.ID{bob.ID}) {
				t.Fatalf("Blocks = %v; want bob", got)
			}
			if bp, err := asAlice.BlocksPage(ctx, client.PageParams{}); err != nil || len(bp.Items) != 1 {
				t.Fatalf("BlocksPage = %+v, %v", bp, err)
			}
			if err := asAlice.Unblock(ctx, bob.ID); err != nil {
				t.Fatal(err)
			}
			if err := asBob.Follow(ctx, alice.ID); err != nil {
				t.Fatalf("Follow after the unblock: %v", err)
			}
		})

		t.Run("account deletion and jobs", func(t *testing.T) {
			carol, asCarol := s.user(t, "carol")
			dave, _ := s.user(t, "dave")
			post(t, asCarol, "soon gone")
			d, err := asCarol.DeleteMe(ctx)
			if err != nil || d.ID != carol.ID || d.Status != "deleting" || d.Job != carol.ID {
				t.Fatalf("DeleteMe = %+v, %v", d, err)
			}
			_, err = s.admin.GetUser(ctx, carol.ID)
			var e *client.Error
			if !errors.As(err, &e) || e.Status != 404 {
				t.Fatalf("GetUser of a deleted user: %v; want 404", err)
			}
			if status, job, ok := e.Purge(); !ok || job != carol.ID || (status != "running" && status != "done") {
				t.Fatalf("the 404's purge = %q %d %v; want running or done, job %d", status, job, ok, carol.ID)
			}
			eventually(t, 20*time.Second, func() error {
				j, err := s.admin.Job(ctx, carol.ID)
				if err != nil || j.Status != "done" || j.FinishedAt == nil || j.Kind != "user_purge" || j.UserID != carol.ID || j.Removed.Posts != 1 {
					return fmt.Errorf("Job = %+v, %v; want done with 1 post removed", j, err)
				}
				return nil
			})
			if d, err := s.admin.DeleteUser(ctx, dave.ID); err != nil || d.ID != dave.ID {
				t.Fatalf("DeleteUser = %+v, %v", d, err)
			}
			if _, err := s.admin.DeleteUser(ctx, 999999999); !is(err, 404, client.CodeNotFound) {
				t.Fatalf("DeleteUser of nobody: %v; want 404", err)
			}
		})

		t.Run("admin and ops", func(t *testing.T) {
			_, asAlice := s.user(t, "alice")
			if _, err := asAlice.Degradation(ctx); !is(err, 401, client.CodeUnauthorized) && !is(err, 403, client.CodeForbidden) {
				t.Fatalf("Degradation as a user: %v; want 401 or 403", err)
			}
			d, err := s.admin.SetDegradation(ctx, map[string]bool{"L1": true})
			if err != nil || !d.Switches["L1"] || d.Shared == nil || d.Meaning["L1"] == "" {
				t.Fatalf("SetDegradation L1 = %+v, %v", d, err)
			}
			eventually(t, 5*time.Second, func() error {
				p, err := asAlice.CreatePost(ctx, client.CreatePostParams{Content: "under L1"})
				if err != nil {
					return err
				}
				if got, err := asAlice.GetPost(ctx, p.ID); err != nil || got.LikeCount != nil || got.LikedByMe != nil {
					return fmt.Errorf("a post under L1 = %+v, %v; want no likes fields", got, err)
				}
				return nil
			})
			if _, err := s.admin.SetDegradation(ctx, map[string]bool{"L1": false}); err != nil {
				t.Fatal(err)
			}
			if d, err := s.admin.Degradation(ctx); err != nil || d.Switches["L1"] || d.Level != 0 {
				t.Fatalf("Degradation after = %+v, %v; want all off", d, err)
			}
			if _, err := s.admin.SetDegradation(ctx, map[string]bool{"L9": true}); !is(err, 400, client.CodeInvalid) {
				t.Fatalf("SetDegradation L9: %v; want 400", err)
			}

			anon, _ := client.New(s.url)
			if err := anon.Health(ctx); err != nil {
				t.Fatal(err)
			}
			rd, err := anon.Ready(ctx)
			if err != nil || rd.Status != "ok" || len(rd.Checks) == 0 {
				t.Fatalf("Ready = %+v, %v", rd, err)
			}
			doc, err := anon.OpenAPI(ctx)
			var openapi struct {
				OpenAPI string `json:"openapi"`
			}
			if err != nil || json.Unmarshal(doc, &openapi) != nil || !strings.HasPrefix(openapi.OpenAPI, "3.") {
				t.Fatalf("OpenAPI = %.100s, %v", doc, err)
			}
			m, err := anon.Metrics(ctx)
			if err != nil || !bytes.Contains(m, []byte("feedd_http_request_duration_seconds")) {
				t.Fatalf("Metrics = %.100s, %v", m, err)
			}
			tk, err := asAlice.CreateStreamTicket(ctx)
			if err != nil || tk.Ticket == "" || !tk.ExpiresAt.After(time.Now()) {
				t.Fatalf("CreateStreamTicket = %+v, %v", tk, err)
			}
		})
	})
}

func postIDs(posts []client.Post) []client.ID {
	ids := make([]client.ID, len(posts))
	for i, p := range posts {
		ids[i] = p.ID
	}
	return ids
}

func collectUsers(t *testing.T, seq func(func(client.User, error) bool)) []client.ID {
	t.Helper()
	var ids []client.ID
	for u, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	return ids
}
