package clientsuite_test

import (
	"context"
	"testing"

	"github.com/feedd/feedd/client"
)

// TestReplies: a reply through the client carries its parent, the
// parent's count moves, the replies page and the thread come back, and a
// reply to a deleted post is not_found.
func TestReplies(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *server) {
		ctx := context.Background()
		alice, asAlice := s.user(t, "alice")
		_, asBob := s.user(t, "bob")
		root := post(t, asAlice, "root")
		r1, err := asBob.CreatePost(ctx, client.CreatePostParams{Content: "r1", InReplyToID: root.ID})
		if err != nil || r1.InReplyToID != root.ID || r1.InReplyToAuthorID != alice.ID || r1.ReplyCount == nil || *r1.ReplyCount != 0 {
			t.Fatalf("CreatePost reply = %+v, %v; want a reply to %d by %d", r1, err, root.ID, alice.ID)
		}
		r2, err := asAlice.CreatePost(ctx, client.CreatePostParams{Content: "r2", InReplyToID: r1.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := asBob.GetPost(ctx, root.ID); err != nil || got.ReplyCount == nil || *got.ReplyCount != 1 {
			t.Fatalf("GetPost(root) = %+v, %v; want reply_count 1", got, err)
		}
		var ids []client.ID
		for p, err := range asBob.Replies(ctx, root.ID, client.PageParams{Limit: 1}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, p.ID)
		}
		if len(ids) != 1 || ids[0] != r1.ID {
			t.Fatalf("Replies(root) = %v; want [%d]", ids, r1.ID)
		}
		th, err := asBob.Context(ctx, r1.ID)
		if err != nil || len(th.Ancestors) != 1 || th.Ancestors[0].ID != root.ID || len(th.Descendants) != 1 || th.Descendants[0].ID != r2.ID {
			t.Fatalf("Context(r1) = %+v, %v; want [root] / [r2]", th, err)
		}
		if err := asAlice.DeletePost(ctx, root.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := asBob.CreatePost(ctx, client.CreatePostParams{Content: "late", InReplyToID: root.ID}); !is(err, 404, client.CodeNotFound) {
			t.Fatalf("a reply to a deleted post: %v; want 404 not_found", err)
		}
		if _, err := asBob.Context(ctx, root.ID); !is(err, 404, client.CodeNotFound) {
			t.Fatalf("Context of a deleted post: %v; want 404 not_found", err)
		}
	})
}
