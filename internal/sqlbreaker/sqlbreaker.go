// Package sqlbreaker is how feedd's services put the SQL circuit breaker
// (package breaker) in front of their store calls, so that each service's
// wrapper of its store is one line a method: a call the breaker refuses,
// or that SQL fails, becomes a 503 ("retry shortly"), never a 500; the
// store's domain answers (not found, conflict) pass as they are and never
// count against the breaker.
package sqlbreaker

import (
	"context"
	"errors"
	"fmt"

	"github.com/feedd/feedd/internal/breaker"
	"github.com/feedd/feedd/internal/feed"
)

// Do runs fn through b (nil: directly) and gives a failure that is not a
// domain answer, nor the caller's own cancellation, the code EUNAVAILABLE.
func Do[T any](ctx context.Context, b *breaker.Breaker, fn func(ctx context.Context) (T, error)) (T, error) {
	v, err := breaker.Do(ctx, b, fn)
	if err == nil || DomainError(err) || ctx.Err() != nil {
		return v, err
	}
	return v, errUnavailable(err)
}

// Err is Do for a call that returns only an error.
func Err(ctx context.Context, b *breaker.Breaker, fn func(ctx context.Context) error) error {
	_, err := Do(ctx, b, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

// errUnavailable is what a caller sees while the breaker is open, or when
// SQL failed a call: a 503, never a 500, because retrying later helps.
func errUnavailable(cause error) error {
	return fmt.Errorf("%w: %w", feed.Errorf(feed.EUNAVAILABLE, "the database is not answering; retry shortly"), cause)
}

// Unavailable wraps cause as Do does a failed call (for tests, and for
// stores that fail on their own).
func Unavailable(cause error) error { return errUnavailable(cause) }

// DomainError reports the errors that say nothing about SQL's health: the
// store's answers "not found", "conflict" and the like. A breaker's
// Config.Ignore is set to it.
func DomainError(err error) bool {
	var e *feed.Error
	return errors.As(err, &e) && e.Code != feed.EINTERNAL && e.Code != feed.EUNAVAILABLE
}

// IsUnavailable reports whether err means SQL could not answer (as opposed
// to a domain answer or a bug).
func IsUnavailable(err error) bool { return feed.ErrorCode(err) == feed.EUNAVAILABLE }
