package feed

import (
	"context"
	"time"
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

type lastWriteKey struct{}

// WithLastWrite returns ctx for a request of a user whose last write
// committed at t (by a feedd host's clock): what the request reads must
// show that write, wherever it reads from (a SQL replica that may lag, a
// process's copy of the user's mute and block set). A zero t adds nothing.
func WithLastWrite(ctx context.Context, t time.Time) context.Context {
	if t.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, lastWriteKey{}, t)
}

// LastWrite returns the commit time of the last write of the user ctx
// reads for, if WithLastWrite gave one.
func LastWrite(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(lastWriteKey{}).(time.Time)
	return t, ok
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
