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
	"sync/atomic"
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

	// since is when Redis began keeping marks (the sentinel key's
	// value), Unix microseconds; checked is when it was last read, Unix
	// nanoseconds. See complete.
	since, checked atomic.Int64
}

// recheck is how often a process reads the sentinel key.
const recheck = time.Second

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
	if !m.complete(ctx) {
		return feed.WithLastWrite(ctx, time.Now())
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

// complete reports whether Redis holds every mark that is still needed:
// a Redis that lost its data (a restart without persistence, a flush)
// lost marks too, and a user without one would read a replica that may
// not have the user's write. A sentinel key without expiry says since
// when Redis keeps marks; once it is older than a mark lives, every
// needed mark is there. A missing sentinel is written again, and until
// then, or while it cannot be read, reads go to the primary. Read at
// most once a second per process.
func (m *Marks) complete(ctx context.Context) bool {
	now := time.Now()
	if now.UnixNano()-m.checked.Load() >= int64(recheck) {
		m.checked.Store(now.UnixNano())
		key := m.prefix + "since"
		v, err := m.client.Get(ctx, key).Int64()
		if err == redis.Nil {
			if _, err = m.client.SetNX(ctx, key, now.UnixMicro(), 0).Result(); err == nil {
				v, err = m.client.Get(ctx, key).Int64()
			}
		}
		if err != nil {
			// Unknown: checked again at the next read.
			m.checked.Store(0)
			m.since.Store(now.UnixMicro())
			return false
		}
		m.since.Store(v)
	}
	return now.Sub(time.UnixMicro(m.since.Load())) >= m.ttl
}

func (m *Marks) key(user int64) string { return m.prefix + strconv.FormatInt(user, 10) }
