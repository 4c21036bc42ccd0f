// Package freshness keeps a user's reads at least as fresh as that user's
// own writes when reads may go to a lagging SQL replica: it remembers, in
// Redis (shared by every feedd process), when each user's last write
// committed, and gives the user's next requests a context that makes the
// SQL store read the primary until the replica has caught up past that
// write (feed.WithLastWrite).
package freshness

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/sqlstore"
)

// Marks remembers the commit time of each user's last write.
type Marks struct {
	client redis.UniversalClient // nil: in this process's memory
	prefix string
	ttl    time.Duration
	logger *slog.Logger

	mu    sync.Mutex
	local map[int64]time.Time
}

// New returns the marks of a deployment whose replica is not read past
// maxLag, kept in Redis through client under prefix; a nil client keeps
// them in memory, for a single process. A mark lives maxLag, the clock
// skew margin and a second more: past that, a replica that may be read
// (at most maxLag behind) has the write, so the mark is no longer needed.
func New(client redis.UniversalClient, prefix string, maxLag time.Duration, logger *slog.Logger) *Marks {
	return &Marks{
		client: client,
		prefix: prefix + "wrote:",
		ttl:    maxLag + sqlstore.ClockSkew + time.Second,
		logger: logger.With("component", "freshness"),
		local:  map[int64]time.Time{},
	}
}

// Wrote records that user's write has committed: it is called before the
// write's answer goes out, so that the user's next request, in any
// process, finds the mark. A mark that cannot be written is logged: the
// next read then reads the replica, unless Redis is still failing (see
// Reading).
func (m *Marks) Wrote(ctx context.Context, user int64) {
	now := time.Now()
	if m.client == nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.local[user] = now
		if len(m.local)%1024 == 0 {
			for u, t := range m.local {
				if now.Sub(t) > m.ttl {
					delete(m.local, u)
				}
			}
		}
		return
	}
	err := m.client.Set(ctx, m.key(user), now.UnixMicro(), m.ttl).Err()
	if err != nil {
		m.logger.Warn("a write's mark was not kept: the user's next read may miss it on a lagging replica", "user", user, "err", err)
	}
}

// Reading returns the context for a request of user: its reads see the
// user's last write. When Redis does not answer, the user's reads go to
// the primary (the mark may exist).
func (m *Marks) Reading(ctx context.Context, user int64) context.Context {
	if m.client == nil {
		m.mu.Lock()
		t, ok := m.local[user]
		m.mu.Unlock()
		if ok && time.Since(t) <= m.ttl {
			return feed.WithLastWrite(ctx, t)
		}
		return ctx
	}
	v, err := m.client.Get(ctx, m.key(user)).Int64()
	switch {
	case err == redis.Nil:
		return ctx
	case err != nil:
		return feed.WithLastWrite(ctx, time.Now())
	}
	return feed.WithLastWrite(ctx, time.UnixMicro(v))
}

func (m *Marks) key(user int64) string { return m.prefix + strconv.FormatInt(user, 10) }
