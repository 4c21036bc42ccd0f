package feed

import "context"

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

// Check is the state of one dependency, as a readiness probe reports it.
// A process is ready when every Required check passes; the others are
// reported but do not take the process out of service (a feed read
// survives the cache; a publish survives the broker, through the outbox).
type Check struct {
	Name     string
	Required bool
	Err      error
}
