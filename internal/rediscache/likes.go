package rediscache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// Likes live in four kinds of keys, under two hash tags:
//
//	likes:n:{<post>}  the post's like counter, a plain integer string;
//	                  renewed by every read (GETEX) and write
//	likes:m:{<post>}  the post's move marks, a sorted set: member a user,
//	                  score the version of the user's newest change that
//	                  moved the counter (MoveLikeCount), kept for
//	                  feed.LikeMoveMemory; same tag as the counter, so the
//	                  mark and the move are one script on one slot
//	likes:u:{<user>}  the user's recent set: a sorted set of the newest
//	                  actions, member "<post>" for a like and "-<post>"
//	                  for an unlike (likeMember: a post from before 2025
//	                  is "n<-post>"), score the action's version (its time
//	                  in microseconds, strictly increasing per user), and
//	                  member "w" whose score is the window start W: the set
//	                  knows every action on posts created after W (plus
//	                  feed.LikeClockSkew), since an older action could only
//	                  have been trimmed if its version was below W
//	likes:j:{<user>}  the user's journal, a hash: field a post's member,
//	                  value the version of a change decided but not yet
//	                  finished (event recorded, counter moved); same tag
//	                  as the set, so SetLiked writes both in one script
//
// Versions are below 2^53 (microseconds until the year 2255), exact as
// scores and as Lua numbers. W is at least 1, because ZMSCORE reports a
// missing member as 0 through go-redis.

var _ feed.LikeCache = (*Cache)(nil)

// The scripts, in lua/likes_*.lua.
var (
	setLiked   = redis.NewScript(setLikedScript)
	revertLike = redis.NewScript(revertLikeScript)
	fillLikes  = redis.NewScript(fillLikesScript)
	fillCount  = redis.NewScript(fillCountScript)
	settle     = redis.NewScript(settleScript)
	moveCount  = redis.NewScript(moveCountScript)
	finishLike = redis.NewScript(finishLikeScript)
)

func (c *Cache) likeUserKey(user int64) string {
	return c.likesKey + "u:{" + strconv.FormatInt(user, 10) + "}"
}

func (c *Cache) likeJournalKey(user int64) string {
	return c.likesKey + "j:{" + strconv.FormatInt(user, 10) + "}"
}

func (c *Cache) likeCountKey(post int64) string {
	return c.likesKey + "n:{" + strconv.FormatInt(post, 10) + "}"
}

func (c *Cache) likeMarksKey(post int64) string {
	return c.likesKey + "m:{" + strconv.FormatInt(post, 10) + "}"
}

func (c *Cache) likePendingKey(post int64) string {
	return c.likesKey + "p:{" + strconv.FormatInt(post, 10) + "}"
}

func (c *Cache) likeTallyKey(post int64) string {
	return c.likesKey + "t:{" + strconv.FormatInt(post, 10) + "}"
}

// likeMember is post's member in a recent set for a like; an unlike's is
// "-" and the same. A post from before 2025 has a negative id, which is
// written "n" and its magnitude, so that the "-" of an unlike stays
// unambiguous: "-5" is the unlike of post 5, as in every set written
// before such posts existed, and "-n5" that of post -5.
func likeMember(post int64) string {
	if post < 0 {
		return "n" + strconv.FormatUint(-uint64(post), 10)
	}
	return strconv.FormatInt(post, 10)
}

