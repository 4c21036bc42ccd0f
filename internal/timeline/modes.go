package timeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// updateDelivery re-decides author's delivery mode after its follower
// count changed, and records a crossing of the hysteresis band. Turning
// back to push queues the fan-out of the author's recent posts, which
// were only in its outbox, so no reader's inbox misses them.
func (s *Service) updateDelivery(ctx context.Context, author int64) error {
	if s.cfg.Policy.Mode != feed.ModeHybrid {
		return nil
	}
	u, err := s.store.User(ctx, author)
	if err != nil {
		return err
	}
	pull := s.cfg.Policy.Pulls(u)
	if pull == u.PullMode {
		return nil
	}
	changed, err := s.store.SetPullMode(ctx, author, pull, s.cfg.InboxMax)
	if err != nil {
		return err
	}
	if changed {
		s.bumpEpoch(ctx)
		s.logger.Info("author delivery mode changed", "author", author, "followers", u.FollowerCount, "mode", s.cfg.Policy.ModeOf(feed.User{FollowerCount: u.FollowerCount, PullMode: pull}))
		if !pull {
			s.published() // the queued catch-up fan-out
		}
	}
	return nil
}

func pulleesKey(reader int64) string { return "pullees:{" + strconv.FormatInt(reader, 10) + "}" }

// modesKey names the modes epoch: a value that changes whenever any
// author's delivery mode does. Each reader's cached list of pulled
// followees records the epoch it was computed in, so one switch
// invalidates every list at once. Without it a reader would not merge a
// newly pulled author's outbox, and so miss its new posts, until the list
// expired (PulleesTTL).
const modesKey = "pullmodes"

// modesEpochTTL bounds how long a process trusts the epoch it last read:
// a switch reaches every reader within about this long, for one cache
// read per process per interval.
const modesEpochTTL = time.Second

// modesEpoch is a process's copy of the modes epoch.
type modesEpoch struct {
	mu   sync.Mutex
	val  string
	read time.Time
}

// epoch returns the current modes epoch ("" if none was ever set).
func (s *Service) epoch(ctx context.Context) string {
	e := &s.modes
	e.mu.Lock()
	defer e.mu.Unlock()
	if time.Since(e.read) < modesEpochTTL {
		return e.val
	}
	v, _, err := s.cache.Get(ctx, modesKey)
	if err != nil {
		s.cacheFailed("read modes epoch", err)
		return e.val
	}
	e.val, e.read = v, time.Now()
	return v
}

// bumpEpoch starts a new modes epoch after a switch.
func (s *Service) bumpEpoch(ctx context.Context) {
	v := strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := s.cache.Set(ctx, modesKey, v, s.cfg.InboxTTL); err != nil {
		s.cacheFailed("set modes epoch", err)
		return
	}
	s.modes.mu.Lock()
	s.modes.val, s.modes.read = v, time.Now()
	s.modes.mu.Unlock()
}

// pullees returns the pulled authors reader follows, cached: a reader
// following 5,000 accounts must not cost a SQL join per page. The cached
// list is used only within the epoch it was computed in.
func (s *Service) pullees(ctx context.Context, reader int64) ([]int64, error) {
	epoch := s.epoch(ctx)
	if v, ok, err := s.cache.Get(ctx, pulleesKey(reader)); err == nil && ok {
		if ids, ok := parseIDList(v, epoch); ok {
			return ids, nil
		}
	}
	// Concurrent misses of one reader's list collapse into one query.
	v, err, _ := s.pulleeLoads.Do(pulleesKey(reader)+epoch, func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		return s.loadPullees(ctx, reader, epoch)
	})
	if err != nil {
		return nil, err
	}
	return v.([]int64), nil
}

// loadPullees reads reader's pulled followees from SQL and caches them.
func (s *Service) loadPullees(ctx context.Context, reader int64, epoch string) ([]int64, error) {
	low, high := s.cfg.Policy.Band()
	ids, err := s.store.PullFollowees(ctx, reader, high, low)
	if err != nil {
		return nil, err
	}
	if err := s.cache.Set(ctx, pulleesKey(reader), formatIDList(epoch, ids), s.cfg.PulleesTTL); err != nil {
		s.cacheFailed("cache pulled followees", err)
	}
	return ids, nil
}

// forgetPullees refreshes reader's cached list after a follow or unfollow.
func (s *Service) forgetPullees(ctx context.Context, reader int64) {
	if s.cfg.Policy.Mode != feed.ModeHybrid {
		return
	}
	_, _ = s.loadPullees(ctx, reader, s.epoch(ctx))
}

