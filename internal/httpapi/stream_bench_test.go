package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/stream"
)

// tripService is the fake service whose hidden authors and like states
// each cost one Redis round trip, as the timeline's and the likes
// service's do on a warm cache (a GET of the hidden set, one pipeline of
// like states), so that the benchmark below counts what delivery costs in
// round trips as well as in CPU. The bulk likes call costs one (the
// count) when the post has no likes, as a new post does.
type tripService struct {
	*fakeService
	rdb *redis.Client
}

func (s tripService) trip(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

func (s tripService) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	if err := s.trip(ctx); err != nil {
		return feed.Hidden{}, err
	}
	return s.fakeService.Hidden(ctx, viewer)
}

func (s tripService) LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (map[int64]feed.LikeState, bool, error) {
	if err := s.trip(ctx); err != nil {
		return nil, false, err
	}
	return s.fakeService.LikeStates(ctx, viewer, posts)
}

func (s tripService) LikedBy(ctx context.Context, p feed.Post, readers []int64) (int64, map[int64]bool, bool, error) {
	if err := s.trip(ctx); err != nil {
		return 0, nil, false, err
	}
	return 0, map[int64]bool{}, true, nil
}

// perStreamRender is how a stream rendered a post before the rendering
// was shared: the post, the reader's hidden authors and its like state,
// for each stream. Kept here as the benchmark's baseline.
func perStreamRender(ctx context.Context, svc Timeline, lk Likes, me int64, ev stream.Event, renders chan struct{}) ([]apijson.Post, error) {
	renders <- struct{}{}
	defer func() { <-renders }()
	p, err := svc.Post(ctx, ev.ID)
	if err != nil {
		return nil, err
	}
	hidden, err := svc.Hidden(ctx, me)
	if err != nil {
		return nil, err
	}
	if hidden.InFeed(p.AuthorID) {
		return nil, nil
	}
	page, _, err := showPosts(ctx, lk, me, feed.Page{Posts: []feed.Post{p}})
	if err != nil {
		return nil, err
	}
	return page.Items, nil
}

// BenchmarkStreamDelivery measures delivering one new post to N open
// streams of one process, the old way (each stream renders it for its
// reader: a hidden-set and a like-state round trip each, 4 per CPU at
// once) against the shared rendering (one post read, hidden sets from
// the streams, one bulk likes round trip). One op is one post to all N
// streams; deliveries/s is N per op. Needs Redis (FEEDD_TEST_REDIS_URL,
// default 127.0.0.1:6379/1) for the round trips:
//
//	go test -run XXX -bench StreamDelivery -benchtime 20x ./internal/httpapi
func BenchmarkStreamDelivery(b *testing.B) {
	opts, err := redis.ParseURL(cmp.Or(os.Getenv("FEEDD_TEST_REDIS_URL"), "redis://127.0.0.1:6379/1"))
	if err != nil {
		b.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", opts.Addr, time.Second); err != nil {
		b.Skipf("no Redis at %s: %v", opts.Addr, err)
	} else {
		c.Close()
	}
	rdb := redis.NewClient(opts)
	b.Cleanup(func() { rdb.Close() })
	for _, n := range []int{1000, 10000} {
		fake := newFakeService(testNow)
		fake.seedUser(alice, "alice")
		svc := tripService{fakeService: fake, rdb: rdb}
		cache := inmemcache.New(inmemcache.Options{})
		hub := stream.New(nil, stream.Config{Max: n + 1, Buffer: 4}, cache,
			func(context.Context, int64) ([]int64, error) { return []int64{alice}, nil })
		ctx := context.Background()
		streams := make([]*stream.Stream, n)
		for i := range streams {
			s, err := hub.Open(ctx, int64(1000+i))
			if err != nil {
				b.Fatal(err)
			}
			s.SetHidden(feed.Hidden{}, time.Now(), 0)
			streams[i] = s
		}
		p := fake.seedPost(alice, "a post to everyone")
		renders := make(chan struct{}, rendersPerCPU*runtime.GOMAXPROCS(0))
		b.Run(fmt.Sprintf("per-stream/streams=%d", n), func(b *testing.B) {
			ev := stream.Event{Kind: stream.Post, ID: p.ID}
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				for _, s := range streams {
					wg.Add(1)
					go func() {
						defer wg.Done()
						items, err := perStreamRender(ctx, svc, svc, s.Reader(), ev, renders)
						if err != nil || len(items) != 1 {
							b.Errorf("render: %v, %d items", err, len(items))
							return
						}
						var buf []byte
						_, _ = io.Discard.Write(items[0].AppendJSON(append(buf, "event: post\nid: "...)))
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
		b.Run(fmt.Sprintf("shared/streams=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ev := stream.Event{Kind: stream.Post, ID: p.ID, Shared: stream.NewShared(streams)}
				var wg sync.WaitGroup
				for _, s := range streams {
					wg.Add(1)
					go func() {
						defer wg.Done()
						v, err := ev.Shared.Do(ctx, func() (any, error) { return renderShared(ctx, svc, svc, ev) })
						if err != nil {
							b.Errorf("render: %v", err)
							return
						}
						if bs, err := v.(*sharedPost).bytesFor(s); bs == nil || err != nil {
							b.Errorf("no bytes for a stream: %v", err)
						} else {
							_, _ = io.Discard.Write(bs)
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
		for _, s := range streams {
			s.Close()
		}
		cache.Close()
	}
}
