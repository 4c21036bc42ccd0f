package clientsuite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/feedd/feedd/client"
)

// events runs a stream in the background and hands its events on; it
// stops when the test ends.
func events(t *testing.T, c *client.Client, opts client.StreamOptions) <-chan client.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan client.Event, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for ev, err := range c.Stream(ctx, opts) {
			if err != nil {
				t.Errorf("stream: %v", err)
				return
			}
			out <- ev
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out
}

func next(t *testing.T, ch <-chan client.Event, within time.Duration) client.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %v", within)
	}
	return client.Event{}
}

// TestStream reads the live stream of a real feedd: new posts, deletes,
// and a resume from a post id.
func TestStream(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *server) {
		ctx := context.Background()
		author, asAuthor := s.user(t, "author")
		_, asReader := s.user(t, "reader")
		if err := asReader.Follow(ctx, author.ID); err != nil {
			t.Fatal(err)
		}
		p0 := post(t, asAuthor, "before the stream")
		// Resuming from p0 replays whatever is posted before the stream
		// listens, so the test does not race the connection.
		ch := events(t, asReader, client.StreamOptions{LastEventID: p0.ID})
		p1 := post(t, asAuthor, "live")
		ev := next(t, ch, 10*time.Second)
		if ev.Type != client.EventPost || ev.ID != p1.ID || ev.Post == nil || ev.Post.Content != "live" || ev.Post.AuthorID != author.ID || ev.Post.LikeCount == nil {
			t.Fatalf("event = %+v; want post %d", ev, p1.ID)
		}
		if err := asAuthor.DeletePost(ctx, p1.ID); err != nil {
			t.Fatal(err)
		}
		if ev := next(t, ch, 10*time.Second); ev.Type != client.EventDelete || ev.ID != p1.ID || ev.Post != nil {
			t.Fatalf("event = %+v; want delete of %d", ev, p1.ID)
		}

		// Posts made while no stream is open come first on a resume,
		// oldest first.
		p2, p3 := post(t, asAuthor, "missed 1"), post(t, asAuthor, "missed 2")
		eventually(t, 10*time.Second, func() error {
			pg, err := asReader.FeedPage(ctx, client.PageParams{Limit: 1})
			if err != nil || len(pg.Items) == 0 || pg.Items[0].ID != p3.ID {
				return fmt.Errorf("feed's first page %+v, %v; want %d on top", pg.Items, err, p3.ID)
			}
			return nil
		})
		resumed := events(t, asReader, client.StreamOptions{LastEventID: p0.ID})
		var got []client.ID
		for range 2 {
			got = append(got, next(t, resumed, 10*time.Second).ID)
		}
		if got[0] != p2.ID || got[1] != p3.ID {
			t.Fatalf("resumed %v; want %d, %d", got, p2.ID, p3.ID)
		}

		// A revoked token ends the stream with its error.
		gone, asGone := s.user(t, "gone")
		if err := s.admin.RevokeTokens(ctx, gone.ID); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Second, func() error {
			for _, err := range asGone.Stream(ctx, client.StreamOptions{}) {
				if is(err, 401, client.CodeUnauthorized) {
					return nil
				}
				return fmt.Errorf("stream of a revoked token: %v; want 401", err)
			}
			return errors.New("the stream ended without an error")
		})
	})
}

// TestListStream reads a list's live stream (StreamOptions.List): a
// member's post, not a followee's outside the list; another user's list
// is the permanent 404 the iterator ends with.
func TestListStream(t *testing.T) {
	forEachStack(t, func(t *testing.T, s *server) {
		ctx := context.Background()
		member, asMember := s.user(t, "member")
		followee, asFollowee := s.user(t, "followee")
		_, asOwner := s.user(t, "owner")
		if err := asOwner.Follow(ctx, followee.ID); err != nil {
			t.Fatal(err)
		}
		l, err := asOwner.CreateList(ctx, client.CreateListParams{Name: "one"})
		if err != nil {
			t.Fatal(err)
		}
		if err := asOwner.AddListMember(ctx, l.ID, member.ID); err != nil {
			t.Fatal(err)
		}
		p0 := post(t, asMember, "before the stream")
		ch := events(t, asOwner, client.StreamOptions{List: l.ID, LastEventID: p0.ID})
		post(t, asFollowee, "followed, not a member")
		p1 := post(t, asMember, "live")
		if ev := next(t, ch, 10*time.Second); ev.Type != client.EventPost || ev.ID != p1.ID {
			t.Fatalf("event = %+v; want the member's post %d", ev, p1.ID)
		}
		_, asOther := s.user(t, "other")
		for _, err := range asOther.Stream(ctx, client.StreamOptions{List: l.ID}) {
			if client.ErrorCode(err) != client.CodeNotFound {
				t.Fatalf("another user's list stream: %v; want %s", err, client.CodeNotFound)
			}
			break
		}
	})
}
