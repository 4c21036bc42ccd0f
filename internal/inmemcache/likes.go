package inmemcache

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Likes mirror rediscache's (see its likes.go): a counter per post and a
// recent set per user of the newest actions, with the window start W
// below which the set may have forgotten an action.

var _ feed.LikeCache = (*Cache)(nil)

type likeShard struct {
	mu     sync.Mutex
	counts map[int64]likeCount
	users  map[int64]*likeSet
	// marks holds, per post, each user's newest change that moved the
	// counter (MoveLikeCount), for feed.LikeMoveMemory.
	marks map[int64]map[int64]likeMark
}

type likeMark struct {
	version int64
	at      int64 // unix ns of the move
}

// likeCount is a counter: a tally SQL had plus the moves pending on it,
// as rediscache's keys n, b and p of a post hold them.
type likeCount struct {
	n       int64
	expires int64
	tally   feed.LikeTally
	// pending holds the moves not yet settled: user and version → when
	// moved (unix ns).
	pending map[[2]int64]int64
}

type likeSet struct {
	acts    map[int64]feed.LikeEntry
	w       int64 // window start, microseconds; >= 1
	top     int64 // highest version issued
	expires int64
	// journal holds the changes decided but not finished: post → version.
	journal map[int64]int64
}

func (s *likeShard) reset() {
	s.counts = map[int64]likeCount{}
	s.users = map[int64]*likeSet{}
	s.marks = map[int64]map[int64]likeMark{}
}

func (s *likeShard) sweep(now int64) {
	for k, e := range s.counts {
		if expired(e.expires, now) {
			delete(s.counts, k)
		}
	}
	for k, e := range s.users {
		if expired(e.expires, now) {
			delete(s.users, k)
		}
	}
	for k, m := range s.marks {
		trimMarks(m, now)
		if len(m) == 0 {
			delete(s.marks, k)
		}
	}
}

func trimMarks(m map[int64]likeMark, now int64) {
	for u, e := range m {
		if now-e.at > feed.LikeMoveMemory.Nanoseconds() {
			delete(m, u)
		}
	}
}

func (s *likeShard) set(user, now int64) *likeSet {
	u := s.users[user]
	if u != nil && expired(u.expires, now) {
		delete(s.users, user)
		return nil
	}
	return u
}

func (s *likeShard) count(post, now int64) (likeCount, bool) {
	e, ok := s.counts[post]
	if ok && expired(e.expires, now) {
		delete(s.counts, post)
		return likeCount{}, false
	}
	return e, ok
}

// known reports what the set knows of post: its entry, or whether absence
// means "never acted on" (post newer than the window).
func (u *likeSet) known(post int64, postTime time.Time) (feed.LikeEntry, bool) {
	if e, ok := u.acts[post]; ok {
		return e, true
	}
	if postTime.UnixMicro() > u.w+feed.LikeClockSkew.Microseconds() {
		return feed.LikeEntry{Post: post}, true
	}
	return feed.LikeEntry{}, false
}

// SetLiked decides a like or unlike on user's set.
func (c *Cache) SetLiked(ctx context.Context, user, post int64, postTime time.Time, liked bool, cold *feed.LikeEntry, window int, ttl time.Duration) (feed.LikeChange, error) {
	if c.closed.Load() {
		return feed.LikeChange{}, errClosed
	}
	now := c.now()
	s := &c.likes[shardOf(user)]
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.set(user, now.UnixNano())
	if u == nil {
		return feed.LikeChange{Outcome: feed.LikeAbsent}, nil
	}
	cur, ok := u.known(post, postTime)
	if !ok {
		if cold == nil {
			return feed.LikeChange{Outcome: feed.LikeCold}, nil
		}
		cur = feed.LikeEntry{Post: post, Liked: cold.Liked, Version: cold.Version}
	}
	u.expires = deadline(now, ttl)
	unfinished := cur.Version > 0 && u.journal[post] == cur.Version
	if cur.Liked == liked {
		return feed.LikeChange{Outcome: feed.LikeUnchanged, Version: cur.Version, Prev: cur, Unfinished: unfinished}, nil
	}
	v := max(now.UnixMicro(), u.top+1, cur.Version+1)
	u.top = v
	u.acts[post] = feed.LikeEntry{Post: post, Liked: liked, Version: v}
	if len(u.acts) > max(window, 1) {
		// Trim the oldest actions; the window start moves up to the
		// newest one dropped.
		for len(u.acts) > max(window, 1) {
			oldest := feed.LikeEntry{Version: 1<<63 - 1}
			for _, e := range u.acts {
				if e.Version < oldest.Version {
					oldest = e
				}
			}
			delete(u.acts, oldest.Post)
			u.w = max(u.w, oldest.Version)
		}
	}
	if u.journal == nil {
		u.journal = map[int64]int64{}
	}
	u.journal[post] = v
	return feed.LikeChange{Outcome: feed.LikeChanged, Version: v, Prev: cur, Unfinished: unfinished}, nil
}

