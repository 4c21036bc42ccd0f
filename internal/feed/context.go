package feed

import (
	"context"
	"sync/atomic"
)

type requestIDKey struct{}

// WithRequestID returns ctx carrying a request id: the API sets it from
// X-Request-Id, the outbox event carries it to the relay and the workers,
// and every log line written with the context names it.
func WithRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns ctx's request id, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// Notes collects what the service learned about how it answered one
// request, for the API to tell the client. It is request-scoped.
type Notes struct {
	degraded atomic.Bool
	next     atomic.Int64
}

type notesKey struct{}

// WithNotes returns ctx carrying fresh Notes, and the Notes.
func WithNotes(ctx context.Context) (context.Context, *Notes) {
	n := &Notes{}
	return context.WithValue(ctx, notesKey{}, n), n
}

// MarkDegraded notes that the answer may be incomplete: it was served
// from the cache alone because SQL was unavailable (or a degradation
// switch said so). A ctx without Notes ignores it.
func MarkDegraded(ctx context.Context) {
	if n, ok := ctx.Value(notesKey{}).(*Notes); ok {
		n.degraded.Store(true)
	}
}

// Degraded reports whether the answer was marked degraded.
func (n *Notes) Degraded() bool { return n != nil && n.degraded.Load() }

// SetNext notes that a page stopped reading early, filtering, with more
// below pos: its cursor continues from pos rather than from its last item
// (which a short page may not even have). A ctx without Notes ignores it.
func SetNext(ctx context.Context, pos int64) {
	if n, ok := ctx.Value(notesKey{}).(*Notes); ok {
		n.next.Store(pos)
	}
}

// Next is the position SetNext noted, or 0.
func (n *Notes) Next() int64 {
	if n == nil {
		return 0
	}
	return n.next.Load()
}

// Check is the state of one dependency, as a readiness probe reports it.
// A process is ready when every Required check passes; the others are
// reported but do not take the process out of service (a feed read
// survives the cache; a publish survives the broker, through the outbox).
type Check struct {
	Name     string
	Required bool
	Err      error
}
