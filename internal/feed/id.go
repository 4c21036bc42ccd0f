package feed

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Ids are 53-bit integers: 41 bits of milliseconds since IDEpoch and 12
// bits of sequence. 53 bits is what a float64 holds exactly, so an id is
// its own exact Redis ZSET score and survives JavaScript's Number; unique
// ids also make every timestamp tie strictly ordered, which keeps cursors
// exact. 41 bits of milliseconds last until 2094.
const (
	seqBits = 12
	seqMask = 1<<seqBits - 1
	// MaxID is the largest id IDGen produces (2^53 - 1).
	MaxID = 1<<53 - 1
)

// IDEpoch is the zero of the id clock.
var IDEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// IDGen hands out unique, time-ordered ids within one process. Processes
// sharing a database start each millisecond's sequence at a random point,
// so collisions are rare; the database's primary key catches the rest and
// the caller retries with a fresh id.
type IDGen struct {
	mu  sync.Mutex
	ms  int64
	seq int64
	now func() time.Time
}

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

// IDTime returns the creation time encoded in an id, to the millisecond.
func IDTime(id int64) time.Time {
	return IDEpoch.Add(time.Duration(id>>seqBits) * time.Millisecond).UTC()
}

// MinIDAt returns the smallest id that IDGen could produce at t: every id
// created at or after t is >= MinIDAt(t).
func MinIDAt(t time.Time) int64 {
	ms := t.Sub(IDEpoch).Milliseconds()
	if ms < 0 {
		return 0
	}
	return ms << seqBits
}
