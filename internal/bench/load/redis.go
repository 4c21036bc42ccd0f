package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// Redis work bench does itself uses generic commands on whole key
// prefixes (SCAN, UNLINK, TYPE, MEMORY USAGE) and the rediscache API for
// anything that must match feedd's own layout. Every command touches one
// key, and a SCAN walks every master, so a Cluster works too.

// eachMaster runs f on every node that holds keys: each master of a
// Cluster, or the one server.
func eachMaster(ctx context.Context, rdb redis.UniversalClient, f func(ctx context.Context, node redis.Cmdable) error) error {
	if cl, ok := rdb.(*redis.ClusterClient); ok {
		return cl.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return f(ctx, n) })
	}
	return f(ctx, rdb)
}

// scanKeys returns every key under prefix.
func scanKeys(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]string, error) {
	// A Cluster's masters are scanned concurrently.
	var mu sync.Mutex
	var keys []string
	err := eachMaster(ctx, rdb, func(ctx context.Context, node redis.Cmdable) error {
		var mine []string
		it := node.Scan(ctx, 0, escapeGlob(prefix)+"*", 1000).Iterator()
		for it.Next(ctx) {
			mine = append(mine, it.Val())
		}
		mu.Lock()
		keys = append(keys, mine...)
		mu.Unlock()
		return it.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("scan %q: %w", prefix, err)
	}
	return keys, nil
}

// escapeGlob quotes the characters SCAN MATCH treats as a pattern.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// deletePrefix removes every key under prefix, a pipeline of UNLINKs (one
// key each) per 1000 keys, and returns how many it removed.
func deletePrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) (int, error) {
	if prefix == "" {
		return 0, errors.New("bench: refusing to delete an empty prefix")
	}
	keys, err := scanKeys(ctx, rdb, prefix)
	if err != nil {
		return 0, err
	}
	return len(keys), unlinkKeys(ctx, rdb, keys)
}

func unlinkKeys(ctx context.Context, rdb redis.UniversalClient, keys []string) error {
	for start := 0; start < len(keys); start += 1000 {
		p := rdb.Pipeline()
		for _, k := range keys[start:min(start+1000, len(keys))] {
			p.Unlink(ctx, k)
		}
		if _, err := p.Exec(ctx); err != nil {
			return fmt.Errorf("unlink: %w", err)
		}
	}
	return nil
}

// zaddBaseline is the fan-out's yardstick: one member ZADDed into a fresh
// key per reader, pipelines of batch commands, on goroutines concurrent
// connections, as fast as go-redis goes. It returns the time the writes
// took; the keys are deleted afterwards, untimed.
func zaddBaseline(ctx context.Context, rdb redis.UniversalClient, prefix string, readers []int64, member int64, goroutines, batch int) (time.Duration, error) {
	var next atomic.Int64
	score := float64(member)
	m := strconv.FormatInt(member, 10)
	key := func(p string, r int64) string { return p + "{" + strconv.FormatInt(r, 10) + "}" }
	run := func(prefix string, readers []int64) error {
		next.Store(0)
		return parallel(ctx, goroutines, func(ctx context.Context) error {
			for {
				i := int(next.Add(int64(batch))) - batch
				if i >= len(readers) {
					return nil
				}
				p := rdb.Pipeline()
				for _, r := range readers[i:min(i+batch, len(readers))] {
					p.ZAdd(ctx, key(prefix, r), redis.Z{Score: score, Member: m})
				}
				if _, err := p.Exec(ctx); err != nil {
					return err
				}
			}
		})
	}
	// An untimed pass over keys of its own opens the pool's connections,
	// as feedd's are open when its fan-out starts.
	warm := readers[:min(len(readers), goroutines*batch)]
	err := run(prefix+"warm:", warm)
	var took time.Duration
	if err == nil {
		start := time.Now()
		err = run(prefix, readers)
		took = time.Since(start)
	}
	keys := make([]string, 0, len(readers)+len(warm))
	for _, r := range readers {
		keys = append(keys, key(prefix, r))
	}
	for _, r := range warm {
		keys = append(keys, key(prefix+"warm:", r))
	}
	if derr := unlinkKeys(context.WithoutCancel(ctx), rdb, keys); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return 0, fmt.Errorf("bench: zadd baseline: %w", err)
	}
	return took, nil
}

// parallel runs f on n goroutines and returns the first error; f's ctx is
// cancelled when one fails.
func parallel(ctx context.Context, n int, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make(chan error, n)
	for range n {
		go func() {
			err := f(ctx)
			if err != nil {
				cancel(err)
			}
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// forEach calls f for every index in [0, n) on goroutines workers.
func forEach(ctx context.Context, workers, n int, f func(ctx context.Context, i int) error) error {
	var next atomic.Int64
	return parallel(ctx, min(workers, max(n, 1)), func(ctx context.Context) error {
		for {
			i := int(next.Add(1)) - 1
			if i >= n {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := f(ctx, i); err != nil {
				return err
			}
		}
	})
}

// sampleOf returns up to k distinct elements of xs, in random order.
func sampleOf[T any](xs []T, k int) []T {
	if k >= len(xs) {
		out := append([]T(nil), xs...)
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	idx := rand.Perm(len(xs))[:k]
	out := make([]T, k)
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}

// deleteQueues removes the queues and exchange feedd's rabbit broker
// declares under prefix (see internal/rabbit): <prefix><queue>,
// <prefix><queue>.dead and <prefix>dlx. A queue that is not there is
// not an error.
func deleteQueues(amqpURL, prefix string) error {
	if amqpURL == "" || prefix == "" {
		return nil
	}
	conn, err := amqp.DialConfig(amqpURL, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		return fmt.Errorf("bench: delete queues: dial: %w", err)
	}
	defer conn.Close()
	var errs []error
	for _, q := range []string{feed.QueuePosts, feed.QueueTasks, feed.QueueLikes} {
		for _, name := range []string{prefix + q, prefix + q + ".dead"} {
			// A failed command closes its channel: one channel per command.
			ch, err := conn.Channel()
			if err != nil {
				return fmt.Errorf("bench: delete queues: %w", err)
			}
			if _, err := ch.QueueDelete(name, false, false, false); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("delete queue %s: %w", name, err))
			}
			ch.Close()
		}
	}
	if ch, err := conn.Channel(); err == nil {
		if err := ch.ExchangeDelete(prefix+"dlx", false, false); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("delete exchange %sdlx: %w", prefix, err))
		}
		ch.Close()
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == amqp.NotFound
}
