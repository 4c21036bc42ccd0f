package clientsuite_test

import (
	"context"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// TestReposts: Repost and Unrepost through the client answer the state,
// a follower's home feed carries the repost with RepostOf, and
// FollowWith turns the followee's reposts off, which the relationship
// shows.
func TestReposts(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *server) {
		ctx := context.Background()
		alice, asAlice := s.user(t, "alice")
		bob, asBob := s.user(t, "bob")
		_, asCarol := s.user(t, "carol")
		if err := asCarol.Follow(ctx, bob.ID); err != nil {
			t.Fatal(err)
		}
		orig := post(t, asAlice, "the original")
		if st, err := asBob.Repost(ctx, orig.ID); err != nil || st != (client.RepostState{RepostCount: 1, RepostedByMe: true}) {
			t.Fatalf("Repost = %+v, %v; want 1, true", st, err)
		}
		var got client.Post
		deadline := time.Now().Add(10 * time.Second)
		for got.RepostOf == nil && time.Now().Before(deadline) {
			pg, err := asCarol.FeedPage(ctx, client.PageParams{Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(pg.Items) > 0 {
				got = pg.Items[0]
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got.AuthorID != bob.ID || got.RepostOf == nil || got.RepostOf.ID != orig.ID || got.RepostOf.AuthorID != alice.ID ||
			got.RepostOf.RepostCount == nil || *got.RepostOf.RepostCount != 1 || got.Content != "" {
			t.Fatalf("carol's feed's first item = %+v; want bob's repost of %d", got, orig.ID)
		}
		no := false
		if err := asCarol.FollowWith(ctx, bob.ID, client.FollowParams{Reposts: &no}); err != nil {
			t.Fatal(err)
		}
		if r, err := asCarol.Relationship(ctx, bob.ID); err != nil || !r.Following || r.Reposts {
			t.Fatalf("Relationship = %+v, %v; want following without reposts", r, err)
		}
		if pg, err := asCarol.FeedPage(ctx, client.PageParams{Limit: 5}); err != nil || len(pg.Items) != 0 {
			t.Fatalf("carol's feed without bob's reposts = %+v, %v; want empty", pg.Items, err)
		}
		if st, err := asBob.Unrepost(ctx, orig.ID); err != nil || st != (client.RepostState{}) {
			t.Fatalf("Unrepost = %+v, %v; want 0, false", st, err)
		}
	})
}
