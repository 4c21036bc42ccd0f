package proctest

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	fclient "github.com/feedd/feedd/client"
)

// TestSIGKILLOfWorkLosesNothing: a work process killed with SIGKILL in the
// middle of fanning out three posts to 40,000 followers loses nothing. A
// second work process takes over what the first held (unacked messages,
// unconfirmed outbox rows, an expiring split lock), and every inbox ends
// up with the three posts exactly once, with nothing dead-lettered; a list
// the author is a member of (its reader not a follower) shows them too.
func TestSIGKILLOfWorkLosesNothing(t *testing.T) {
	t.Parallel()
	onBackends(t, sigkillOfWorkLosesNothing)
}

func sigkillOfWorkLosesNothing(t *testing.T, b backend) {
	const followers = 40000
	s := newStack(t, b)
	s.migrate()
	env := s.with("FEEDD_AUTO_MIGRATE", "false",
		"FEEDD_BATCH_SIZE", "200", "FEEDD_DIRECT_FANOUT", "100", "FEEDD_WORKERS", "2")
	serve := startReady(t, "serve", env, "serve")
	work1 := startReady(t, "work 1", env, "work")
	api := serve.api()

	author, authorTok := api.newUser(s.admin, "celebrity")
	setup := time.Now()
	readers := s.followers(author, followers)
	t.Logf("%d followers and their inboxes created in %v", followers, time.Since(setup).Round(time.Millisecond))
	_, listerTok := api.newUser(s.admin, "lister")
	lister := api.as(listerTok)
	list, err := lister.CreateList(context.Background(), fclient.CreateListParams{Name: "the celebrity"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lister.AddListMember(context.Background(), list.ID, fclient.ID(author)); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	var posts []int64
	for i := range 3 {
		posts = append(posts, api.publish(authorTok, fmt.Sprintf("post %d to %d followers", i+1, followers)))
	}
	want := []int64{posts[2], posts[1], posts[0]}

	// Kill as soon as the first post shows up in a few inboxes spread over
	// the follower range: the fan-out is under way and far from done.
	probes := []int64{readers[0], readers[followers/4], readers[followers/2], readers[3*followers/4], readers[followers-1]}
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for seen := false; !seen; {
		if time.Now().After(deadline) {
			t.Fatalf("the first post reached none of the inboxes %v within 30s:%s", probes, s.describeInboxes(probes))
		}
		for _, r := range probes {
			pg, err := s.cache.InboxPage(ctx, r, 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			seen = seen || slices.Contains(pg.IDs, posts[0])
		}
		time.Sleep(time.Millisecond)
	}
	work1.signal(syscall.SIGKILL)
	if st := work1.wait(10 * time.Second); !killedBy(st, syscall.SIGKILL) {
		t.Fatalf("work 1 ended with %v; want killed by SIGKILL", st)
	}
	killedAt := time.Since(start)

	// Nothing writes inboxes while no work process runs, so this is the
	// state the kill left.
	if done := followers - len(s.mismatched(readers, want)); done == followers {
		t.Fatalf("at the kill, %d of %d inboxes already had all three posts; want the kill in the middle of the fan-out", done, followers)
	} else {
		t.Logf("SIGKILL %v after the first publish, with %d of %d inboxes complete", killedAt.Round(time.Millisecond), done, followers)
	}

	startReady(t, "work 2", env, "work")
	// Generous: a split lock the killed dispatcher held expires after 15s.
	s.waitInboxes(readers, want, 90*time.Second)
	t.Logf("all %d inboxes hold the three posts exactly once, %v after the first publish", followers, time.Since(start).Round(time.Millisecond))
	s.requireNoDeadLetters()

	// What the first follower sees through the API.
	if got := api.feed(api.token(s.admin, readers[0])); !slices.Equal(got, want) {
		t.Fatalf("feed of follower %d = %v; want %v", readers[0], got, want)
	}
	pg, err := lister.ListFeedPage(context.Background(), list.ID, fclient.PageParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, p := range pg.Items {
		got = append(got, int64(p.ID))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the list with the author = %v; want %v", got, want)
	}
}
