package feed

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"
)

// Ids are integers of 53 bits and a sign: id = ms<<12 | seq, where ms
// counts milliseconds from IDEpoch (2025-01-01) and seq is 12 bits of
// sequence. |id| < 2^53 is what a float64 holds exactly, so an id is its
// own exact Redis ZSET score, a Lua number, and survives JavaScript's
// Number; unique ids also make every timestamp tie strictly ordered, which
// keeps cursors exact. 41 bits of milliseconds last until 2094.
//
// Ids before 2025 (imported history, docs/design.md "Ids before 2025")
// are the same formula with ms < 0: negative, down to MinID at
// HistoryStart (2006-01-01). Every id IDGen ever made (ms >= 1, so id >=
// 4096) keeps its value and its meaning, and sorts above all history,
// which sorts by time as new posts do. In Go, ms<<12 | seq of a negative
// ms is ms*4096 + seq and id>>12 is ms again (an arithmetic shift floors).
//
// 0 is never an id (IDGen starts at ms 1, IDAt refuses it), so 0 keeps
// meaning "none" wherever an id is a bound or a position: a cursor's
// start, "no upper bound", "no lower bound", a reader with no marker.
const (
	seqBits = 12
	seqMask = 1<<seqBits - 1
	// MaxSeq is the largest sequence number of a millisecond.
	MaxSeq = seqMask
	// MaxID is the largest id IDGen produces (2^53 - 1).
	MaxID = 1<<53 - 1
	// MinID is the smallest id there is: the first of HistoryStart.
	MinID = -historyMillis << seqBits
	// historyMillis is HistoryStart to IDEpoch in milliseconds: 19 years
	// with 5 leap days (TestIDBounds checks it against the dates).
	historyMillis = (19*365 + 5) * 24 * 60 * 60 * 1000
)

// IDEpoch is the zero of the id clock.
var IDEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// HistoryStart is the earliest time an id can carry: imports bring posts
// from then on.
var HistoryStart = time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC)

// ValidPostID reports whether id can be a post's id: MinID to MaxID, not 0.
func ValidPostID(id int64) bool { return id >= MinID && id <= MaxID && id != 0 }

// IDAt returns the id of a post created at t with sequence number seq
// (0..MaxSeq): what an import gives a post from its own created_at, so
// that history sorts by time among the posts made here. It is
// deterministic; two posts of one millisecond need two seqs, which the
// caller chooses (ImportSeq) and changes on a conflict. t must lie in
// [HistoryStart, IDTime(MaxID)]; the id 0 (2025-01-01T00:00:00.000Z, seq
// 0) is refused, so that 0 keeps meaning none: take another seq.
func IDAt(t time.Time, seq int64) (int64, error) {
	if seq < 0 || seq > MaxSeq {
		return 0, Errorf(EINVALID, "an id's sequence number is 0 to %d, not %d", MaxSeq, seq)
	}
	if t.Before(HistoryStart) || t.After(IDTime(MaxID)) {
		return 0, Errorf(EINVALID, "%s is outside the times ids can carry, %s to %s",
			t.UTC().Format(time.RFC3339Nano), HistoryStart.Format(time.RFC3339), IDTime(MaxID).Format(time.RFC3339))
	}
	// UnixMilli floors (a time's nanoseconds within its second are never
	// negative), so an instant 0.5 ms before the epoch is in ms -1, as its
	// IDTime says; t.Sub(IDEpoch).Milliseconds() would truncate it to 0.
	ms := t.UnixMilli() - IDEpoch.UnixMilli()
	id := ms<<seqBits | seq
	if id == 0 {
		return 0, Errorf(EINVALID, "the id of %s with sequence 0 would be 0, which means none: take another sequence number", t.UTC().Format(time.RFC3339Nano))
	}
	return id, nil
}

