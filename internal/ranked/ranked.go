// Package ranked is the ranked home feed: the posts of a reader's latest
// home feed from a recent window, ordered by a score instead of by time.
//
// A first page gathers the candidates (the latest feed's posts of the last
// Window, at most Candidates, through the timeline, so that every delivery
// model, mute, block and deletion applies as it does to the latest feed),
// scores them (score.go), and keeps the ranked ids as a snapshot in the
// cache for SnapshotTTL after its last read. The cursor names the snapshot
// and a position in it, so the pages of one snapshot hold every candidate
// once, whatever likes arrive meanwhile; a post deleted since, or of an
// author muted or blocked since, is skipped, and a page reads on to stay
// full. A snapshot the cache no longer holds is ECURSOREXPIRED: the client
// reloads the first page.
package ranked

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlbreaker"
)

// Timeline is what the ranked feed needs of the timeline: the latest feed
// it ranks, the posts of a snapshot's later pages, and what a reader does
// not see.
type Timeline interface {
	Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error)
	// LivePostsOrCached returns the live posts among ids, in the order of
	// ids; while SQL is unavailable, those the caches hold (degraded).
	LivePostsOrCached(ctx context.Context, ids []int64) ([]feed.Post, bool, error)
	Hidden(ctx context.Context, viewer int64) (feed.Hidden, error)
}

// Likes is what the score needs of the likes: each candidate's count, and
// the reader's recent likes (their authors are the reader's affinity),
// from the cache (RecentLiked) or else from SQL (UserLikes).
type Likes interface {
	LikeStates(ctx context.Context, reader int64, posts []feed.Post) (map[int64]feed.LikeState, bool, error)
	RecentLiked(ctx context.Context, user int64, n int) ([]int64, bool)
	UserLikes(ctx context.Context, viewer, user, before int64, n int) (feed.Page, error)
}

// Snapshots keeps the snapshots: the cache's key-value surface (one key a
// snapshot, so it works on Redis Cluster).
type Snapshots interface {
	Set(ctx context.Context, key, value string, ttl time.Duration) error
	GetEx(ctx context.Context, key string, ttl time.Duration) (string, bool, error)
}

// Config is the ranked feed's settings (FEEDD_RANK_*); the zero value of a
// field takes its default.
type Config struct {
	// Window is how far back the candidates go (72h).
	Window time.Duration
	// Candidates bounds a snapshot (1,000; at most MaxCandidates).
	Candidates int
	// HalfLife halves a post's score every HalfLife of its age (6h).
	HalfLife time.Duration
	// SnapshotTTL is how long a snapshot lives after its last page (15m).
	SnapshotTTL time.Duration
	// Engagement and Affinity weigh the logarithm of a post's likes and of
	// the reader's likes of its author (1 and 1; 0 turns one off).
	Engagement float64
	Affinity   float64
	// AffinityLikes is how many of the reader's latest likes count
	// towards affinity (100).
	AffinityLikes int
}

// MaxCandidates bounds Config.Candidates: a position in a snapshot is 16
// bits of the cursor.
const MaxCandidates = 10_000

// Defaults of Config.
const (
	DefaultWindow        = 72 * time.Hour
	DefaultCandidates    = 1000
	DefaultHalfLife      = 6 * time.Hour
	DefaultSnapshotTTL   = 15 * time.Minute
	DefaultAffinityLikes = 100
)

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Candidates <= 0 {
		c.Candidates = DefaultCandidates
	}
	c.Candidates = min(c.Candidates, MaxCandidates)
	if c.HalfLife <= 0 {
		c.HalfLife = DefaultHalfLife
	}
	if c.SnapshotTTL <= 0 {
		c.SnapshotTTL = DefaultSnapshotTTL
	}
	if c.AffinityLikes <= 0 {
		c.AffinityLikes = DefaultAffinityLikes
	}
	return c
}

// Service serves ranked feeds.
type Service struct {
	timeline Timeline
	likes    Likes
	snaps    Snapshots
	cfg      Config
	now      func() time.Time
}

// New returns a Service; cfg's zero fields take their defaults, and the
// zero Engagement and Affinity are taken as set (0 turns them off): use
// DefaultConfig for the documented weights.
func New(tl Timeline, lk Likes, snaps Snapshots, cfg Config) *Service {
	return &Service{timeline: tl, likes: lk, snaps: snaps, cfg: cfg.WithDefaults(), now: time.Now}
}

