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
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// Timeline is what the ranked feed needs of the timeline: the latest feed
// it ranks, the posts of a snapshot's later pages, and what a reader does
// not see.
type Timeline interface {
	Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error)
	// ListFeed is a list's feed, as Feed is the home feed;
	// ListMemberIDs its members now (ENOTFOUND for no such list).
	ListFeed(ctx context.Context, reader, list, before int64, n int) (feed.Page, error)
	ListMemberIDs(ctx context.Context, reader, list int64) ([]int64, error)
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
	// Regather is how long a reader's gathered candidates serve their
	// first pages (with the posts that came after) before a first page
	// gathers them anew (5m; pool.go).
	Regather time.Duration
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
	DefaultRegather      = 5 * time.Minute
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
	if c.Regather <= 0 {
		c.Regather = DefaultRegather
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

// feedRef names a feed that can be ranked: reader's home feed (list 0)
// or one of reader's lists.
type feedRef struct {
	reader, list int64
}

// key is the part of the feed's cache keys after their prefix. The
// reader's id in braces: any key of one reader lands on one Redis Cluster
// slot, as the cache's own keys do.
func (f feedRef) key() string {
	k := "{" + strconv.FormatInt(f.reader, 10) + "}"
	if f.list != 0 {
		k += ":l" + strconv.FormatInt(f.list, 10)
	}
	return k
}

// read is a page of the latest feed f ranks.
func (f feedRef) read(ctx context.Context, tl Timeline, before int64, n int) (feed.Page, error) {
	if f.list != 0 {
		return tl.ListFeed(ctx, f.reader, f.list, before, n)
	}
	return tl.Feed(ctx, f.reader, before, n)
}

func snapshotKey(f feedRef, snap int64) string {
	return "rank:" + f.key() + ":" + strconv.FormatInt(snap, 10)
}

// RankedFeed returns up to n posts of reader's ranked feed from position
// pos (0: a new snapshot's first page). Its Next is the position of the
// next page. ECURSOREXPIRED when pos's snapshot is gone, EINVALID for a
// position that is no snapshot's.
func (s *Service) RankedFeed(ctx context.Context, reader, pos int64, n int) (feed.Page, error) {
	return s.ranked(ctx, feedRef{reader: reader}, pos, n)
}

// RankedListFeed is RankedFeed of reader's list: its members' posts,
// ranked. ENOTFOUND for no such list.
func (s *Service) RankedListFeed(ctx context.Context, reader, list, pos int64, n int) (feed.Page, error) {
	return s.ranked(ctx, feedRef{reader: reader, list: list}, pos, n)
}

func (s *Service) ranked(ctx context.Context, f feedRef, pos int64, n int) (feed.Page, error) {
	if pos == 0 {
		return s.firstPage(ctx, f, n)
	}
	return s.laterPage(ctx, f, pos, n)
}

// firstPage ranks the reader's candidates (pool.go) into a new snapshot,
// keeps it, and serves its first page as a later page is served.
func (s *Service) firstPage(ctx context.Context, f feedRef, n int) (feed.Page, error) {
	pl, degraded, err := s.candidates(ctx, f)
	if err != nil {
		return feed.Page{}, err
	}
	ids, rankDegraded, err := s.rank(ctx, pl)
	if err != nil {
		return feed.Page{}, err
	}
	snap := newSnapshotID()
	if len(ids) > n {
		// A ranking that fits on its first page needs no snapshot: no
		// cursor will name it.
		raw := make([]byte, 0, 8*len(ids))
		for _, id := range ids {
			raw = binary.BigEndian.AppendUint64(raw, uint64(id))
		}
		if err := s.snaps.Set(ctx, snapshotKey(f, snap), string(raw), s.cfg.SnapshotTTL); err != nil {
			return feed.Page{}, fmt.Errorf("ranked: keep the snapshot of %d: %w", f.reader, err)
		}
	}
	pg, err := s.page(ctx, f, snap, ids, 0, n)
	pg.Degraded = pg.Degraded || degraded || rankDegraded
	return pg, err
}

// rank scores the pool's candidates and returns their ids best first;
// equal scores keep the newer post first, so a ranking is one order.
// degraded says the likes came from the cache alone.
func (s *Service) rank(ctx context.Context, pl pool) (ids []int64, degraded bool, err error) {
	cands := pl.cands
	if len(cands) == 0 {
		return nil, false, nil
	}
	// The counts only: whether the reader likes a candidate is no signal,
	// and asking costs a lookup per candidate.
	stubs := make([]feed.Post, len(cands))
	for i, c := range cands {
		stubs[i] = feed.Post{ID: c.id}
	}
	states, degraded, err := s.likes.LikeStates(ctx, 0, stubs)
	if err != nil {
		return nil, false, fmt.Errorf("ranked: likes of %d candidates: %w", len(cands), err)
	}
	now := s.now()
	type scored struct {
		id    int64
		score float64
	}
	all := make([]scored, len(cands))
	for i, c := range cands {
		all[i] = scored{c.id, s.cfg.Score(Signals{
			Weight:   c.weight,
			Likes:    states[c.id].Count,
			Affinity: pl.affinity[c.author],
			Age:      now.Sub(feed.IDTime(c.id)),
		})}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		return cmp.Compare(b.id, a.id)
	})
	ids = make([]int64, len(all))
	for i, sc := range all {
		ids[i] = sc.id
	}
	return ids, degraded, nil
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

// laterPage serves a page of a kept snapshot from its position.
func (s *Service) laterPage(ctx context.Context, f feedRef, pos int64, n int) (feed.Page, error) {
	snap, index := splitPosition(pos)
	if snap <= 0 {
		return feed.Page{}, errBadCursor
	}
	raw, ok, err := s.snaps.GetEx(ctx, snapshotKey(f, snap), s.cfg.SnapshotTTL)
	if err != nil {
		return feed.Page{}, fmt.Errorf("ranked: snapshot of %d: %w", f.reader, err)
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
		return feed.Page{}, errBadCursor
	}
	return s.page(ctx, f, snap, ids, index, n)
}

var errBadCursor = feed.Errorf(feed.EINVALID, "cursor is not valid: pass back next_cursor exactly as a previous page returned it")

// page serves up to n posts of snapshot snap (its ranked ids) from
// index: the live posts of authors the reader still sees (and, in a list,
// still members), reading on past the others so that the page is full.
// Its Next names the snapshot and the index after the last post it
// covered.
func (s *Service) page(ctx context.Context, f feedRef, snap int64, ids []int64, index, n int) (feed.Page, error) {
	reader := f.reader
	hidden, err := s.timeline.Hidden(ctx, reader)
	if err != nil {
		return feed.Page{}, fmt.Errorf("ranked: hidden of %d: %w", reader, err)
	}
	shown := func(author int64) bool { return !hidden.InFeed(author) } // InFeed: kept out of it
	if f.list != 0 {
		members, err := s.timeline.ListMemberIDs(ctx, reader, f.list)
		if err != nil {
			return feed.Page{}, fmt.Errorf("ranked: members of list %d: %w", f.list, err)
		}
		in := make(map[int64]bool, len(members))
		for _, m := range members {
			in[m] = true
		}
		shown = func(author int64) bool { return in[author] && !hidden.InList(author) }
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
			if p, ok := byID[id]; ok && shown(p.AuthorID) {
				pg.Posts = append(pg.Posts, p)
			}
		}
	}
	if next < len(ids) {
		pg.Next = position(snap, next)
	}
	return pg, nil
}
