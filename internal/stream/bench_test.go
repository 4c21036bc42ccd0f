package stream

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/rediscache"
)

// BenchmarkPublish measures what announcing a post costs its publisher
// with no stream open and with 1,000 streams of the author's followers
// open on one process listening (go test -bench Publish ./internal/stream).
// With per-author channels it is one message either way: the streams cost
// the listening process, not the publisher. Here the listening process is
// the benchmark's own, so with 1,000 streams its time also holds the
// delivery of 1,000 events per post on the same two cores.
func BenchmarkPublish(b *testing.B) {
	backends := map[string]func(b *testing.B) feed.Notifier{
		"inmem": func(b *testing.B) feed.Notifier {
			c := inmemcache.New(inmemcache.Options{})
			b.Cleanup(func() { c.Close() })
			return c
		},
		"redis": func(b *testing.B) feed.Notifier {
			opts, err := redis.ParseURL(cmp.Or(os.Getenv("FEEDD_TEST_REDIS_URL"), "redis://127.0.0.1:6379/1"))
			if err != nil {
				b.Fatal(err)
			}
			client := redis.NewClient(opts)
			if err := client.Ping(context.Background()).Err(); err != nil {
				b.Skipf("no Redis at %s: %v", opts.Addr, err)
			}
			c := rediscache.New(client, rediscache.Options{Prefix: "feeddbench:"})
			b.Cleanup(func() { c.Close() })
			return c
		},
	}
	for _, name := range []string{"inmem", "redis"} {
		for _, streams := range []int{0, 1000} {
			b.Run(fmt.Sprintf("%s/streams=%d", name, streams), func(b *testing.B) {
				n := backends[name](b)
				const author = 1
				h := New(nil, Config{Max: streams + 1, MaxPerUser: 1}, n, func(context.Context, int64) ([]int64, error) {
					return []int64{author}, nil
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go h.Run(ctx)
				for r := range streams {
					s, err := h.Open(ctx, int64(100+r))
					if err != nil {
						b.Fatal(err)
					}
					defer s.Close()
					go func() { // a client that keeps up
						for s.Next(ctx).Kind < Shutdown {
						}
					}()
				}
				ann := NewAnnouncer(n)
				var id int64
				for b.Loop() {
					id++
					if err := ann.PostCreated(ctx, author, id); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPerReaderChannels is the alternative to per-author channels: a
// message on each follower's channel, 1,000 PUBLISHes pipelined per post,
// with nobody listening (what the publisher pays before any stream).
func BenchmarkPerReaderChannels(b *testing.B) {
	opts, err := redis.ParseURL(cmp.Or(os.Getenv("FEEDD_TEST_REDIS_URL"), "redis://127.0.0.1:6379/1"))
	if err != nil {
		b.Fatal(err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	ctx := context.Background()
	if err := client.Ping(ctx).Err(); err != nil {
		b.Skipf("no Redis at %s: %v", opts.Addr, err)
	}
	channels := make([]string, 1000)
	for i := range channels {
		channels[i] = fmt.Sprintf("feeddbench:reader:%d", i)
	}
	var id int64
	for b.Loop() {
		id++
		_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, ch := range channels {
				p.Publish(ctx, ch, id)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