// formatIDList encodes a pullee list as "v<epoch>,<id>,<id>...": never
// empty, so an empty list is a cached value too.
func formatIDList(epoch string, ids []int64) string {
	var b strings.Builder
	b.WriteString("v")
	b.WriteString(epoch)
	for _, id := range ids {
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}

// parseIDList decodes formatIDList's value; ok is false when it was
// computed in another epoch.
func parseIDList(s, epoch string) ([]int64, bool) {
	head, rest, _ := strings.Cut(s, ",")
	if head != "v"+epoch {
		return nil, false
	}
	out := []int64{}
	for p := range strings.SplitSeq(rest, ",") {
		if id, err := strconv.ParseInt(p, 10, 64); err == nil {
			out = append(out, id)
		}
	}
	return out, true
}

// outboxSource reads one pulled author's posts: its cached outbox, rebuilt
// from SQL when missing, continued in SQL past its trimmed end.
type outboxSource struct {
	s      *Service
	author int64
}

// outboxHeadTTL is how old a process's copy of a pulled author's outbox
// head may be, and so how late a pulled author's new post may reach a
// merged page; outboxHeads bounds how many authors' heads a process keeps.
const (
	outboxHeadTTL = time.Second
	outboxHeads   = 4096
)

// outboxHead is a process's copy of a pulled author's newest outbox ids.
// A celebrity's outbox is read by every page of every one of its
// followers, the hottest keys there are; note 003's answer to a hot key is
// a short-lived local copy. With it a merged page costs no cache call per
// pulled author (bench: 20 per page for readers of 20 celebrities).
type outboxHead struct {
	ids      []int64 // newest first; shared, never modified
	complete bool    // ids are all the author's posts
}

// head returns author's outbox head, at most outboxHeadTTL old, and false
// when the outbox is absent or unreadable (the caller takes the long way).
func (s *Service) head(ctx context.Context, author int64) (outboxHead, bool) {
	if h, ok := s.heads.Get(author); ok {
		s.metrics.cacheLookups.WithLabelValues("outbox_head", "hit").Inc()
		return h, true
	}
	s.metrics.cacheLookups.WithLabelValues("outbox_head", "miss").Inc()
	v, err, _ := s.headLoads.Do(strconv.FormatInt(author, 10), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		pg, err := s.outboxes.InboxPage(ctx, author, 0, s.cfg.OutboxMax)
		if err != nil || !pg.Exists {
			return nil, errNoHead
		}
		h := outboxHead{ids: pg.IDs, complete: pg.Complete}
		s.heads.Put(author, h)
		return h, nil
	})
	if err != nil {
		return outboxHead{}, false
	}
	return v.(outboxHead), true
}

var errNoHead = errors.New("timeline: no outbox head")

func (o outboxSource) next(ctx context.Context, pos int64, want int) ([]int64, bool, error) {
	s := o.s
	if h, ok := s.head(ctx, o.author); ok {
		below := h.ids
		if pos > 0 {
			below = below[sort.Search(len(below), func(i int) bool { return below[i] < pos }):]
		}
		if len(below) >= want || h.complete {
			ids := slices.Clone(below[:min(want, len(below))])
			return ids, len(ids) < want, nil
		}
	}
	pg, err := s.outboxes.InboxPage(ctx, o.author, pos, want)
	if err == nil {
		s.metrics.cacheLookups.WithLabelValues("outbox", hitOrMiss(pg.Exists)).Inc()
	}
	if err == nil && !pg.Exists {
		// A celebrity's outbox is read by every one of its followers: when
		// it expires, the concurrent misses rebuild it with one query.
		v, rerr, _ := s.outboxFills.Do(strconv.FormatInt(o.author, 10), func() (any, error) {
			ctx, cancel := detached(ctx)
			defer cancel()
			ids, err := s.store.AuthorPostIDs(ctx, o.author, 0, 0, s.cfg.OutboxMax)
			if err != nil {
				return nil, fmt.Errorf("timeline: rebuild outbox of %d: %w", o.author, err)
			}
			complete := len(ids) < s.cfg.OutboxMax
			if ferr := s.outboxes.FillInbox(ctx, o.author, ids, complete, s.cfg.InboxTTL); ferr != nil {
				s.cacheFailed("fill outbox", ferr)
			}
			return ids, nil
		})
		if rerr != nil {
			return nil, false, rerr
		}
		ids := v.([]int64)
		pg = pageBelow(ids, pos, want, len(ids) < s.cfg.OutboxMax)
	}
	if err != nil {
		s.cacheFailed("read outbox", err)
		pg = feed.InboxPage{}
	}
	ids := pg.IDs
	if len(ids) < want && !(pg.Exists && pg.Complete) {
		from := pos
		if len(ids) > 0 {
			from = ids[len(ids)-1]
		}
		more, err := s.store.AuthorPostIDs(ctx, o.author, 0, from, want-len(ids))
		if err != nil {
			return nil, false, fmt.Errorf("timeline: posts of %d from SQL: %w", o.author, err)
		}
		ids = append(ids[:len(ids):len(ids)], more...)
	}
	return ids, len(ids) < want, nil
}

func (o outboxSource) forget(ctx context.Context, dead []int64) {
	if err := o.s.outboxes.RemoveFromInbox(ctx, o.author, dead); err != nil {
		o.s.cacheFailed("lazy delete from outbox", err)
	}
}

// authorsSQLSource reads many pulled authors at once from SQL: the
// overflow beyond MaxMergedOutboxes.
type authorsSQLSource struct {
	s       *Service
	authors []int64
}

func (a authorsSQLSource) next(ctx context.Context, pos int64, want int) ([]int64, bool, error) {
	ids, err := a.s.store.AuthorsPostIDs(ctx, a.authors, pos, want)
	if err != nil {
		return nil, false, fmt.Errorf("timeline: posts of %d pulled authors: %w", len(a.authors), err)
	}
	return ids, len(ids) < want, nil
}

func (authorsSQLSource) forget(context.Context, []int64) {}