// parseLikeMember reads a member of a recent set; ok is false for "w" and
// anything else that names no action.
func parseLikeMember(m string) (post int64, liked, ok bool) {
	liked = !strings.HasPrefix(m, "-")
	m = strings.TrimPrefix(m, "-")
	neg := strings.HasPrefix(m, "n")
	m = strings.TrimPrefix(m, "n")
	if m == "" || m[0] < '1' || m[0] > '9' {
		return 0, false, false
	}
	post, err := strconv.ParseInt(m, 10, 64)
	if err != nil {
		return 0, false, false
	}
	if neg {
		post = -post
	}
	return post, liked, true
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// SetLiked decides a like or unlike in one script on the user's set.
func (c *Cache) SetLiked(ctx context.Context, user, post int64, postTime time.Time, liked bool, cold *feed.LikeEntry, window int, ttl time.Duration) (feed.LikeChange, error) {
	coldGiven, coldLiked, coldVersion := "0", "0", int64(0)
	if cold != nil {
		coldGiven, coldLiked, coldVersion = "1", boolArg(cold.Liked), cold.Version
	}
	res, err := setLiked.Run(ctx, c.client, []string{c.likeUserKey(user), c.likeJournalKey(user)},
		likeMember(post), boolArg(liked), micros(postTime), feed.LikeClockSkew.Microseconds(), max(window, 1), ms(ttl),
		coldGiven, coldLiked, coldVersion).Int64Slice()
	if err != nil {
		return feed.LikeChange{}, fmt.Errorf("rediscache: set like of %d on %d: %w", user, post, err)
	}
	if len(res) != 5 {
		return feed.LikeChange{}, fmt.Errorf("rediscache: set like of %d on %d: script returned %v", user, post, res)
	}
	return feed.LikeChange{
		Outcome:    feed.LikeOutcome(res[0]),
		Version:    res[1],
		Prev:       feed.LikeEntry{Post: post, Liked: res[2] == 1, Version: res[3]},
		Unfinished: res[4] == 1,
	}, nil
}

// RevertLike undoes ch if the pair still has its version, unfinished.
func (c *Cache) RevertLike(ctx context.Context, user, post int64, ch feed.LikeChange) error {
	// The change set the opposite of Prev.
	err := revertLike.Run(ctx, c.client, []string{c.likeUserKey(user), c.likeJournalKey(user)},
		likeMember(post), boolArg(!ch.Prev.Liked), ch.Version, boolArg(ch.Prev.Liked), ch.Prev.Version, boolArg(ch.Unfinished)).Err()
	if err != nil {
		return fmt.Errorf("rediscache: revert like of %d on %d: %w", user, post, err)
	}
	return nil
}

// FillUserLikes creates user's set unless it exists.
func (c *Cache) FillUserLikes(ctx context.Context, user int64, recent []feed.LikeEntry, complete bool, ttl time.Duration) error {
	w := windowStart(recent, complete)
	args := make([]any, 0, 2+2*len(recent))
	args = append(args, ms(ttl), w)
	for _, e := range recent {
		m := likeMember(e.Post)
		if !e.Liked {
			m = "-" + m
		}
		args = append(args, e.Version, m)
	}
	if err := fillLikes.Run(ctx, c.client, []string{c.likeUserKey(user)}, args...).Err(); err != nil {
		return fmt.Errorf("rediscache: fill likes of %d: %w", user, err)
	}
	return nil
}

// windowStart is W of a set filled with recent: 1 when it is every
// action, else the oldest version it holds.
func windowStart(recent []feed.LikeEntry, complete bool) int64 {
	if complete || len(recent) == 0 {
		return 1
	}
	w := recent[0].Version
	for _, e := range recent {
		w = min(w, e.Version)
	}
	return max(w, 1)
}

// LikeCount reads a counter and its load time, in one pipeline of two
// commands on the post's slot.
func (c *Cache) LikeCount(ctx context.Context, post int64, ttl time.Duration) (n, loaded int64, cached bool, err error) {
	p := c.client.Pipeline()
	count := p.GetEx(ctx, c.likeCountKey(post), max(ttl, 0))
	at := p.HGet(ctx, c.likeTallyKey(post), "at")
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, false, fmt.Errorf("rediscache: like count of %d: %w", post, err)
	}
	n, err = count.Int64()
	if errors.Is(err, redis.Nil) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("rediscache: like count of %d: %w", post, err)
	}
	loaded, _ = at.Int64() // absent: 0, unknown
	return n, loaded, true, nil
}

// MoveLikeCount adds user's change's delta to a cached counter once.
func (c *Cache) MoveLikeCount(ctx context.Context, post, user, version, delta, since int64, ttl time.Duration) (int64, bool, error) {
	res, err := moveCount.Run(ctx, c.client, []string{c.likeCountKey(post), c.likeMarksKey(post), c.likePendingKey(post), c.likeTallyKey(post)},
		user, version, delta, ms(ttl), feed.LikeMoveMemory.Microseconds(), since).Int64Slice()
	if err != nil || len(res) != 2 {
		return 0, false, fmt.Errorf("rediscache: move like count of %d by %d's change %d: %w %v", post, user, version, err, res)
	}
	return res[1], res[0] == 1, nil
}

