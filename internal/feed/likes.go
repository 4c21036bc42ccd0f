package feed

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// QueueLikes carries like events from the API to the batching writer.
const QueueLikes = "likes"

// CursorLikes pages a user's likes, newest first: position is the version
// (the like's time in microseconds) of the last like seen. A user's
// versions are strictly increasing, so one is an exact position.
const CursorLikes byte = 'l'

// LikeState is what a post shows one reader.
type LikeState struct {
	Count     int64
	LikedByMe bool
	// Replies is the post's live direct replies (package replies), shown
	// with its likes.
	Replies int64
	// Reposts is the post's live reposts, and RepostedByMe whether the
	// reader is among their authors (docs/reposts.md).
	Reposts      int64
	RepostedByMe bool
}

// Counts are a post's counters kept on its row: its live direct replies
// and its live reposts, read together in one query.
type Counts struct {
	Replies int64
	Reposts int64
}

// LikeEntry is one user's latest action on one post. Version 0 means the
// user never acted on it.
type LikeEntry struct {
	Post    int64
	Liked   bool
	Version int64
}

// LikeChange is what SetLiked did.
type LikeChange struct {
	// Outcome says whether the cache decided, and what.
	Outcome LikeOutcome
	// Version is the new action's version when Outcome is LikeChanged,
	// else the version of the state that was already there.
	Version int64
	// Prev is the state the change replaced, for RevertLike; when
	// Outcome is LikeUnchanged, the state that is there.
	Prev LikeEntry
	// Unfinished says Prev is a change whose event and counter move are
	// not known to have happened: the call that decided it died or failed
	// before FinishLike. The caller redoes them (RecordLike is idempotent
	// by version, MoveLikeCount by user and version) before going on.
	Unfinished bool
}

// LikeOutcome is the result of SetLiked.
type LikeOutcome int

const (
	// LikeUnchanged: the state already was the one asked for.
	LikeUnchanged LikeOutcome = iota
	// LikeChanged: the state flipped; the caller publishes the event.
	LikeChanged
	// LikeCold: the user's recent set exists but does not know the post
	// (older than its window): call again with the state SQL has.
	LikeCold
	// LikeAbsent: the user has no recent set: fill it from SQL and call
	// again.
	LikeAbsent
)

// LikeTally is a post's like count as SQL has it, with the count's
// sequence: the number of writes that moved it, which orders two
// tallies of one post (counts alone do not: unlikes lower them). The
// cache's counter is a tally plus the moves of likes on their way to
// SQL; a newer tally replaces the older one under it (SettleLikes).
type LikeTally struct {
	Count, Seq int64
}

// LikesWritten is what a write of like events did in SQL.
type LikesWritten struct {
	// Deltas is how much each post's like count moved: the likes rows
	// that actually turned liked minus those that turned unliked (posts
	// that did not move are left out).
	Deltas map[int64]int64
	// Tallies is SQL's tally of each post of the events after the write,
	// for SettleLikes.
	Tallies map[int64]LikeTally
	// Rows is how many likes rows were written; Writes how many write
	// statements it took (the batching ratio's numerator).
	Rows, Writes int
}

// LikeStates is a page's like state as the cache knows it.
type LikeStates struct {
	// Counts holds the cached counters; a post without one is a miss.
	Counts map[int64]int64
	// Liked holds the posts the reader likes, as far as the recent set
	// knows.
	Liked map[int64]bool
	// Cold lists the posts whose state the recent set does not know: all
	// of them when the set is absent (SetExists false).
	Cold      []int64
	SetExists bool
}

