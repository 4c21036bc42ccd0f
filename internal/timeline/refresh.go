package timeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// refresh is the "smart refresh" of a first page: one indexed SQL
// query for followee posts newer than the inbox's newest entry (minus a
// short lookback for fan-outs that finished out of order), added to the
// inbox. It runs at most once per RefreshInterval per reader, so a hot
// feed read a thousand times a second costs SQL one query per interval.
//
// The window never reaches back further than RefreshHorizon. The query
// either walks the posts in the window newest first (cost: every author's
// posts since the window opened) or the reader's followees' posts (cost:
// all of them, ever); the optimizer takes the cheaper. For a reader whose
// followees have been quiet while everyone else posted, both are large:
// a bench graph's reader of 5,000 accounts, with 14,000 newer posts by
// others, cost 85 ms a refresh alone and made the hybrid p99 441 ms under
// load. Bounded by the horizon, the first costs at most the posts of the
// last RefreshHorizon, and never more than RefreshMaxPosts: with a
// thousand posts a second even the one-minute lookback holds 60,000 posts;
// on the bench graph a refresh walking a million posts took 1.0 s, one
// walking 2,000 took 2.5–4.3 ms (scripts/refresh-walk.sh). A post older
// than the window which a fan-out has not delivered yet (a long broker
// outage) is not lost: the fan-out delivers it when it runs, and a rebuild
// reads everything.
func (s *Service) refresh(ctx context.Context, reader int64, page []int64) ([]int64, error) {
	if ok, err := s.gateRefreshOnce(ctx, reader); err != nil || !ok {
		return nil, err
	}
	s.metrics.refreshes.Inc()
	after := feed.MinIDAt(s.now().Add(-s.cfg.RefreshHorizon))
	if len(page) > 0 {
		after = max(after, feed.MinIDAt(feed.IDTime(page[0]).Add(-s.cfg.RefreshLookback)))
	}
	floor, err := s.refreshFloor(ctx)
	if err != nil {
		return nil, err
	}
	after = max(after, floor)
	ids, err := s.inboxFeedIDs(ctx, reader, after, s.cfg.InboxMax)
	if err != nil {
		return nil, fmt.Errorf("timeline: refresh feed of %d: %w", reader, err)
	}
	ids = missing(ids, page)
	if len(ids) == 0 {
		return nil, nil
	}
	s.metrics.refreshAdds.Add(float64(len(ids)))
	if err := s.cache.AddToInbox(ctx, reader, ids, false); err != nil {
		return nil, err
	}
	return ids, nil
}

// postsFloor is a NewestPostsFloor answer and until when it is used.
type postsFloor struct {
	id    int64
	until time.Time
}

// floorEvery is how long a process uses one NewestPostsFloor answer. Posts
// published meanwhile widen the window by that much time's worth: at 1,000
// posts a second, by up to 1,000.
const floorEvery = time.Second

// refreshFloor returns the lowest id a refresh's window may start at for
// RefreshMaxPosts: the id of that many-th newest post of all, asked of SQL
// at most once per floorEvery per process (a walk of that many primary
// key entries, a few ms).
func (s *Service) refreshFloor(ctx context.Context) (int64, error) {
	if f := s.floor.Load(); f != nil && s.now().Before(f.until) {
		return f.id, nil
	}
	v, err, _ := s.floorLoads.Do("", func() (any, error) {
		// Detached: the readers waiting on this load need its answer
		// even if the one that started it goes away.
		lctx, cancel := detached(ctx)
		defer cancel()
		id, err := s.store.NewestPostsFloor(lctx, s.cfg.RefreshMaxPosts)
		if err != nil {
			return int64(0), fmt.Errorf("timeline: the refresh window's floor: %w", err)
		}
		s.floor.Store(&postsFloor{id: id, until: s.now().Add(floorEvery)})
		return id, nil
	})
	return v.(int64), err
}

func refreshKey(reader int64) string { return "refresh:{" + strconv.FormatInt(reader, 10) + "}" }

// refreshGates bounds the readers whose refresh gate a process remembers
// (gateRefreshOnce). A reader evicted from it is only asked of the cache
// again.
const refreshGates = 100_000

// gateRefreshOnce reports whether reader's smart refresh is due, and if so
// takes the gate for RefreshInterval, so that one process in the whole
// deployment refreshes. The cache's SET NX decides; in front of it, the
// process remembers until when it saw the gate taken (by itself, by a
// rebuild, or by another process), so a reader paging a hundred times in
// an interval costs the cache one call, not a hundred. The gate's value is
// the time it opens (Unix ms): a process that finds it taken by another
// reads it once, and waits no longer than the process that took it, so a
// refresh comes at most a round trip later than it would without the
// local gate.
func (s *Service) gateRefreshOnce(ctx context.Context, reader int64) (bool, error) {
	now := s.now()
	if until, ok := s.gates.Get(reader); ok && now.Before(until) {
		return false, nil
	}
	ok, err := s.cache.SetNX(ctx, refreshKey(reader), gateValue(now, s.cfg.RefreshInterval), s.cfg.RefreshInterval)
	if err != nil {
		return false, err
	}
	if ok {
		// Measured from after the call, the local gate ends no earlier
		// than the cache's key, set during the call (and at most a round
		// trip later): the SET NX it lets through next finds the key gone.
		s.gates.Put(reader, s.now().Add(s.cfg.RefreshInterval))
		return true, nil
	}
	v, found, err := s.cache.Get(ctx, refreshKey(reader))
	if err != nil || !found {
		return false, nil // not known: ask the cache again on the next page
	}
	opens, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false, nil // a gate of an older version ("1"): the same
	}
	now = s.now()
	if wait := time.UnixMilli(opens).Sub(now); wait > 0 {
		s.gates.Put(reader, now.Add(min(wait, s.cfg.RefreshInterval)))
	}
	return false, nil
}

// gateRefresh takes reader's refresh gate whether or not it was free: the
// inbox was just rebuilt from SQL and needs no refresh for an interval.
func (s *Service) gateRefresh(ctx context.Context, reader int64) error {
	err := s.cache.Set(ctx, refreshKey(reader), gateValue(s.now(), s.cfg.RefreshInterval), s.cfg.RefreshInterval)
	s.gates.Put(reader, s.now().Add(s.cfg.RefreshInterval))
	return err
}

// gateValue is the value of a refresh gate taken at now: when it opens.
func gateValue(now time.Time, interval time.Duration) string {
	return strconv.FormatInt(now.Add(interval).UnixMilli(), 10)
}