// FinishLike clears the journal entry of user's change of post.
func (c *Cache) FinishLike(ctx context.Context, user, post, version int64) error {
	if err := finishLike.Run(ctx, c.client, []string{c.likeJournalKey(user)}, likeMember(post), version).Err(); err != nil {
		return fmt.Errorf("rediscache: finish like of %d on %d: %w", user, post, err)
	}
	return nil
}

// FillLikeCounts sets absent counters from SQL's tallies, in one
// pipeline of a script per post (each on its post's slot).
func (c *Cache) FillLikeCounts(ctx context.Context, tallies map[int64]feed.LikeTally, ttl time.Duration) error {
	if len(tallies) == 0 {
		return nil
	}
	calls := make([]scriptCall, 0, len(tallies))
	for post, t := range tallies {
		calls = append(calls, scriptCall{
			keys: []string{c.likeCountKey(post), c.likePendingKey(post), c.likeTallyKey(post)},
			args: []any{t.Count, t.Seq, ms(ttl)},
		})
	}
	if err := c.runEach(ctx, fillCount, calls); err != nil {
		return fmt.Errorf("rediscache: fill %d like counts: %w", len(tallies), err)
	}
	return nil
}

// SettleLikes settles evs' pending moves and puts newer tallies under the
// counters (lua/likes_settle.lua), in one pipeline of a script per post.
func (c *Cache) SettleLikes(ctx context.Context, tallies map[int64]feed.LikeTally, evs []feed.LikeEvent, ttl time.Duration) error {
	args := make(map[int64][]any, len(tallies))
	for post, t := range tallies {
		args[post] = []any{t.Seq, t.Count}
	}
	for _, ev := range evs {
		if args[ev.Post] == nil {
			args[ev.Post] = []any{-1, 0}
		}
		delta := 1
		if !ev.Liked {
			delta = -1
		}
		args[ev.Post] = append(args[ev.Post], ev.User, ev.Version, delta)
	}
	if len(args) == 0 {
		return nil
	}
	calls := make([]scriptCall, 0, len(args))
	for post, a := range args {
		calls = append(calls, scriptCall{
			keys: []string{c.likeCountKey(post), c.likeMarksKey(post), c.likePendingKey(post), c.likeTallyKey(post)},
			args: append([]any{a[0], a[1], ms(ttl), feed.LikeMoveMemory.Microseconds(), feed.LikePendingLimit.Microseconds()}, a[2:]...),
		})
	}
	if err := c.runEach(ctx, settle, calls); err != nil {
		return fmt.Errorf("rediscache: settle likes of %d posts: %w", len(args), err)
	}
	return nil
}

// LikeStates is one pipeline: a GETEX per counted post and one ZMSCORE
// of the reader's set, asking for the window start and both members of
// each post; no call at all when it would be empty.
func (c *Cache) LikeStates(ctx context.Context, reader int64, posts []int64, postTimes []time.Time, counted []int64, ttl time.Duration) (feed.LikeStates, error) {
	st := feed.LikeStates{Counts: make(map[int64]int64, len(counted)), Liked: map[int64]bool{}}
	if len(posts) == 0 {
		st.SetExists = reader != 0
		reader = 0
	}
	if reader == 0 && len(counted) == 0 {
		return st, nil
	}
	p := c.client.Pipeline()
	counts := make([]*redis.StringCmd, len(counted))
	for i, post := range counted {
		counts[i] = p.GetEx(ctx, c.likeCountKey(post), max(ttl, 0))
	}
	var scores *redis.FloatSliceCmd
	if reader != 0 {
		members := make([]string, 0, 1+2*len(posts))
		members = append(members, "w")
		for _, post := range posts {
			members = append(members, likeMember(post))
		}
		for _, post := range posts {
			members = append(members, "-"+likeMember(post))
		}
		scores = p.ZMScore(ctx, c.likeUserKey(reader), members...)
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return st, fmt.Errorf("rediscache: like states of %d posts: %w", max(len(posts), len(counted)), err)
	}
	for i, cmd := range counts {
		if n, err := cmd.Int64(); err == nil {
			st.Counts[counted[i]] = n
		}
	}
	if reader == 0 {
		return st, nil
	}
	sc, err := scores.Result()
	if err != nil || len(sc) != 1+2*len(posts) {
		return st, fmt.Errorf("rediscache: likes of %d: %w", reader, err)
	}
	w := sc[0]
	st.SetExists = w > 0
	for i, post := range posts {
		switch {
		case !st.SetExists:
			st.Cold = append(st.Cold, post)
		case sc[1+i] > 0:
			st.Liked[post] = true
		case sc[1+len(posts)+i] > 0:
		case float64(micros(postTimes[i])) > w+float64(feed.LikeClockSkew.Microseconds()):
		default:
			st.Cold = append(st.Cold, post)
		}
	}
	return st, nil
}

