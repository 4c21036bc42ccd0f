package ranked

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// A reader's candidate pool: what a first page gathered of the latest feed
// (each candidate's id, author and weight: all a score needs but the
// likes), kept in the cache beside the snapshots. A first page within
// Regather of the pool's gathering reads only the latest feed's posts
// above the pool's newest and ranks them with the pool, instead of
// reading and hydrating up to Candidates posts again: a ranked first page
// then costs about what a latest one does, plus the likes of the
// candidates. A follow or an unfollow by the reader drops the pool
// (Forget); a mute, a block or a delete since is applied when a page is
// served; a weight changed since counts from the next gathering.

// candidate is a post as the score sees it.
type candidate struct {
	id, author int64
	weight     float64
}

// pool is what a gathering keeps: when it was made, the candidates newest
// first, and the reader's affinity (their recent likes by author) then.
type pool struct {
	gathered time.Time
	// members is a digest of a list's members when gathered (0 for the
	// home feed): a list whose members changed since gathers anew.
	members  uint64
	cands    []candidate
	affinity map[int64]int
}

// The pool's record: the Unix milliseconds of its gathering, the members'
// digest and the number of candidates, 8, 8 and 4 bytes; 24 bytes a candidate (id, author,
// the float64 bits of the weight); then 12 bytes an author of the
// affinity (id, count).
const (
	candidateBytes = 24
	affinityBytes  = 12
)

func poolKey(f feedRef) string { return "rankpool:" + f.key() }

func (p pool) encode() string {
	b := make([]byte, 0, 20+candidateBytes*len(p.cands)+affinityBytes*len(p.affinity))
	b = binary.BigEndian.AppendUint64(b, uint64(p.gathered.UnixMilli()))
	b = binary.BigEndian.AppendUint64(b, p.members)
	b = binary.BigEndian.AppendUint32(b, uint32(len(p.cands)))
	for _, c := range p.cands {
		b = binary.BigEndian.AppendUint64(b, uint64(c.id))
		b = binary.BigEndian.AppendUint64(b, uint64(c.author))
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.weight))
	}
	for author, n := range p.affinity {
		b = binary.BigEndian.AppendUint64(b, uint64(author))
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	return string(b)
}

// decodePool reads a record; ok is false for anything else, which the
// caller takes as no pool.
func decodePool(s string) (p pool, ok bool) {
	b := []byte(s)
	if len(b) < 20 {
		return pool{}, false
	}
	p.gathered = time.UnixMilli(int64(binary.BigEndian.Uint64(b)))
	p.members = binary.BigEndian.Uint64(b[8:])
	n := int(binary.BigEndian.Uint32(b[16:]))
	b = b[20:]
	if len(b) < n*candidateBytes || (len(b)-n*candidateBytes)%affinityBytes != 0 {
		return pool{}, false
	}
	p.cands = make([]candidate, n)
	for i := range p.cands {
		r := b[i*candidateBytes:]
		p.cands[i] = candidate{
			id:     int64(binary.BigEndian.Uint64(r)),
			author: int64(binary.BigEndian.Uint64(r[8:])),
			weight: math.Float64frombits(binary.BigEndian.Uint64(r[16:])),
		}
	}
	b = b[n*candidateBytes:]
	p.affinity = make(map[int64]int, len(b)/affinityBytes)
	for ; len(b) > 0; b = b[affinityBytes:] {
		p.affinity[int64(binary.BigEndian.Uint64(b))] = int(binary.BigEndian.Uint32(b[8:]))
	}
	return p, true
}

// Forget drops reader's pool: their follows changed, so the next first
// page gathers anew (the timeline's graph hook).
func (s *Service) Forget(ctx context.Context, reader int64) {
	// An expiry of a millisecond: Snapshots has no delete, and a pool
	// that outlives it by a moment is one first page gathered too little.
	_ = s.snaps.Set(ctx, poolKey(feedRef{reader: reader}), "", time.Millisecond)
}

