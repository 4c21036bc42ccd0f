package timeline

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// merges reports whether reads merge pulled authors' lists into the inbox
// (hybrid mode).
func (s *Service) merges() bool {
	return s.cfg.Policy.Mode == feed.ModeHybrid && s.authorLists != nil
}

// updateDelivery re-decides author's delivery mode after its follower
// count changed, and records a crossing of the hysteresis band. Turning
// back to push queues the fan-out of the author's recent posts, which
// were only in its author list, so no reader's inbox misses them.
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
// newly pulled author's list, and so miss its new posts, until the list
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
	v, err := NewModesEpoch(ctx, s.cache, s.cfg.InboxTTL)
	if err != nil {
		s.cacheFailed("set modes epoch", err)
		return
	}
	s.modes.mu.Lock()
	s.modes.val, s.modes.read = v, time.Now()
	s.modes.mu.Unlock()
}

// NewModesEpoch starts a new modes epoch in kv and returns it, for every
// process to drop its readers' cached lists of pulled followees within
// modesEpochTTL. A Service does it after a switch; a tool that changes
// follows or modes in SQL without one (feedd import) calls it too. ttl
// is the inboxes' lifetime, which the lists never outlive.
func NewModesEpoch(ctx context.Context, kv feed.KV, ttl time.Duration) (string, error) {
	v := strconv.FormatInt(time.Now().UnixNano(), 36)
	return v, kv.Set(ctx, modesKey, v, ttl)
}

// pullees returns the pulled authors of reader's feed (those it follows,
// and itself when pulled: store.PullFollowees), cached: a reader
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
		ids, _, err := s.loadPullees(ctx, reader, epoch)
		return ids, err
	})
	if err != nil {
		return nil, err
	}
	return v.([]int64), nil
}

// loadPullees reads reader's pulled followees from SQL and caches them;
// cached reports whether the cache took them.
func (s *Service) loadPullees(ctx context.Context, reader int64, epoch string) (ids []int64, cached bool, err error) {
	low, high := s.cfg.Policy.Band()
	ids, err = s.store.PullFollowees(ctx, reader, high, low)
	if err != nil {
		return nil, false, err
	}
	if err := s.cache.Set(ctx, pulleesKey(reader), formatIDList(epoch, ids), s.cfg.PulleesTTL); err != nil {
		s.cacheFailed("cache pulled followees", err)
		return ids, false, nil
	}
	return ids, true, nil
}

// forgetPullees refreshes reader's cached list after a follow or unfollow.
func (s *Service) forgetPullees(ctx context.Context, reader int64) {
	if s.cfg.Policy.Mode != feed.ModeHybrid {
		return
	}
	// A list the cache did not take leaves the old one cached, which
	// may still name an author the reader unfollowed.
	if _, cached, err := s.loadPullees(ctx, reader, s.epoch(ctx)); err == nil && !cached {
		s.markStale(ctx, reader)
	}
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