// DropLikes deletes post's counter and user's set.
func (c *Cache) DropLikes(ctx context.Context, user, post int64) error {
	p := c.client.Pipeline()
	if post != 0 {
		p.Del(ctx, c.likeCountKey(post), c.likeMarksKey(post), c.likePendingKey(post), c.likeTallyKey(post))
	}
	if user != 0 {
		p.Del(ctx, c.likeUserKey(user), c.likeJournalKey(user))
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("rediscache: drop likes: %w", err)
	}
	return nil
}

// DropUsersLikes deletes the sets of users (DropLikes' user part) in one
// pipeline.
func (c *Cache) DropUsersLikes(ctx context.Context, users []int64) error {
	if len(users) == 0 {
		return nil
	}
	p := c.client.Pipeline()
	for _, user := range users {
		p.Del(ctx, c.likeUserKey(user), c.likeJournalKey(user))
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("rediscache: drop the likes of %d users: %w", len(users), err)
	}
	return nil
}

// RecentLikes reads user's whole set (at most the window, 1,000 actions).
func (c *Cache) RecentLikes(ctx context.Context, user int64) ([]feed.LikeEntry, bool, error) {
	zs, err := c.client.ZRevRangeWithScores(ctx, c.likeUserKey(user), 0, -1).Result()
	if err != nil {
		return nil, false, fmt.Errorf("rediscache: recent likes of %d: %w", user, err)
	}
	out := make([]feed.LikeEntry, 0, len(zs))
	exists := false
	for _, z := range zs {
		m, _ := z.Member.(string)
		if m == "w" {
			exists = true
			continue
		}
		post, liked, ok := parseLikeMember(m)
		if !ok {
			continue
		}
		out = append(out, feed.LikeEntry{Post: post, Liked: liked, Version: int64(z.Score)})
	}
	return out, exists, nil
}

// LikedBy answers which of readers like post (created at postTime), in
// one pipeline: a ZMSCORE of each reader's set for the window start and
// both members of the post. cold lists the readers whose set does not
// know (absent, or the post older than its window).
func (c *Cache) LikedBy(ctx context.Context, post int64, postTime time.Time, readers []int64) (liked map[int64]bool, cold []int64, err error) {
	liked = map[int64]bool{}
	if len(readers) == 0 {
		return liked, nil, nil
	}
	p := c.client.Pipeline()
	cmds := make([]*redis.FloatSliceCmd, len(readers))
	on, off := likeMember(post), "-"+likeMember(post)
	for i, r := range readers {
		cmds[i] = p.ZMScore(ctx, c.likeUserKey(r), "w", on, off)
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("rediscache: likes of %d readers on %d: %w", len(readers), post, err)
	}
	t := float64(micros(postTime))
	for i, r := range readers {
		sc, err := cmds[i].Result()
		if err != nil || len(sc) != 3 {
			return nil, nil, fmt.Errorf("rediscache: likes of %d on %d: %w", r, post, err)
		}
		switch w := sc[0]; {
		case w <= 0: // no set
			cold = append(cold, r)
		case sc[1] > 0:
			liked[r] = true
		case sc[2] > 0:
		case t > w+float64(feed.LikeClockSkew.Microseconds()):
		default:
			cold = append(cold, r)
		}
	}
	return liked, cold, nil
}