// DefaultConfig is the documented configuration.
func DefaultConfig() Config {
	return Config{Engagement: 1, Affinity: 1}.WithDefaults()
}

// Config returns the service's settings, defaults filled.
func (s *Service) Config() Config { return s.cfg }

// The cursor's position: a snapshot's id in the high bits, the index of
// the next candidate in the low 16.
const posBits = 16

func position(snap int64, index int) int64 { return snap<<posBits | int64(index) }

func splitPosition(pos int64) (snap int64, index int) {
	return pos >> posBits, int(pos & (1<<posBits - 1))
}

// newSnapshotID draws a snapshot id: random, so that a cursor cannot be
// guessed into another of the reader's snapshots, and positive in 47 bits.
func newSnapshotID() int64 { return 1 + rand.Int64N(1<<47-1) }

func snapshotKey(reader, snap int64) string {
	// The reader's id in braces: any key of one reader lands on one Redis
	// Cluster slot, as the cache's own keys do.
	return "rank:{" + strconv.FormatInt(reader, 10) + "}:" + strconv.FormatInt(snap, 10)
}

// RankedFeed returns up to n posts of reader's ranked feed from position
// pos (0: a new snapshot's first page). Its Next is the position of the
// next page. ECURSOREXPIRED when pos's snapshot is gone, EINVALID for a
// position that is no snapshot's.
func (s *Service) RankedFeed(ctx context.Context, reader, pos int64, n int) (feed.Page, error) {
	if pos == 0 {
		return s.firstPage(ctx, reader, n)
	}
	return s.laterPage(ctx, reader, pos, n)
}

// firstPage ranks a new snapshot and serves its first n posts from the
// candidates it just read (all live and visible).
func (s *Service) firstPage(ctx context.Context, reader int64, n int) (feed.Page, error) {
	cands, degraded, err := s.candidates(ctx, reader)
	if err != nil {
		return feed.Page{}, err
	}
	ranked, rankDegraded, err := s.rank(ctx, reader, cands)
	if err != nil {
		return feed.Page{}, err
	}
	pg := feed.Page{Posts: ranked[:min(n, len(ranked))], Degraded: degraded || rankDegraded}
	if len(ranked) > n {
		snap := newSnapshotID()
		ids := make([]byte, 0, 8*len(ranked))
		for _, p := range ranked {
			ids = binary.BigEndian.AppendUint64(ids, uint64(p.ID))
		}
		if err := s.snaps.Set(ctx, snapshotKey(reader, snap), string(ids), s.cfg.SnapshotTTL); err != nil {
			return feed.Page{}, fmt.Errorf("ranked: keep the snapshot of %d: %w", reader, err)
		}
		pg.Next = position(snap, n)
	}
	return pg, nil
}

// candidates reads reader's latest feed newest first until it leaves the
// window, ends, or gave Candidates posts; posts of weight 0 are left out.
func (s *Service) candidates(ctx context.Context, reader int64) ([]feed.Post, bool, error) {
	since := s.now().Add(-s.cfg.Window)
	var (
		out      []feed.Post
		degraded bool
		before   int64
	)
	for len(out) < s.cfg.Candidates {
		// Pages of a few hundred: one inbox read and one hydration each.
		pg, err := s.timeline.Feed(ctx, reader, before, min(s.cfg.Candidates-len(out)+20, 500))
		if err != nil {
			return nil, false, fmt.Errorf("ranked: candidates of %d: %w", reader, err)
		}
		degraded = degraded || pg.Degraded
		for _, p := range pg.Posts {
			if p.CreatedAt.Before(since) {
				return out, degraded, nil
			}
			if p.Weight.Value() > 0 && len(out) < s.cfg.Candidates {
				out = append(out, p)
			}
		}
		if !pg.More() {
			break
		}
		before = pg.Next
	}
	return out, degraded, nil
}

