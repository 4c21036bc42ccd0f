package sqlstore

import (
	"fmt"
	"sync"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// wantHidden checks what user does not see.
func wantHidden(t *testing.T, s *Store, user int64, muted, blocked, shown []int64) {
	t.Helper()
	h, err := s.Hidden(t.Context(), user)
	if err != nil {
		t.Fatalf("Hidden(%d): %v", user, err)
	}
	for _, id := range muted {
		if !h.InFeed(id) || h.Blocked(id) {
			t.Errorf("Hidden(%d): %d should be muted only", user, id)
		}
	}
	for _, id := range blocked {
		if !h.Blocked(id) || !h.InFeed(id) {
			t.Errorf("Hidden(%d): %d should be blocked", user, id)
		}
	}
	for _, id := range shown {
		if h.InFeed(id) || h.Blocked(id) {
			t.Errorf("Hidden(%d): %d should be shown", user, id)
		}
	}
}

func testMutes(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2, 3, 4)
	mustFollow(t, s, 1, 2)

	for _, st := range []struct {
		mute         bool
		user, target int64
		want         bool
	}{
		{true, 1, 2, true}, {true, 1, 2, false}, {true, 1, 4, true}, {true, 1, 3, true},
		{false, 1, 3, true}, {false, 1, 3, false}, {false, 2, 1, false},
	} {
		var got bool
		var err error
		if st.mute {
			got, err = s.Mute(ctx, st.user, st.target)
		} else {
			got, err = s.Unmute(ctx, st.user, st.target)
		}
		if err != nil || got != st.want {
			t.Fatalf("mute %v (%d, %d): got %v, %v; want %v, nil", st.mute, st.user, st.target, got, err, st.want)
		}
	}
	// A mute leaves the follow and its counts alone.
	wantCounts(t, s, 1, 0, 1)
	wantCounts(t, s, 2, 1, 0)
	wantHidden(t, s, 1, []int64{2, 4}, nil, []int64{3})
	wantHidden(t, s, 2, nil, nil, []int64{1})

	got, err := s.Mutes(ctx, 1, 0, 1)
	wantIDs(t, "Mutes(1, 0, 1)", got, err, []int64{2})
	got, err = s.Mutes(ctx, 1, 2, 10)
	wantIDs(t, "Mutes(1, 2, 10)", got, err, []int64{4})
	got, err = s.Mutes(ctx, 2, 0, 10)
	wantIDs(t, "Mutes(2, 0, 10)", got, err, nil)

	_, err = s.Mute(ctx, 1, 1)
	wantCode(t, err, feed.EINVALID)
	_, err = s.Mute(ctx, 1, 99)
	wantCode(t, err, feed.ENOTFOUND)
}

func testBlocks(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2, 3)
	mustFollow(t, s, 1, 2)
	mustFollow(t, s, 2, 1)
	mustFollow(t, s, 3, 1)
	mustFollow(t, s, 3, 2)
	wantCounts(t, s, 1, 2, 1)
	wantCounts(t, s, 2, 2, 1)

	if got, err := s.Block(ctx, 1, 2); err != nil || !got {
		t.Fatalf("Block(1, 2): got %v, %v; want true, nil", got, err)
	}
	if got, err := s.Block(ctx, 1, 2); err != nil || got {
		t.Fatalf("Block(1, 2) again: got %v, %v; want false, nil", got, err)
	}
	// Both edges between 1 and 2 are gone, counted; 3's stay.
	wantCounts(t, s, 1, 1, 0)
	wantCounts(t, s, 2, 1, 0)
	wantCounts(t, s, 3, 0, 2)
	for _, p := range [][2]int64{{1, 2}, {2, 1}} {
		if f, err := isFollowing(ctx, s, p[0], p[1]); err != nil || f {
			t.Fatalf("isFollowing(%d, %d) after the block: got %v, %v", p[0], p[1], f, err)
		}
	}
	// Neither can follow the other while it stands.
	_, err := s.Follow(ctx, 1, 2)
	wantCode(t, err, feed.EBLOCKED)
	_, err = s.Follow(ctx, 2, 1)
	wantCode(t, err, feed.EBLOCKED)
	wantCounts(t, s, 1, 1, 0)
	wantHidden(t, s, 1, nil, []int64{2}, []int64{3})
	wantHidden(t, s, 2, nil, []int64{1}, []int64{3})

	got, err := s.Blocks(ctx, 1, 0, 10)
	wantIDs(t, "Blocks(1, 0, 10)", got, err, []int64{2})
	got, err = s.Blocks(ctx, 2, 0, 10)
	wantIDs(t, "Blocks(2, 0, 10)", got, err, nil)

	// A block each way: lifting one leaves the other standing.
	if _, err := s.Block(ctx, 2, 1); err != nil {
		t.Fatalf("Block(2, 1): %v", err)
	}
	if got, err := s.Unblock(ctx, 1, 2); err != nil || !got {
		t.Fatalf("Unblock(1, 2): got %v, %v; want true, nil", got, err)
	}
	_, err = s.Follow(ctx, 1, 2)
	wantCode(t, err, feed.EBLOCKED)
	wantHidden(t, s, 1, nil, []int64{2}, nil)
	if got, err := s.Unblock(ctx, 2, 1); err != nil || !got {
		t.Fatalf("Unblock(2, 1): got %v, %v; want true, nil", got, err)
	}
	if got, err := s.Unblock(ctx, 2, 1); err != nil || got {
		t.Fatalf("Unblock(2, 1) again: got %v, %v; want false, nil", got, err)
	}
	wantHidden(t, s, 1, nil, nil, []int64{2})
	mustFollow(t, s, 1, 2)
	wantCounts(t, s, 2, 2, 0)

	_, err = s.Block(ctx, 1, 1)
	wantCode(t, err, feed.EINVALID)
	_, err = s.Block(ctx, 1, 99)
	wantCode(t, err, feed.ENOTFOUND)
}

// testBlockFollowRace follows, unfollows and blocks one pair from many
// goroutines: once the block is in, no edge survives it, and the counts
// agree with the edges.
func testBlockFollowRace(t *testing.T, e *env) {
	ctx := t.Context()
	s := e.store(t)
	mustUsers(t, s, 1, 2)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			switch i % 4 {
			case 0:
				_, err = s.Follow(ctx, 1, 2)
			case 1:
				_, err = s.Follow(ctx, 2, 1)
			case 2:
				_, err = s.Unfollow(ctx, 1, 2)
			default:
				if i == 15 {
					_, err = s.Block(ctx, 1, 2)
				}
			}
			if err != nil && feed.ErrorCode(err) != feed.EBLOCKED {
				t.Error(fmt.Errorf("call %d: %w", i, err))
			}
		}()
	}
	wg.Wait()
	wantCounts(t, s, 1, 0, 0)
	wantCounts(t, s, 2, 0, 0)
}
