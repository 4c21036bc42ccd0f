package rediscache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/breaker"
)

// Breaker puts circuit breakers in front of a client, one per Redis
// server. While a server is unreachable every call to it costs go-redis's
// retries and dials; once Failures calls in a row have failed that way
// its breaker opens, and commands and pipelines for it fail at once with
// an error that wraps breaker.ErrOpen, until a probe after the cool-down
// finds it back. Callers already treat a cache error as "go to SQL" (or
// answer 503), so an open breaker only makes that answer fast.
//
// On a Cluster each node has its own breaker, installed on the node's
// client (ClusterClient.OnNewNode), inside go-redis's redirects and
// retries: a master that is down opens its breaker alone, and the slots
// of the other masters are still served from Redis, where one breaker for
// the whole client sent every read of the deployment to SQL. A command
// for the dead master's slots fails fast once its breaker is open instead
// of riding out the failover in go-redis's retries; the fan-out holds and
// retries such a step itself (fanout.Config.RetryFor), and the slot map,
// reloaded every second, sends it to the promoted replica.
//
// Only errors that say Redis is unreachable or not serving count (see
// Unavailable); a reply such as redis.Nil, NOSCRIPT, WRONGTYPE or a script
// error means Redis answered, and a caller's own cancellation says
// nothing. Calls are not timed here: go-redis's dial, read and write
// timeouts already bound them, and a timeout error counts.
type Breaker struct {
	cfg      breaker.Config
	onChange func(node string, from, to breaker.State)

	mu    sync.Mutex
	nodes map[string]*nodeBreaker // by server address
}

// nodeBreaker is the hook guarding one server.
type nodeBreaker struct {
	addr string
	b    *breaker.Breaker
	// lastCall is when a call last came to it (unix ns): a node the
	// client no longer sends anything (a failed-over master) does not
	// keep the Breaker's State open forever.
	lastCall atomic.Int64
}

// admittedKey marks the context of a call a node's breaker let through. A
// client that opens a connection for it sends its handshake (HELLO,
// CLIENT SETINFO…) through the same hooks with that context: those are
// part of the call, so they are neither admitted nor counted on their
// own. Otherwise one command would count as several failures, and a
// half-open probe that needs a new connection would be refused its own
// handshake and never close the breaker.
type admittedKey struct{}

// errOpen is what a refused command or pipeline fails with.
var errOpen = fmt.Errorf("rediscache: %w", breaker.ErrOpen)

// idleNode is how long after its last call a node's breaker stops
// counting in State and OpenNodes.
const idleNode = 10 * time.Second

// AddBreaker installs breakers on client: one in front of a single
// server, or one per node of a *redis.ClusterClient (install it before the
// client's first command: only nodes created after it get one). cfg.Ignore
// is replaced by the complement of Unavailable, cfg.Timeout is not used,
// and cfg.OnChange is replaced by onChange (may be nil), told the node's
// address. Install it before other hooks (CountCommands) so that they do
// not see the commands it refuses.
func AddBreaker(client redis.UniversalClient, cfg breaker.Config, onChange func(node string, from, to breaker.State)) *Breaker {
	cfg.Ignore = func(err error) bool { return !Unavailable(err) }
	h := &Breaker{cfg: cfg, onChange: onChange, nodes: map[string]*nodeBreaker{}}
	switch c := client.(type) {
	case *redis.ClusterClient:
		c.OnNewNode(func(node *redis.Client) { node.AddHook(h.node(node.Options().Addr)) })
	case *redis.Client:
		c.AddHook(h.node(c.Options().Addr))
	default:
		client.AddHook(h.node(""))
	}
	return h
}

// node returns the breaker of the server at addr. A node client that
// go-redis closes and creates again keeps its breaker.
func (h *Breaker) node(addr string) *nodeBreaker {
	h.mu.Lock()
	defer h.mu.Unlock()
	if nb, ok := h.nodes[addr]; ok {
		return nb
	}
	cfg := h.cfg
	cfg.OnChange = nil
	if h.onChange != nil {
		cfg.OnChange = func(from, to breaker.State) { h.onChange(addr, from, to) }
	}
	nb := &nodeBreaker{addr: addr, b: breaker.New(cfg)}
	nb.lastCall.Store(time.Now().UnixNano())
	h.nodes[addr] = nb
	return nb
}

// active calls f with the breaker of every node called within idleNode.
func (h *Breaker) active(f func(*nodeBreaker)) {
	since := time.Now().Add(-idleNode).UnixNano()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, nb := range h.nodes {
		if nb.lastCall.Load() >= since {
			f(nb)
		}
	}
}

// State is the worst state of the servers' breakers (open if any is), for
// the feedd_cache_breaker_state gauge.
func (h *Breaker) State() breaker.State {
	worst := breaker.Closed
	h.active(func(nb *nodeBreaker) { worst = max(worst, nb.b.State()) })
	return worst
}

// OpenNodes is how many servers' breakers are open: on a Cluster, the
// nodes whose slots are read from SQL meanwhile.
func (h *Breaker) OpenNodes() int {
	n := 0
	h.active(func(nb *nodeBreaker) {
		if nb.b.State() == breaker.Open {
			n++
		}
	})
	return n
}

// Nodes returns the state of each server's breaker by address, for the
// ops console; a node not called for a while is left out, as in State.
func (h *Breaker) Nodes() map[string]breaker.State {
	out := map[string]breaker.State{}
	h.active(func(nb *nodeBreaker) { out[nb.addr] = nb.b.State() })
	return out
}

// DialHook lets dials through: a dial happens only inside a command (or
// the pool's upkeep), and the command's error is what is counted.
func (nb *nodeBreaker) DialHook(next redis.DialHook) redis.DialHook { return next }

func (nb *nodeBreaker) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(admittedKey{}) == nb {
			return next(ctx, cmd)
		}
		nb.lastCall.Store(time.Now().UnixNano())
		call, err := nb.b.Admit()
		if err != nil {
			cmd.SetErr(errOpen)
			return errOpen
		}
		err = next(context.WithValue(ctx, admittedKey{}, nb), cmd)
		call.Done(ctx, err)
		return err
	}
}

func (nb *nodeBreaker) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(admittedKey{}) == nb {
			return next(ctx, cmds)
		}
		nb.lastCall.Store(time.Now().UnixNano())
		call, err := nb.b.Admit()
		if err != nil {
			// Callers that read each command's result (scripts in a
			// pipeline, GETs with misses) must see the refusal there too.
			for _, cmd := range cmds {
				cmd.SetErr(errOpen)
			}
			return errOpen
		}
		err = next(context.WithValue(ctx, admittedKey{}, nb), cmds)
		call.Done(ctx, err)
		return err
	}
}

var _ redis.Hook = (*nodeBreaker)(nil)

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