// rank scores the candidates and returns them best first; equal scores
// keep the newer post first, so a ranking is one order. degraded says
// some signal came from the cache alone, or not at all (SQL unavailable:
// the reader's affinity is then left out rather than the page).
func (s *Service) rank(ctx context.Context, reader int64, cands []feed.Post) (ranked []feed.Post, degraded bool, err error) {
	if len(cands) == 0 {
		return cands, false, nil
	}
	states, degraded, err := s.likes.LikeStates(ctx, reader, cands)
	if err != nil {
		return nil, false, fmt.Errorf("ranked: likes of %d candidates: %w", len(cands), err)
	}
	affinity, err := s.affinity(ctx, reader)
	if sqlbreaker.IsUnavailable(err) {
		affinity, degraded, err = nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	now := s.now()
	scores := make(map[int64]float64, len(cands))
	for _, p := range cands {
		scores[p.ID] = s.cfg.Score(Signals{
			Weight:   p.Weight.Value(),
			Likes:    states[p.ID].Count,
			Affinity: affinity[p.AuthorID],
			Age:      now.Sub(p.CreatedAt),
		})
	}
	ranked = slices.Clone(cands)
	slices.SortStableFunc(ranked, func(a, b feed.Post) int {
		if sa, sb := scores[a.ID], scores[b.ID]; sa != sb {
			if sa > sb {
				return -1
			}
			return 1
		}
		if a.ID > b.ID {
			return -1
		}
		return 1
	})
	return ranked, degraded, nil
}

// affinity counts reader's latest likes by the liked post's author: the
// cache's recent set and the posts' copies in the caches when it holds
// them (LikeStates, just before, fills an absent set), else SQL.
func (s *Service) affinity(ctx context.Context, reader int64) (map[int64]int, error) {
	if s.cfg.Affinity == 0 {
		return nil, nil
	}
	var liked []feed.Post
	if ids, ok := s.likes.RecentLiked(ctx, reader, s.cfg.AffinityLikes); ok {
		var err error
		if liked, _, err = s.timeline.LivePostsOrCached(ctx, ids); err != nil {
			return nil, fmt.Errorf("ranked: affinity of %d: %w", reader, err)
		}
	} else {
		pg, err := s.likes.UserLikes(ctx, reader, reader, 0, s.cfg.AffinityLikes)
		if err != nil {
			return nil, fmt.Errorf("ranked: affinity of %d: %w", reader, err)
		}
		liked = pg.Posts
	}
	by := make(map[int64]int, len(liked))
	for _, p := range liked {
		by[p.AuthorID]++
	}
	return by, nil
}

// laterPage serves a page of a kept snapshot from its position: the live
// posts of authors the reader still sees, reading on past the others so
// that the page is full.
func (s *Service) laterPage(ctx context.Context, reader, pos int64, n int) (feed.Page, error) {
	snap, index := splitPosition(pos)
	if snap <= 0 {
		return feed.Page{}, feed.Errorf(feed.EINVALID, "cursor is not valid: pass back next_cursor exactly as a previous page returned it")
	}
	raw, ok, err := s.snaps.GetEx(ctx, snapshotKey(reader, snap), s.cfg.SnapshotTTL)
	if err != nil {
		return feed.Page{}, fmt.Errorf("ranked: snapshot of %d: %w", reader, err)
	}
	if !ok {
		return feed.Page{}, feed.Errorf(feed.ECURSOREXPIRED,
			"this ranked feed's snapshot expired (a snapshot lives %s after its last page): load the first page again", s.cfg.SnapshotTTL)
	}
	ids := make([]int64, len(raw)/8)
	for i := range ids {
		ids[i] = int64(binary.BigEndian.Uint64([]byte(raw[8*i : 8*i+8])))
	}
	if index > len(ids) {
		return feed.Page{}, feed.Errorf(feed.EINVALID, "cursor is not valid: pass back next_cursor exactly as a previous page returned it")
	}
	hidden, err := s.timeline.Hidden(ctx, reader)
	if err != nil {
		return feed.Page{}, fmt.Errorf("ranked: hidden of %d: %w", reader, err)
	}
	var pg feed.Page
	next := index
	for next < len(ids) && len(pg.Posts) < n {
		// Read a little past the page, for the posts that drop out.
		chunk := ids[next:min(len(ids), next+n-len(pg.Posts)+n/4+2)]
		live, degraded, err := s.timeline.LivePostsOrCached(ctx, chunk)
		if err != nil {
			return feed.Page{}, fmt.Errorf("ranked: posts of a snapshot of %d: %w", reader, err)
		}
		pg.Degraded = pg.Degraded || degraded
		byID := make(map[int64]feed.Post, len(live))
		for _, p := range live {
			byID[p.ID] = p
		}
		for _, id := range chunk {
			if len(pg.Posts) == n {
				break
			}
			next++
			if p, ok := byID[id]; ok && !hidden.InFeed(p.AuthorID) { // InFeed: kept out of it
				pg.Posts = append(pg.Posts, p)
			}
		}
	}
	if next < len(ids) {
		pg.Next = position(snap, next)
	}
	return pg, nil
}