// RevertLike undoes ch if the pair still has its version, unfinished.
func (c *Cache) RevertLike(ctx context.Context, user, post int64, ch feed.LikeChange) error {
	if c.closed.Load() {
		return errClosed
	}
	s := &c.likes[shardOf(user)]
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.set(user, c.now().UnixNano())
	if u == nil {
		return nil
	}
	if e, ok := u.acts[post]; !ok || e.Version != ch.Version || u.journal[post] != ch.Version {
		return nil
	}
	delete(u.acts, post)
	delete(u.journal, post)
	if ch.Unfinished {
		u.journal[post] = ch.Prev.Version
	}
	if ch.Prev.Version > 0 {
		u.acts[post] = ch.Prev
	}
	return nil
}

// FillUserLikes creates user's set unless it exists.
func (c *Cache) FillUserLikes(ctx context.Context, user int64, recent []feed.LikeEntry, complete bool, ttl time.Duration) error {
	if c.closed.Load() {
		return errClosed
	}
	now := c.now()
	s := &c.likes[shardOf(user)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set(user, now.UnixNano()) != nil {
		return nil
	}
	u := &likeSet{acts: make(map[int64]feed.LikeEntry, len(recent)), w: 1, expires: deadline(now, ttl)}
	for _, e := range recent {
		u.acts[e.Post] = e
		u.top = max(u.top, e.Version)
	}
	if !complete && len(recent) > 0 {
		u.w = recent[0].Version
		for _, e := range recent {
			u.w = min(u.w, e.Version)
		}
		u.w = max(u.w, 1)
	}
	s.users[user] = u
	return nil
}

// MoveLikeCount adds user's change's delta to a cached counter once.
func (c *Cache) MoveLikeCount(ctx context.Context, post, user, version, delta int64, ttl time.Duration) (int64, bool, error) {
	if c.closed.Load() {
		return 0, false, errClosed
	}
	now := c.now()
	s := &c.likes[shardOf(post)]
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.marks[post]
	if m == nil {
		m = map[int64]likeMark{}
		s.marks[post] = m
	}
	moved := m[user].version >= version
	if !moved {
		// The janitor's sweep drops marks older than the memory.
		m[user] = likeMark{version: version, at: now.UnixNano()}
	}
	e, ok := s.count(post, now.UnixNano())
	if !ok {
		return 0, false, nil
	}
	if !moved {
		e.n += delta
		if e.pending == nil {
			e.pending = map[[2]int64]int64{}
		}
		e.pending[[2]int64{user, version}] = now.UnixNano()
	}
	e.expires = deadline(now, ttl)
	s.counts[post] = e
	return e.n, true, nil
}

// SettleLikes settles evs' pending moves and moves counters to newer
// tallies, as rediscache's likes_settle.lua does.
func (c *Cache) SettleLikes(ctx context.Context, tallies map[int64]feed.LikeTally, evs []feed.LikeEvent, ttl time.Duration) error {
	if c.closed.Load() {
		return errClosed
	}
	now := c.now()
	byPost := map[int64][]feed.LikeEvent{}
	for _, ev := range evs {
		byPost[ev.Post] = append(byPost[ev.Post], ev)
	}
	for post := range tallies {
		if _, ok := byPost[post]; !ok {
			byPost[post] = nil
		}
	}
	for post, evs := range byPost {
		s := &c.likes[shardOf(post)]
		lockAnd(&s.mu, func() {
			m := s.marks[post]
			if m == nil {
				m = map[int64]likeMark{}
				s.marks[post] = m
			}
			e, ok := s.count(post, now.UnixNano())
			for _, ev := range evs {
				if ok {
					if _, was := e.pending[[2]int64{ev.User, ev.Version}]; was {
						delete(e.pending, [2]int64{ev.User, ev.Version})
						e.n -= likeDelta(ev.Liked)
					}
				}
				// Settled is moved: a late move of the change (its repair)
				// must not count it again.
				if m[ev.User].version < ev.Version {
					m[ev.User] = likeMark{version: ev.Version, at: now.UnixNano()}
				}
			}
			if !ok {
				return
			}
			for _, at := range e.pending {
				if now.UnixNano()-at > feed.LikePendingLimit.Nanoseconds() {
					delete(s.counts, post)
					return
				}
			}
			if t, has := tallies[post]; has && t.Seq > e.tally.Seq {
				e.n += t.Count - e.tally.Count
				e.tally = t
			}
			e.expires = deadline(now, ttl)
			s.counts[post] = e
		})
	}
	return nil
}

// likeDelta is how much a change moves its post's counter.
func likeDelta(liked bool) int64 {
	if liked {
		return 1
	}
	return -1
}

// FinishLike clears the journal entry of user's change of post.
func (c *Cache) FinishLike(ctx context.Context, user, post, version int64) error {
	if c.closed.Load() {
		return errClosed
	}
	s := &c.likes[shardOf(user)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.set(user, c.now().UnixNano()); u != nil && u.journal[post] == version {
		delete(u.journal, post)
	}
	return nil
}

// FillLikeCounts caches absent counters.
func (c *Cache) FillLikeCounts(ctx context.Context, tallies map[int64]feed.LikeTally, ttl time.Duration) error {
	if c.closed.Load() {
		return errClosed
	}
	now := c.now()
	for post, t := range tallies {
		s := &c.likes[shardOf(post)]
		lockAnd(&s.mu, func() {
			if _, ok := s.count(post, now.UnixNano()); !ok {
				s.counts[post] = likeCount{n: t.Count, expires: deadline(now, ttl), tally: t}
			}
		})
	}
	return nil
}

// LikeStates answers a page's counters and reader's state.
func (c *Cache) LikeStates(ctx context.Context, reader int64, posts []int64, postTimes []time.Time, counted []int64, ttl time.Duration) (feed.LikeStates, error) {
	st := feed.LikeStates{Counts: make(map[int64]int64, len(counted)), Liked: map[int64]bool{}}
	if c.closed.Load() {
		return st, errClosed
	}
	now := c.now()
	for _, post := range counted {
		s := &c.likes[shardOf(post)]
		lockAnd(&s.mu, func() {
			if e, ok := s.count(post, now.UnixNano()); ok {
				e.expires = deadline(now, ttl)
				s.counts[post] = e
				st.Counts[post] = e.n
			}
		})
	}
	if reader == 0 {
		return st, nil
	}
	s := &c.likes[shardOf(reader)]
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.set(reader, now.UnixNano())
	st.SetExists = u != nil
	for i, post := range posts {
		if u == nil {
			st.Cold = append(st.Cold, post)
			continue
		}
		e, ok := u.known(post, postTimes[i])
		switch {
		case !ok:
			st.Cold = append(st.Cold, post)
		case e.Liked:
			st.Liked[post] = true
		}
	}
	return st, nil
}

// DropLikes forgets post's counter and user's set.
func (c *Cache) DropLikes(ctx context.Context, user, post int64) error {
	if c.closed.Load() {
		return errClosed
	}
	if post != 0 {
		s := &c.likes[shardOf(post)]
		lockAnd(&s.mu, func() { delete(s.counts, post); delete(s.marks, post) })
	}
	if user != 0 {
		s := &c.likes[shardOf(user)]
		lockAnd(&s.mu, func() { delete(s.users, user) })
	}
	return nil
}

// RecentLikes returns user's set, newest first.
func (c *Cache) RecentLikes(ctx context.Context, user int64) ([]feed.LikeEntry, bool, error) {
	if c.closed.Load() {
		return nil, false, errClosed
	}
	s := &c.likes[shardOf(user)]
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.set(user, c.now().UnixNano())
	if u == nil {
		return nil, false, nil
	}
	out := make([]feed.LikeEntry, 0, len(u.acts))
	for _, e := range u.acts {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b feed.LikeEntry) int { return cmp.Compare(b.Version, a.Version) })
	return out, true, nil
}

// LikedBy answers which of readers like post; cold lists the readers
// whose set does not know.
func (c *Cache) LikedBy(ctx context.Context, post int64, postTime time.Time, readers []int64) (liked map[int64]bool, cold []int64, err error) {
	if c.closed.Load() {
		return nil, nil, errClosed
	}
	liked = map[int64]bool{}
	now := c.now().UnixNano()
	for _, r := range readers {
		s := &c.likes[shardOf(r)]
		lockAnd(&s.mu, func() {
			u := s.set(r, now)
			if u == nil {
				cold = append(cold, r)
				return
			}
			switch e, ok := u.known(post, postTime); {
			case !ok:
				cold = append(cold, r)
			case e.Liked:
				liked[r] = true
			}
		})
	}
	return liked, cold, nil
}
