package feedtest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// LikeCache is a feed.LikeCache that the suite can also make forget likes,
// as a cache that lost its keys would.
type LikeCache interface {
	feed.LikeCache
	// DropLikes forgets post's counter and user's recent set (either may
	// be 0).
	DropLikes(ctx context.Context, user, post int64) error
}

// TestLikeCache runs the behavioural suite of feed.LikeCache against the
// implementation newCache builds: a fresh, empty cache per subtest that
// cleans up after itself.
func TestLikeCache(t *testing.T, newCache func(t *testing.T) LikeCache) {
	t.Helper()
	// Posts made an hour ago: newer than a complete set's window start,
	// older than a set filled just now with incomplete history.
	postTime := time.Now().Add(-time.Hour)
	const window = 1000

	t.Run("absent set", func(t *testing.T) {
		c := newCache(t)
		ch := setLiked(t, c, 1, 10, postTime, true, nil, window)
		if ch.Outcome != feed.LikeAbsent {
			t.Fatalf("SetLiked on an absent set = %+v; want LikeAbsent", ch)
		}
		st := states(t, c, 1, []int64{10, 11}, postTime)
		if st.SetExists || !slices.Equal(st.Cold, []int64{10, 11}) || len(st.Liked) != 0 {
			t.Errorf("states with an absent set = %+v; want both cold", st)
		}
	})

	t.Run("like, unlike, idempotent, versions increase", func(t *testing.T) {
		c := newCache(t)
		must(t, c.FillUserLikes(t.Context(), 1, nil, true, longTTL))
		var last int64
		for i, tc := range []struct {
			liked bool
			want  feed.LikeOutcome
		}{
			{true, feed.LikeChanged}, {true, feed.LikeUnchanged}, {false, feed.LikeChanged},
			{false, feed.LikeUnchanged}, {true, feed.LikeChanged}, {false, feed.LikeChanged}, {true, feed.LikeChanged},
		} {
			ch := setLiked(t, c, 1, 10, postTime, tc.liked, nil, window)
			if ch.Outcome != tc.want {
				t.Fatalf("step %d: SetLiked(%v) = %+v; want outcome %d", i, tc.liked, ch, tc.want)
			}
			if tc.want == feed.LikeChanged {
				if ch.Version <= last {
					t.Fatalf("step %d: version %d after %d; want strictly increasing", i, ch.Version, last)
				}
				if ch.Prev.Liked == tc.liked {
					t.Errorf("step %d: prev %+v; want the opposite state", i, ch.Prev)
				}
				last = ch.Version
			} else if ch.Version != last {
				t.Errorf("step %d: unchanged version %d; want the current %d", i, ch.Version, last)
			}
		}
		if v := time.Now().UnixMicro(); last < v-int64(time.Minute/time.Microsecond) || last > v+int64(time.Minute/time.Microsecond) {
			t.Errorf("version %d; want about the time in microseconds (%d)", last, v)
		}
		st := states(t, c, 1, []int64{10, 11}, postTime)
		if !st.SetExists || !st.Liked[10] || st.Liked[11] || len(st.Cold) != 0 {
			t.Errorf("states = %+v; want 10 liked, 11 known unliked", st)
		}
		// Another reader's set is another set.
		if st := states(t, c, 2, []int64{10}, postTime); st.SetExists || st.Liked[10] {
			t.Errorf("states of reader 2 = %+v; want an absent set", st)
		}
		// No reader: counts only.
		if st := states(t, c, 0, []int64{10}, postTime); len(st.Liked) != 0 || len(st.Cold) != 0 {
			t.Errorf("states of nobody = %+v; want no liked state", st)
		}
	})

	t.Run("revert", func(t *testing.T) {
		c := newCache(t)
		must(t, c.FillUserLikes(t.Context(), 1, []feed.LikeEntry{{Post: 10, Liked: true, Version: 50}}, true, longTTL))
		ch := setLiked(t, c, 1, 10, postTime, false, nil, window)
		if ch.Outcome != feed.LikeChanged || ch.Prev.Version != 50 || !ch.Prev.Liked {
			t.Fatalf("unlike = %+v; want changed from liked at 50", ch)
		}
		must(t, c.RevertLike(t.Context(), 1, 10, ch))
		if st := states(t, c, 1, []int64{10}, postTime); !st.Liked[10] {
			t.Errorf("after revert: %+v; want liked again", st)
		}
		// A revert of a change that was overtaken does nothing.
		ch1 := setLiked(t, c, 1, 11, postTime, true, nil, window)
		setLiked(t, c, 1, 11, postTime, false, nil, window)
		ch3 := setLiked(t, c, 1, 11, postTime, true, nil, window)
		must(t, c.RevertLike(t.Context(), 1, 11, ch1))
		if st := states(t, c, 1, []int64{11}, postTime); !st.Liked[11] {
			t.Errorf("after a stale revert: %+v; want still liked", st)
		}
		must(t, c.RevertLike(t.Context(), 1, 11, ch3))
		if st := states(t, c, 1, []int64{11}, postTime); st.Liked[11] {
			t.Errorf("after reverting the newest like: %+v; want unliked", st)
		}
	})

	t.Run("window and cold posts", func(t *testing.T) {
		c := newCache(t)
		// An incomplete set whose oldest action is from now: posts of an
		// hour ago may have been liked long ago, trimmed since.
		now := time.Now().UnixMicro()
		must(t, c.FillUserLikes(t.Context(), 1, []feed.LikeEntry{
			{Post: 20, Liked: true, Version: now}, {Post: 21, Liked: false, Version: now - 1},
		}, false, longTTL))
		st := states(t, c, 1, []int64{20, 21, 22}, postTime)
		if !st.Liked[20] || st.Liked[21] || !slices.Equal(st.Cold, []int64{22}) {
			t.Errorf("states = %+v; want 20 liked, 21 known unliked, 22 cold", st)
		}
		// A post created after the window start is known.
		if st := states(t, c, 1, []int64{23}, time.Now().Add(2*feed.LikeClockSkew)); len(st.Cold) != 0 || st.Liked[23] {
			t.Errorf("states of a new post = %+v; want known unliked", st)
		}
		if ch := setLiked(t, c, 1, 22, postTime, true, nil, window); ch.Outcome != feed.LikeCold {
			t.Fatalf("like of a cold post = %+v; want LikeCold", ch)
		}
		// SQL says it is liked already: nothing changes.
		ch := setLiked(t, c, 1, 22, postTime, true, &feed.LikeEntry{Post: 22, Liked: true, Version: 7}, window)
		if ch.Outcome != feed.LikeUnchanged || ch.Version != 7 {
			t.Errorf("like of a post SQL has liked = %+v; want unchanged at 7", ch)
		}
		ch = setLiked(t, c, 1, 22, postTime, false, &feed.LikeEntry{Post: 22, Liked: true, Version: 7}, window)
		if ch.Outcome != feed.LikeChanged || ch.Version <= now {
			t.Errorf("unlike of it = %+v; want changed with a version above the set's", ch)
		}
		// The set knows it now; the hint is not needed.
		if ch := setLiked(t, c, 1, 22, postTime, false, nil, window); ch.Outcome != feed.LikeUnchanged {
			t.Errorf("unlike again = %+v; want unchanged", ch)
		}
	})

	t.Run("trim moves the window", func(t *testing.T) {
		c := newCache(t)
		must(t, c.FillUserLikes(t.Context(), 1, nil, true, longTTL))
		for post := int64(1); post <= 5; post++ {
			// Once the window moved past the posts' time, they are cold:
			// the caller passes what SQL says (never liked).
			ch := setLiked(t, c, 1, post, postTime, true, nil, 3)
			if ch.Outcome == feed.LikeCold {
				if post < 5 {
					t.Errorf("like of post %d = %+v; want the window to move only at the 4th like", post, ch)
				}
				ch = setLiked(t, c, 1, post, postTime, true, &feed.LikeEntry{Post: post}, 3)
			}
			if ch.Outcome != feed.LikeChanged {
				t.Fatalf("like of post %d = %+v; want changed", post, ch)
			}
		}
		st := states(t, c, 1, []int64{1, 2, 3, 4, 5}, postTime)
		if !slices.Equal(st.Cold, []int64{1, 2}) || len(st.Liked) != 3 || !st.Liked[5] {
			t.Errorf("after 5 likes in a window of 3: %+v; want 1, 2 cold, 3-5 liked", st)
		}
	})

	t.Run("counters", func(t *testing.T) {
		c := newCache(t)
		ctx := t.Context()
		if _, ok, err := c.MoveLikeCount(ctx, 10, 1, 100, 1, longTTL); err != nil || ok {
			t.Errorf("move of an absent counter: ok %v, %v; want false (not created)", ok, err)
		}
		must(t, c.FillLikeCounts(ctx, map[int64]feed.LikeTally{10: {Count: 5, Seq: 5}, 11: {}}, longTTL))
		must(t, c.FillLikeCounts(ctx, map[int64]feed.LikeTally{10: {Count: 99, Seq: 99}}, longTTL)) // present: kept
		if n, ok, err := c.MoveLikeCount(ctx, 10, 2, 100, 1, longTTL); err != nil || !ok || n != 6 {
			t.Errorf("move: %d %v %v; want 6", n, ok, err)
		}
		if n, _, _ := c.MoveLikeCount(ctx, 11, 2, 100, -1, longTTL); n != -1 {
			t.Errorf("counters are plain integers: got %d; want -1 (callers clamp)", n)
		}
		st := states(t, c, 0, []int64{10, 11, 12}, postTime)
		if st.Counts[10] != 6 || st.Counts[11] != -1 || len(st.Counts) != 2 {
			t.Errorf("counts = %v; want 10:6 11:-1, 12 missing", st.Counts)
		}
		must(t, c.DropLikes(ctx, 0, 10))
		if st := states(t, c, 0, []int64{10}, postTime); len(st.Counts) != 0 {
			t.Errorf("after drop: %v; want missing", st.Counts)
		}
	})

	t.Run("settled counters", func(t *testing.T) {
		// A counter is SQL's tally plus the moves SQL does not have yet:
		// settling an event takes its move back and puts SQL's newer tally
		// in, whatever order writers settle in.
		c := newCache(t)
		ctx := t.Context()
		count := func(post int64) int64 {
			t.Helper()
			st := states(t, c, 0, []int64{post}, postTime)
			n, ok := st.Counts[post]
			if !ok {
				t.Fatalf("counter of %d missing", post)
			}
			return n
		}
		like := func(user, version int64) feed.LikeEvent {
			return feed.LikeEvent{User: user, Post: 10, Liked: true, Version: version}
		}
		must(t, c.FillLikeCounts(ctx, map[int64]feed.LikeTally{10: {Count: 9, Seq: 3}}, longTTL))
		for _, u := range []int64{1, 2} {
			if _, _, err := c.MoveLikeCount(ctx, 10, u, 100, 1, longTTL); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(10); n != 11 {
			t.Fatalf("two moves on 9: %d; want 11", n)
		}
		// Two writers commit 1's like (seq 4, count 10), then 2's (seq 5,
		// count 11), and settle in the other order.
		must(t, c.SettleLikes(ctx, map[int64]feed.LikeTally{10: {Count: 11, Seq: 5}}, []feed.LikeEvent{like(2, 100)}, longTTL))
		must(t, c.SettleLikes(ctx, map[int64]feed.LikeTally{10: {Count: 10, Seq: 4}}, []feed.LikeEvent{like(1, 100)}, longTTL))
		if n := count(10); n != 11 {
			t.Errorf("after both settled out of order: %d; want 11", n)
		}
		// A late move of a settled change (its repair) counts nothing.
		if n, _, err := c.MoveLikeCount(ctx, 10, 1, 100, 1, longTTL); err != nil || n != 11 {
			t.Errorf("late move of a settled change: %d, %v; want 11", n, err)
		}
		// A repeated event, settled again, changes nothing.
		must(t, c.SettleLikes(ctx, map[int64]feed.LikeTally{10: {Count: 11, Seq: 5}}, []feed.LikeEvent{like(2, 100)}, longTTL))
		if n := count(10); n != 11 {
			t.Errorf("after a repeated settle: %d; want 11", n)
		}
	})

	t.Run("counter loaded while likes were in flight", func(t *testing.T) {
		// The cache lost its keys while likes 1 and 2 were on their way to
		// SQL, and a read loaded the counter before they landed: SQL's
		// newer tally brings them in.
		c := newCache(t)
		ctx := t.Context()
		must(t, c.FillLikeCounts(ctx, map[int64]feed.LikeTally{20: {Count: 4, Seq: 7}}, longTTL))
		// A like made since the load moves it.
		if n, _, err := c.MoveLikeCount(ctx, 20, 3, 300, 1, longTTL); err != nil || n != 5 {
			t.Fatalf("move after the load: %d, %v; want 5", n, err)
		}
		evs := []feed.LikeEvent{{User: 1, Post: 20, Liked: true, Version: 100}, {User: 2, Post: 20, Liked: true, Version: 110}}
		must(t, c.SettleLikes(ctx, map[int64]feed.LikeTally{20: {Count: 6, Seq: 8}}, evs, longTTL))
		if st := states(t, c, 0, []int64{20}, postTime); st.Counts[20] != 7 {
			t.Errorf("after the in-flight likes landed: %v; want 7 (6 in SQL, 1 pending)", st.Counts)
		}
		must(t, c.SettleLikes(ctx, map[int64]feed.LikeTally{20: {Count: 7, Seq: 9}}, []feed.LikeEvent{{User: 3, Post: 20, Liked: true, Version: 300}}, longTTL))
		if st := states(t, c, 0, []int64{20}, postTime); st.Counts[20] != 7 {
			t.Errorf("after the last like landed: %v; want 7", st.Counts)
		}
		// A tally older than the counter's changes nothing; settling a
		// post without a counter caches none.
		must(t, c.SettleLikes(ctx, map[int64]feed.LikeTally{20: {Count: 2, Seq: 1}, 21: {Count: 3, Seq: 1}}, nil, longTTL))
		if st := states(t, c, 0, []int64{20, 21}, postTime); st.Counts[20] != 7 || len(st.Counts) != 1 {
			t.Errorf("after an older tally: %v; want 20:7, 21 missing", st.Counts)
		}
	})

	t.Run("unfinished changes", func(t *testing.T) {
		// A change is journaled with its decision and stays unfinished
		// until FinishLike: a process killed in between leaves it for the
		// user's next call on the pair to find and finish.
		c := newCache(t)
		ctx := t.Context()
		must(t, c.FillUserLikes(ctx, 1, nil, true, longTTL))
		must(t, c.FillUserLikes(ctx, 2, nil, true, longTTL))
		like := setLiked(t, c, 1, 10, postTime, true, nil, window)
		if like.Outcome != feed.LikeChanged || like.Unfinished {
			t.Fatalf("first like = %+v; want changed, nothing unfinished before it", like)
		}
		again := setLiked(t, c, 1, 10, postTime, true, nil, window)
		if again.Outcome != feed.LikeUnchanged || !again.Unfinished || again.Prev.Version != like.Version || !again.Prev.Liked {
			t.Fatalf("like again before FinishLike = %+v; want unchanged and unfinished at version %d", again, like.Version)
		}
		if ch := setLiked(t, c, 2, 10, postTime, true, nil, window); ch.Outcome != feed.LikeChanged || ch.Unfinished {
			t.Errorf("another user's like = %+v; want changed, not unfinished (journals are per user)", ch)
		}
		must(t, c.FinishLike(ctx, 1, 10, like.Version))
		if ch := setLiked(t, c, 1, 10, postTime, true, nil, window); ch.Outcome != feed.LikeUnchanged || ch.Unfinished {
			t.Errorf("like again after FinishLike = %+v; want unchanged, finished", ch)
		}
		unlike := setLiked(t, c, 1, 10, postTime, false, nil, window)
		must(t, c.FinishLike(ctx, 1, 10, like.Version)) // stale: the unlike's entry stays
		if ch := setLiked(t, c, 1, 10, postTime, false, nil, window); !ch.Unfinished || ch.Prev.Version != unlike.Version {
			t.Errorf("unlike again after a stale FinishLike = %+v; want unfinished at %d", ch, unlike.Version)
		}
		// A change over an unfinished one says so; reverting it makes the
		// one it replaced unfinished again.
		relike := setLiked(t, c, 1, 10, postTime, true, nil, window)
		if relike.Outcome != feed.LikeChanged || !relike.Unfinished || relike.Prev.Version != unlike.Version || relike.Prev.Liked {
			t.Fatalf("like over an unfinished unlike = %+v; want changed, Prev the unfinished unlike %d", relike, unlike.Version)
		}
		must(t, c.RevertLike(ctx, 1, 10, relike))
		if ch := setLiked(t, c, 1, 10, postTime, false, nil, window); ch.Outcome != feed.LikeUnchanged || !ch.Unfinished || ch.Version != unlike.Version {
			t.Errorf("after the revert = %+v; want the unlike %d back, unfinished", ch, unlike.Version)
		}
		must(t, c.FinishLike(ctx, 1, 10, unlike.Version))
		if ch := setLiked(t, c, 1, 10, postTime, false, nil, window); ch.Unfinished {
			t.Errorf("after finishing the unlike = %+v; want finished", ch)
		}
		// A change a concurrent retry finished is not reverted: its event
		// is durable.
		fin := setLiked(t, c, 1, 12, postTime, true, nil, window)
		must(t, c.FinishLike(ctx, 1, 12, fin.Version))
		must(t, c.RevertLike(ctx, 1, 12, fin))
		if st := states(t, c, 1, []int64{12}, postTime); !st.Liked[12] {
			t.Errorf("after reverting a finished like: %+v; want it kept", st)
		}
		// A reverted fresh change leaves nothing unfinished.
		ch := setLiked(t, c, 1, 11, postTime, true, nil, window)
		must(t, c.RevertLike(ctx, 1, 11, ch))
		if ch := setLiked(t, c, 1, 11, postTime, false, nil, window); ch.Outcome != feed.LikeUnchanged || ch.Unfinished {
			t.Errorf("after reverting a fresh like = %+v; want unchanged, nothing unfinished", ch)
		}
	})

	t.Run("counter moves once per change", func(t *testing.T) {
		// A retry finishing a change moves the counter only if the
		// change's own call did not: by user and version.
		c := newCache(t)
		ctx := t.Context()
		if _, ok, err := c.MoveLikeCount(ctx, 10, 1, 100, 1, longTTL); err != nil || ok {
			t.Errorf("move of an absent counter: ok %v, %v; want false (not created)", ok, err)
		}
		must(t, c.FillLikeCounts(ctx, map[int64]feed.LikeTally{10: {Count: 5}, 11: {}}, longTTL))
		for i, tc := range []struct {
			post, user, version, delta, want int64
		}{
			{10, 1, 200, 1, 6},
			{10, 1, 200, 1, 6},  // the same change again
			{10, 1, 150, 1, 6},  // an older change of the pair: a newer one moved it
			{10, 2, 200, 1, 7},  // another user, same version
			{11, 1, 200, 1, 1},  // another post
			{10, 1, 300, -1, 6}, // the pair's next change
			{10, 1, 300, -1, 6},
		} {
			n, ok, err := c.MoveLikeCount(ctx, tc.post, tc.user, tc.version, tc.delta, longTTL)
			if err != nil || !ok || n != tc.want {
				t.Errorf("step %d: MoveLikeCount(post %d, user %d, version %d, %+d) = %d, %v, %v; want %d", i, tc.post, tc.user, tc.version, tc.delta, n, ok, err, tc.want)
			}
		}
		st := states(t, c, 0, []int64{10, 11}, postTime)
		if st.Counts[10] != 6 || st.Counts[11] != 1 {
			t.Errorf("counts = %v; want 10:6 11:1", st.Counts)
		}
	})

	t.Run("counters only of counted posts", func(t *testing.T) {
		// The caller holds some counters itself and asks only for the
		// others; the reader's state is of every post all the same.
		c := newCache(t)
		ctx := t.Context()
		must(t, c.FillUserLikes(ctx, 1, nil, true, longTTL))
		setLiked(t, c, 1, 10, postTime, true, nil, window)
		must(t, c.FillLikeCounts(ctx, map[int64]feed.LikeTally{10: {Count: 3}, 11: {Count: 4}, 12: {Count: 5}}, longTTL))
		st, err := c.LikeStates(ctx, 1, []int64{10, 11}, []time.Time{postTime, postTime}, []int64{11}, longTTL)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Counts) != 1 || st.Counts[11] != 4 || !st.SetExists || !st.Liked[10] || st.Liked[11] || len(st.Cold) != 0 {
			t.Errorf("states counting 11 only = %+v; want count 11:4, 10 liked, 11 not", st)
		}
		// Nothing counted, a reader: the state alone.
		if st, err := c.LikeStates(ctx, 1, []int64{10}, []time.Time{postTime}, nil, longTTL); err != nil || len(st.Counts) != 0 || !st.Liked[10] {
			t.Errorf("states counting nothing = %+v, %v; want 10 liked, no counts", st, err)
		}
		// No reader: counters of any posts, nothing else.
		if st, err := c.LikeStates(ctx, 0, nil, nil, []int64{12, 13}, longTTL); err != nil || len(st.Counts) != 1 || st.Counts[12] != 5 || len(st.Liked) != 0 || len(st.Cold) != 0 {
			t.Errorf("counters alone = %+v, %v; want 12:5, 13 missing", st, err)
		}
		// Neither: an empty answer.
		if st, err := c.LikeStates(ctx, 0, nil, nil, nil, longTTL); err != nil || len(st.Counts) != 0 || len(st.Liked) != 0 {
			t.Errorf("empty states = %+v, %v; want empty", st, err)
		}
	})

	t.Run("liked by many readers", func(t *testing.T) {
		// The live stream asks every reader of one post at once; the
		// answer matches each reader's LikeStates.
		c := newCache(t)
		bc, ok := c.(interface {
			LikedBy(ctx context.Context, post int64, postTime time.Time, readers []int64) (map[int64]bool, []int64, error)
		})
		if !ok {
			t.Fatalf("%T has no LikedBy", c)
		}
		ctx := t.Context()
		must(t, c.FillUserLikes(ctx, 1, nil, true, longTTL))
		must(t, c.FillUserLikes(ctx, 2, nil, true, longTTL))
		setLiked(t, c, 1, 10, postTime, true, nil, window)
		// 3 has no set: cold.
		liked, cold, err := bc.LikedBy(ctx, 10, postTime, []int64{1, 2, 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(liked) != 1 || !liked[1] || len(cold) != 1 || cold[0] != 3 {
			t.Errorf("liked by = %v, cold %v; want 1 liked, 3 cold", liked, cold)
		}
		for _, r := range []int64{1, 2} {
			st := states(t, c, r, []int64{10}, postTime)
			if st.Liked[10] != liked[r] {
				t.Errorf("reader %d: LikeStates says %v, LikedBy %v", r, st.Liked[10], liked[r])
			}
		}
	})

	t.Run("reads renew counters", func(t *testing.T) {
		c := newCache(t)
		ctx := t.Context()
		must(t, c.FillLikeCounts(ctx, map[int64]feed.LikeTally{10: {Count: 3}, 11: {Count: 4}}, shortTTL))
		for range 3 {
			time.Sleep(shortTTL / 2)
			if _, err := c.LikeStates(ctx, 0, nil, nil, []int64{10}, shortTTL); err != nil {
				t.Fatal(err)
			}
		}
		st := states(t, c, 0, []int64{10, 11}, postTime)
		if st.Counts[10] != 3 {
			t.Errorf("a counter read every half ttl: %v; want kept", st.Counts)
		}
		if _, ok := st.Counts[11]; ok {
			t.Errorf("a counter nobody read for 1.5 ttl: %v; want expired", st.Counts)
		}
	})

	t.Run("recent likes", func(t *testing.T) {
		c := newCache(t)
		if got, ok, err := c.RecentLikes(t.Context(), 1); err != nil || ok || len(got) != 0 {
			t.Errorf("recent of an absent set = %v %v %v; want none, absent", got, ok, err)
		}
		must(t, c.FillUserLikes(t.Context(), 1, []feed.LikeEntry{{Post: 7, Liked: true, Version: 3}}, true, longTTL))
		a := setLiked(t, c, 1, 10, postTime, true, nil, window)
		setLiked(t, c, 1, 11, postTime, true, nil, window)
		b := setLiked(t, c, 1, 11, postTime, false, nil, window)
		got, ok, err := c.RecentLikes(t.Context(), 1)
		want := []feed.LikeEntry{{Post: 11, Liked: false, Version: b.Version}, {Post: 10, Liked: true, Version: a.Version}, {Post: 7, Liked: true, Version: 3}}
		if err != nil || !ok || !slices.Equal(got, want) {
			t.Errorf("recent = %+v %v %v; want %+v", got, ok, err, want)
		}
	})

	t.Run("posts from before 2025", func(t *testing.T) {
		// A post from before 2025 has a negative id: its like is not the
		// unlike of the post with the id's magnitude, nor the reverse.
		c := newCache(t)
		old, mirror := int64(-4096*1000), int64(4096*1000)
		must(t, c.FillUserLikes(t.Context(), 1, []feed.LikeEntry{{Post: -5, Liked: true, Version: 2}, {Post: 5, Liked: false, Version: 3}}, true, longTTL))
		like := setLiked(t, c, 1, old, postTime, true, nil, window)
		unlike := setLiked(t, c, 1, mirror, postTime, false, nil, window)
		if like.Outcome != feed.LikeChanged || unlike.Outcome != feed.LikeUnchanged {
			t.Fatalf("like of %d = %+v, unlike of %d = %+v; want changed, unchanged", old, like, mirror, unlike)
		}
		st := states(t, c, 1, []int64{old, mirror, -5, 5}, postTime)
		if !st.Liked[old] || st.Liked[mirror] || !st.Liked[-5] || st.Liked[5] || len(st.Cold) != 0 {
			t.Errorf("states = %+v; want %d and -5 liked, %d and 5 not", st, old, mirror)
		}
		got, _, err := c.RecentLikes(t.Context(), 1)
		want := []feed.LikeEntry{{Post: old, Liked: true, Version: like.Version}, {Post: 5, Liked: false, Version: 3}, {Post: -5, Liked: true, Version: 2}}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("recent = %+v, %v; want %+v", got, err, want)
		}
		must(t, c.RevertLike(t.Context(), 1, old, like))
		if st := states(t, c, 1, []int64{old}, postTime); st.Liked[old] {
			t.Errorf("after revert: %+v; want %d unliked", st, old)
		}
		if n, _, err := c.MoveLikeCount(t.Context(), old, 1, like.Version, 1, longTTL); err != nil || n != 0 && n != 1 {
			t.Errorf("MoveLikeCount(%d) = %d, %v", old, n, err)
		}
	})

	t.Run("fill keeps an existing set", func(t *testing.T) {
		c := newCache(t)
		must(t, c.FillUserLikes(t.Context(), 1, nil, true, longTTL))
		setLiked(t, c, 1, 10, postTime, true, nil, window)
		must(t, c.FillUserLikes(t.Context(), 1, nil, true, longTTL))
		if st := states(t, c, 1, []int64{10}, postTime); !st.Liked[10] {
			t.Errorf("after a second fill: %+v; want the like kept", st)
		}
		must(t, c.DropLikes(t.Context(), 1, 0))
		if st := states(t, c, 1, []int64{10}, postTime); st.SetExists {
			t.Errorf("after drop: %+v; want absent", st)
		}
	})
}

func setLiked(t *testing.T, c feed.LikeCache, user, post int64, postTime time.Time, liked bool, cold *feed.LikeEntry, window int) feed.LikeChange {
	t.Helper()
	ch, err := c.SetLiked(t.Context(), user, post, postTime, liked, cold, window, longTTL)
	if err != nil {
		t.Fatalf("SetLiked(%d, %d, %v): %v", user, post, liked, err)
	}
	return ch
}

func states(t *testing.T, c feed.LikeCache, reader int64, posts []int64, postTime time.Time) feed.LikeStates {
	t.Helper()
	times := make([]time.Time, len(posts))
	for i := range times {
		times[i] = postTime
	}
	st, err := c.LikeStates(t.Context(), reader, posts, times, posts, longTTL)
	if err != nil {
		t.Fatalf("LikeStates: %v", err)
	}
	return st
}