// LikeCache is the hot state of likes: per-post counters (kept while
// read or written, reloaded from SQL when they expire) and per-user
// recent sets of the newest actions, which decide idempotency on the
// write path and answer liked_by_me on the read path. Every call touches
// keys of one hash tag, and LikeStates is one round trip: pipelined
// single-key commands, so Redis Cluster serves it.
type LikeCache interface {
	// SetLiked sets user's state of post (created at postTime) to liked,
	// if the recent set can decide. cold, when not nil, is what SQL says
	// of the pair, used only if the set does not know it. The set keeps
	// the newest window actions and lives for ttl after each change. A
	// change stays unfinished until FinishLike: the step that decides it
	// journals it, so that a process dying before its event and counter
	// move leaves a trace the user's next call on the post finds
	// (LikeChange.Unfinished).
	SetLiked(ctx context.Context, user, post int64, postTime time.Time, liked bool, cold *LikeEntry, window int, ttl time.Duration) (LikeChange, error)
	// RevertLike undoes a change whose event could not be published, if
	// the pair still has that change's version and it is unfinished (a
	// concurrent call that finished it made its event durable); a
	// previous state that was unfinished is so again.
	RevertLike(ctx context.Context, user, post int64, ch LikeChange) error
	// FillUserLikes creates user's recent set from SQL's newest actions
	// (newest first) unless it exists. complete says they are all of the
	// user's actions.
	FillUserLikes(ctx context.Context, user int64, recent []LikeEntry, complete bool, ttl time.Duration) error
	// LikeCount returns post's counter, renewing its ttl, and when it was
	// loaded from SQL (in µs of the cache's clock, as versions are; 0 if
	// the cache does not know): a like reads it before its event is
	// recorded, and passes the time to MoveLikeCount.
	LikeCount(ctx context.Context, post int64, ttl time.Duration) (n, loaded int64, cached bool, err error)
	// MoveLikeCount adds user's change of version's delta to post's
	// counter if it is cached, once, however often it is called for that
	// change (or after a newer change of the pair moved it, or after
	// SettleLikes settled it), for LikeMoveMemory at least; it renews the
	// counter's ttl and returns its value with the change and whether it
	// was cached. The move is pending until SettleLikes says SQL has the
	// change. A counter loaded from SQL after since (the cache lost its
	// keys) may hold the change already: it is not moved, and its settle
	// brings it in. since is the load time LikeCount gave before the
	// change's event was recorded, or, for a change whose event may have
	// been recorded before, the lesser of that and the change's version.
	MoveLikeCount(ctx context.Context, post, user, version, delta, since int64, ttl time.Duration) (int64, bool, error)
	// SettleLikes tells the cache what SQL has after a write of like
	// events: tallies holds the tallies of the events' posts (and of any
	// post whose count SQL moved), evs the events written (applied or
	// found already there). Each event's pending move is settled, and a
	// counter whose tally is older than the one given takes the new one,
	// so that a counter loaded while events were on their way to SQL (the
	// cache lost its keys with their moves) ends exact once they land. A
	// counter that cannot be reconciled (its tally expired, or a move was
	// pending too long) is dropped, for the next read to load from SQL.
	SettleLikes(ctx context.Context, tallies map[int64]LikeTally, evs []LikeEvent, ttl time.Duration) error
	// FinishLike clears the journal of user's change of post of version
	// (a no-op if the pair has changed since): its event is recorded and
	// its counter moved.
	FinishLike(ctx context.Context, user, post, version int64) error
	// FillLikeCounts caches the counters that are absent, for ttl, from
	// the tallies SQL has.
	FillLikeCounts(ctx context.Context, tallies map[int64]LikeTally, ttl time.Duration) error
	// LikeStates returns, in one round trip, reader's state of each of
	// posts (reader 0: none; postTimes[i] is the creation time of
	// posts[i]) and the cached counters of counted, renewing their ttl.
	// counted is whichever posts the caller wants counters of, usually
	// those of posts it does not hold itself; with no reader and nothing
	// counted it costs nothing.
	LikeStates(ctx context.Context, reader int64, posts []int64, postTimes []time.Time, counted []int64, ttl time.Duration) (LikeStates, error)
	// RecentLikes returns every action in user's recent set, newest
	// first, and whether the set exists: the actions SQL may not have yet.
	RecentLikes(ctx context.Context, user int64) ([]LikeEntry, bool, error)
}

// LikeMoveMemory is how long MoveLikeCount remembers a change it moved a
// counter for. It outlasts the 15 s a like call may run, so that a retry
// racing the call it repairs moves once. A change left unfinished longer
// than this by a process that died just after its move (between the move
// and FinishLike) is moved again by its repair; the repair records the
// event again, and SettleLikes of that event takes the second move back.
const LikeMoveMemory = time.Minute

// LikePendingLimit is how long a counter move may wait for SettleLikes
// before the counter is dropped and loaded again from SQL: a settle that
// never came (the writer could not reach the cache) must not leave a
// counter off for the days it lives. It outlasts a broker outage that
// holds like events back for minutes.
const LikePendingLimit = 15 * time.Minute

// LikeClockSkew is how far the cache's clock (which versions likes) and
// the clocks that stamp post ids may disagree. A post created less than
// this after the oldest action a recent set still holds counts as unknown
// to the set, since its like might have been trimmed.
const LikeClockSkew = time.Minute

// Liker is one like of a post: who, and when (its version).
type Liker struct {
	User    User
	Version int64
}

// LikedPost is one post a user likes, and when (the like's version).
type LikedPost struct {
	Post    Post
	Version int64
}

// CursorLikers pages a post's likers, newest like first. Versions are
// unique per user, not per post, so the position is the pair (version,
// user id) of the last liker seen.
const CursorLikers byte = 'k'

// LikerPage is one page of a post's likers, newest like first. Next is
// the last liker the page covers (it may be one left out), which the next
// page starts after; its zero value says this page is the last.
type LikerPage struct {
	Likers []Liker
	Next   Liker
}

// More reports whether another page follows.
func (p LikerPage) More() bool { return p.Next.User.ID != 0 }

// EncodeLikerCursor renders a likers position.
func EncodeLikerCursor(version, user int64) string {
	buf := make([]byte, 2, 2+2*binary.MaxVarintLen64)
	buf[0], buf[1] = cursorVersion, CursorLikers
	buf = binary.AppendUvarint(buf, uint64(version))
	buf = binary.AppendUvarint(buf, uint64(user))
	return base64.RawURLEncoding.EncodeToString(buf)
}

// DecodeLikerCursor parses a likers cursor; "" is the start (0, 0).
func DecodeLikerCursor(s string) (version, user int64, err error) {
	if s == "" {
		return 0, 0, nil
	}
	bad := Errorf(EINVALID, "cursor is not valid: pass back next_cursor exactly as a previous page returned it")
	if len(s) > 48 {
		return 0, 0, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 4 || raw[0] != cursorVersion || raw[1] != CursorLikers {
		return 0, 0, bad
	}
	v, n := binary.Uvarint(raw[2:])
	if n <= 0 {
		return 0, 0, bad
	}
	u, m := binary.Uvarint(raw[2+n:])
	if m <= 0 || 2+n+m != len(raw) || v == 0 || u == 0 || v > 1<<63-1 || u > 1<<63-1 {
		return 0, 0, bad
	}
	return int64(v), int64(u), nil
}
