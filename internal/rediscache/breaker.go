package rediscache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/breaker"
)

// Breaker is a go-redis hook that puts a circuit breaker in front of a
// client. While Redis is unreachable every call costs go-redis's retries
// and dials; once Failures calls in a row have failed that way the breaker
// opens, and commands and pipelines fail at once with an error that wraps
// breaker.ErrOpen, until a probe after the cool-down finds Redis back.
// Callers already treat a cache error as "go to SQL" (or answer 503), so
// an open breaker only makes that answer fast.
//
// Only errors that say Redis is unreachable or not serving count (see
// Unavailable); a reply such as redis.Nil, NOSCRIPT, WRONGTYPE or a script
// error means Redis answered, and a caller's own cancellation says
// nothing. Calls are not timed here: go-redis's dial, read and write
// timeouts already bound them, and a timeout error counts.
//
// One breaker guards the whole client. On a Cluster that means one node
// that is down opens it for every node; per-node breakers (a hook on each
// node's client, through ClusterClient.OnNewNode) are a later step. It is
// installed on the ClusterClient itself, outside go-redis's redirects and
// retries, so a command that rides out a failover within MaxRedirects
// counts as a success, as it should.
type Breaker struct {
	b *breaker.Breaker
}

// admittedKey marks the context of a call the breaker let through. A
// client that opens a connection for it sends its handshake (HELLO,
// CLIENT SETINFO…) through the same hooks with that context: those are
// part of the call, so they are neither admitted nor counted on their
// own. Otherwise one command would count as several failures, and a
// half-open probe that needs a new connection would be refused its own
// handshake and never close the breaker.
type admittedKey struct{}

// errOpen is what a refused command or pipeline fails with.
var errOpen = fmt.Errorf("rediscache: %w", breaker.ErrOpen)

// AddBreaker installs a Breaker on client. cfg.Ignore is replaced by the
// complement of Unavailable and cfg.Timeout is not used. Install it before
// other hooks (CountCommands) so that they do not see the commands it
// refuses.
func AddBreaker(client redis.UniversalClient, cfg breaker.Config) *Breaker {
	cfg.Ignore = func(err error) bool { return !Unavailable(err) }
	h := &Breaker{b: breaker.New(cfg)}
	client.AddHook(h)
	return h
}

// State is the breaker's state, for the feedd_cache_breaker_state gauge.
func (h *Breaker) State() breaker.State { return h.b.State() }

// DialHook lets dials through: a dial happens only inside a command (or
// the pool's upkeep), and the command's error is what is counted.
func (h *Breaker) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *Breaker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(admittedKey{}) == h {
			return next(ctx, cmd)
		}
		call, err := h.b.Admit()
		if err != nil {
			cmd.SetErr(errOpen)
			return errOpen
		}
		err = next(context.WithValue(ctx, admittedKey{}, h), cmd)
		call.Done(ctx, err)
		return err
	}
}

func (h *Breaker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(admittedKey{}) == h {
			return next(ctx, cmds)
		}
		call, err := h.b.Admit()
		if err != nil {
			// Callers that read each command's result (scripts in a
			// pipeline, GETs with misses) must see the refusal there too.
			for _, cmd := range cmds {
				cmd.SetErr(errOpen)
			}
			return errOpen
		}
		err = next(context.WithValue(ctx, admittedKey{}, h), cmds)
		call.Done(ctx, err)
		return err
	}
}

var _ redis.Hook = (*Breaker)(nil)

// Unavailable reports whether err says that Redis is unreachable, slow or
// not serving: a network error or timeout, a pool timeout, a connection
// closed under the command, or an availability reply (LOADING, CLUSTERDOWN,
// MASTERDOWN, TRYAGAIN, READONLY, NOREPLICAS, max clients). Any other
// reply — redis.Nil, NOSCRIPT, WRONGTYPE, a script's error — means Redis
// answered. A context error is counted: the breaker has already set aside
// calls whose caller gave up, so what remains is a deadline inside the
// client.
func Unavailable(err error) bool {
	switch {
	case err == nil, errors.Is(err, redis.Nil), errors.Is(err, redis.ErrClosed):
		return false
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return true
	case redis.IsLoadingError(err), redis.IsClusterDownError(err), redis.IsMasterDownError(err),
		redis.IsTryAgainError(err), redis.IsReadOnlyError(err), redis.IsNoReplicasError(err),
		redis.IsMaxClientsError(err):
		return true
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}