// ImportSeq is the sequence number that IDAt takes for an imported post on
// its attempt-th try (from 0): a hash of the post's author and external
// id, so that importing the same file twice, or into another database,
// gives the same ids, and posts of one millisecond most likely differ. On
// a conflict (the id is taken: another post of that millisecond) the
// importer tries attempt+1, which hashes anew.
func ImportSeq(author int64, externalID string, attempt int) int64 {
	h := fnv.New64a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(author))
	binary.BigEndian.PutUint64(b[8:], uint64(attempt))
	h.Write(b[:])
	h.Write([]byte(externalID))
	return int64(h.Sum64() & seqMask)
}

// IDGen hands out unique, time-ordered ids within one process. Processes
// sharing a database start each millisecond's sequence at a random point,
// so collisions are rare; the database's primary key catches the rest and
// the caller retries with a fresh id.
type IDGen struct {
	mu  sync.Mutex
	ms  int64
	seq int64
	now func() time.Time
	// shards holds NextOn's sequences, one per shard.
	shards map[int64]*shardSeq
}

// shardSeq is one shard's millisecond and count within it.
type shardSeq struct{ ms, n int64 }

// NewIDGen returns a generator reading the clock with now (time.Now if nil).
func NewIDGen(now func() time.Time) *IDGen {
	if now == nil {
		now = time.Now
	}
	return &IDGen{now: now}
}

// Next returns a new id, strictly greater than every id this generator
// returned before.
func (g *IDGen) Next() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := g.now().Sub(IDEpoch).Milliseconds()
	if ms < 1 {
		ms = 1
	}
	switch {
	case ms > g.ms:
		g.ms = ms
		g.seq = rand.Int64N(seqMask / 2)
	default: // same millisecond, or the clock went back: keep counting
		g.seq++
		if g.seq > seqMask {
			g.ms++
			g.seq = rand.Int64N(seqMask / 2)
		}
	}
	return g.ms<<seqBits | g.seq
}

// NextOn returns a new id whose low bits are owner's shard among shards (a
// power of two; 1 means unsharded, and is Next): the id of a post carries
// its author's shard, so the post is found from its id (package shards).
// Its ids are unique and time-ordered per shard; each millisecond holds
// 4096/shards of them per shard.
func (g *IDGen) NextOn(owner int64, shards int) int64 {
	if shards <= 1 {
		return g.Next()
	}
	shard := owner & int64(shards-1)
	per := int64(seqMask+1) / int64(shards) // sequence numbers per shard and ms
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shards == nil {
		g.shards = map[int64]*shardSeq{}
	}
	st := g.shards[shard]
	if st == nil {
		st = &shardSeq{}
		g.shards[shard] = st
	}
	ms := max(g.now().Sub(IDEpoch).Milliseconds(), 1)
	switch {
	case ms > st.ms:
		st.ms = ms
		st.n = rand.Int64N(max(per/2, 1))
	default:
		st.n++
		if st.n >= per {
			st.ms++
			st.n = rand.Int64N(max(per/2, 1))
		}
	}
	return st.ms<<seqBits | st.n*int64(shards) | shard
}

// OnShard returns seq (0..MaxSeq) with its low bits replaced by owner's
// shard among shards: an imported post's sequence number (ImportSeq), so
// that its id carries its author's shard as NextOn's do.
func OnShard(seq, owner int64, shards int) int64 {
	if shards <= 1 {
		return seq
	}
	m := int64(shards - 1)
	return seq&^m | owner&m
}

// IDTime returns the creation time encoded in an id, to the millisecond.
func IDTime(id int64) time.Time {
	return IDEpoch.Add(time.Duration(id>>seqBits) * time.Millisecond).UTC()
}

// MinIDAt returns the smallest id a post created at t can have: every id
// created at or after t is >= MinIDAt(t). Before HistoryStart it is MinID.
func MinIDAt(t time.Time) int64 {
	if t.Before(HistoryStart) {
		return MinID
	}
	ms := t.UnixMilli() - IDEpoch.UnixMilli()
	if t.After(IDTime(MaxID)) {
		return MaxID
	}
	return ms << seqBits
}
