package timeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
		s.logger.Info("author delivery mode changed", "author", author, "followers", u.FollowerCount, "mode", s.cfg.Policy.ModeOf(feed.User{FollowerCount: u.FollowerCount, PullMode: pull}))
		if !pull {
			s.published() // the queued catch-up fan-out
		}
	}
	return nil
}

func pulleesKey(reader int64) string { return "pullees:{" + strconv.FormatInt(reader, 10) + "}" }

// pullees returns the pulled authors reader follows, cached briefly: a
// reader following 5,000 accounts must not cost a SQL join per page.
func (s *Service) pullees(ctx context.Context, reader int64) ([]int64, error) {
	key := pulleesKey(reader)
	if v, ok, err := s.cache.Get(ctx, key); err == nil && ok {
		return parseIDList(v), nil
	}
	low, high := s.cfg.Policy.Band()
	ids, err := s.store.PullFollowees(ctx, reader, high, low)
	if err != nil {
		return nil, err
	}
	if err := s.cache.Set(ctx, key, formatIDList(ids), s.cfg.PulleesTTL); err != nil {
		s.cacheFailed("cache pulled followees", err)
	}
	return ids, nil
}

// forgetPullees drops reader's cached list after a follow or unfollow.
func (s *Service) forgetPullees(ctx context.Context, reader int64) {
	if s.cfg.Policy.Mode != feed.ModeHybrid {
		return
	}
	low, high := s.cfg.Policy.Band()
	ids, err := s.store.PullFollowees(ctx, reader, high, low)
	if err != nil {
		return
	}
	if err := s.cache.Set(ctx, pulleesKey(reader), formatIDList(ids), s.cfg.PulleesTTL); err != nil {
		s.cacheFailed("cache pulled followees", err)
	}
}

func formatIDList(ids []int64) string {
	var b strings.Builder
	b.WriteString("v") // never empty, so an empty list is a cached value too
	for _, id := range ids {
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}

func parseIDList(s string) []int64 {
	parts := strings.Split(strings.TrimPrefix(s, "v"), ",")
	out := make([]int64, 0, len(parts))
	for _, p := range parts {
		if id, err := strconv.ParseInt(p, 10, 64); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// outboxSource reads one pulled author's posts: its cached outbox, rebuilt
// from SQL when missing, continued in SQL past its trimmed end.
type outboxSource struct {
	s      *Service
	author int64
}

func (o outboxSource) next(ctx context.Context, pos int64, want int) ([]int64, bool, error) {
	s := o.s
	pg, err := s.outboxes.InboxPage(ctx, o.author, pos, want)
	if err == nil && !pg.Exists {
		ids, rerr := s.store.AuthorPostIDs(ctx, o.author, 0, 0, s.cfg.OutboxMax)
		if rerr != nil {
			return nil, false, fmt.Errorf("timeline: rebuild outbox of %d: %w", o.author, rerr)
		}
		complete := len(ids) < s.cfg.OutboxMax
		if ferr := s.outboxes.FillInbox(ctx, o.author, ids, complete, s.cfg.InboxTTL); ferr != nil {
			s.cacheFailed("fill outbox", ferr)
		}
		pg = pageBelow(ids, pos, want, complete)
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
