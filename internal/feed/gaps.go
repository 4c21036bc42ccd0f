package feed

import (
	"context"
	"sync"
)

// Gaps records what a read could not see because part of the truth was
// unreachable: on a sharded store, a shard whose server is down. A read
// that carries Gaps in its context (WithGaps) is answered from the shards
// that answer instead of failing, and learns here what is missing: the
// posts it asked for by id that no shard could answer for (Unknown), and
// whether anything at all is missing (Any). Such a read is served marked
// degraded, and what it left out is not taken for deleted. A nil *Gaps
// records nothing. It is safe for concurrent use.
type Gaps struct {
	mu      sync.Mutex
	any     bool
	unknown map[int64]struct{}
}

type gapsKey struct{}

// WithGaps returns ctx carrying a new Gaps, and the Gaps.
func WithGaps(ctx context.Context) (context.Context, *Gaps) {
	g := &Gaps{}
	return context.WithValue(ctx, gapsKey{}, g), g
}

// GapsOf returns ctx's Gaps, or nil when the read must rather fail than
// be partial.
func GapsOf(ctx context.Context) *Gaps {
	g, _ := ctx.Value(gapsKey{}).(*Gaps)
	return g
}

// Missed records that a read left something out; ids, if any, are the
// ids asked for whose answer is unknown.
func (g *Gaps) Missed(ids ...int64) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.any = true
	if len(ids) > 0 && g.unknown == nil {
		g.unknown = make(map[int64]struct{}, len(ids))
	}
	for _, id := range ids {
		g.unknown[id] = struct{}{}
	}
}

// Any reports whether a read left something out.
func (g *Gaps) Any() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.any
}

// Unknown reports whether id was asked for and could not be answered.
func (g *Gaps) Unknown(id int64) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.unknown[id]
	return ok
}