// candidates returns reader's pool: the kept one with the latest feed's
// posts above its newest, or, without one or past Regather, the latest
// feed and the reader's affinity gathered anew; its candidates those still
// within the window, at most Candidates. The pool is kept for the next
// first page when it changed.
func (s *Service) candidates(ctx context.Context, f feedRef) (pool, bool, error) {
	reader := f.reader
	now := s.now()
	raw, found, err := s.snaps.GetEx(ctx, poolKey(f), s.cfg.SnapshotTTL)
	if err != nil {
		return pool{}, false, fmt.Errorf("ranked: candidates of %d: %w", reader, err)
	}
	var digest uint64
	if f.list != 0 {
		members, err := s.timeline.ListMemberIDs(ctx, reader, f.list)
		if err != nil {
			return pool{}, false, fmt.Errorf("ranked: members of list %d: %w", f.list, err)
		}
		digest = membersDigest(members)
	}
	p, ok := decodePool(raw)
	ok = ok && found && now.Sub(p.gathered) < s.cfg.Regather && p.members == digest
	var above int64
	switch {
	case !ok:
		p = pool{gathered: now, members: digest}
	case len(p.cands) > 0:
		above = p.cands[0].id
	default:
		// An empty pool: nothing in the window when gathered, so only
		// what came after can be.
		above = feed.MinIDAt(p.gathered)
	}
	fresh, degraded, err := s.gather(ctx, f, above)
	if err != nil {
		return pool{}, false, err
	}
	if !ok {
		aff, err := s.affinity(ctx, reader)
		switch {
		case sqlbreaker.IsUnavailable(err):
			// Ranked without affinity, and not kept.
			degraded = true
		case err != nil:
			return pool{}, false, err
		}
		p.affinity = aff
	}
	changed := !ok || len(fresh) > 0
	since := feed.MinIDAt(now.Add(-s.cfg.Window))
	cands := append(fresh, p.cands...)
	for i, c := range cands {
		if c.id < since || i == s.cfg.Candidates {
			cands, changed = cands[:i], true
			break
		}
	}
	p.cands = cands
	// A degraded read may miss posts: it is not kept.
	if changed && !degraded {
		if err := s.snaps.Set(ctx, poolKey(f), p.encode(), s.cfg.SnapshotTTL); err != nil {
			return pool{}, false, fmt.Errorf("ranked: keep the candidates of %d: %w", reader, err)
		}
	}
	return p, degraded, nil
}

// gather reads reader's latest feed newest first, down to the post above
// id above (0: to the window's start), at most Candidates posts; posts of
// weight 0 are left out.
func (s *Service) gather(ctx context.Context, f feedRef, above int64) ([]candidate, bool, error) {
	reader := f.reader
	since := s.now().Add(-s.cfg.Window)
	var (
		out      []candidate
		degraded bool
		before   int64
	)
	for len(out) < s.cfg.Candidates {
		// A first page of a pool read again is usually a few posts: ask
		// for a page's worth, then pages of a few hundred (one inbox read
		// and one hydration each).
		want := 500
		if above != 0 && before == 0 {
			want = 20
		}
		pg, err := f.read(ctx, s.timeline, before, min(s.cfg.Candidates-len(out)+20, want))
		if err != nil {
			return nil, false, fmt.Errorf("ranked: candidates of %d: %w", reader, err)
		}
		degraded = degraded || pg.Degraded
		for _, p := range pg.Posts {
			if p.ID <= above || p.CreatedAt.Before(since) {
				return out, degraded, nil
			}
			if w := p.Weight.Value(); w > 0 && len(out) < s.cfg.Candidates {
				out = append(out, candidate{id: p.ID, author: p.AuthorID, weight: w})
			}
		}
		if !pg.More() {
			break
		}
		before = pg.Next
	}
	return out, degraded, nil
}

// membersDigest is a digest of a list's members (FNV-1a of the sorted
// ids, as ListMembers returns them): a member added or removed changes it.
func membersDigest(ids []int64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, id := range ids {
		binary.BigEndian.PutUint64(b[:], uint64(id))
		h.Write(b[:])
	}
	return h.Sum64() | 1 // never 0, the home feed's
}
