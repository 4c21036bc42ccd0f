package stream

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
)

// oneAuthor is a timeline and likes of one author's posts, no one hidden
// and nothing liked: the post a benchmark delivers.
type oneAuthor struct {
	mu    sync.Mutex
	posts map[int64]feed.Post
	next  int64
}

func (f *oneAuthor) seedPost(author int64, content string) feed.Post {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.posts == nil {
		f.posts, f.next = map[int64]feed.Post{}, 1<<40
	}
	f.next++
	p := feed.Post{ID: f.next, AuthorID: author, Content: content, CreatedAt: time.Now()}
	f.posts[p.ID] = p
	return p
}

func (f *oneAuthor) Post(ctx context.Context, id int64) (feed.Post, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.posts[id]
	if !ok {
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	return p, nil
}

func (f *oneAuthor) PostVersion(ctx context.Context, id, _ int64) (feed.Post, error) {
	return f.Post(ctx, id)
}

func (f *oneAuthor) FeedSince(ctx context.Context, reader, after int64, n int) ([]feed.Post, bool, error) {
	return nil, false, nil
}

func (f *oneAuthor) ListFeedSince(ctx context.Context, reader, list, after int64, n int) ([]feed.Post, bool, error) {
	return nil, false, nil
}

func (f *oneAuthor) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	return feed.Hidden{}, nil
}

func (f *oneAuthor) LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (map[int64]feed.LikeState, bool, error) {
	out := map[int64]feed.LikeState{}
	for _, p := range posts {
		out[p.ID] = feed.LikeState{}
	}
	return out, false, nil
}

// tripService is the fake service whose hidden authors and like states
// each cost one Redis round trip, as the timeline's and the likes
// service's do on a warm cache (a GET of the hidden set, one pipeline of
// like states), so that the benchmark below counts what delivery costs in
// round trips as well as in CPU. The bulk likes call costs one (the
// count) when the post has no likes, as a new post does.
type tripService struct {
	*oneAuthor
	rdb *redis.Client
}

func (s tripService) trip(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

func (s tripService) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	if err := s.trip(ctx); err != nil {
		return feed.Hidden{}, err
	}
	return s.oneAuthor.Hidden(ctx, viewer)
}

func (s tripService) LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (map[int64]feed.LikeState, bool, error) {
	if err := s.trip(ctx); err != nil {
		return nil, false, err
	}
	return s.oneAuthor.LikeStates(ctx, viewer, posts)
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
func perStreamRender(ctx context.Context, svc Timeline, lk Likes, me int64, ev Event, renders chan struct{}) ([]apijson.Post, error) {
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
	states, _, err := lk.LikeStates(ctx, me, []feed.Post{p})
	if err != nil {
		return nil, err
	}
	return apijson.NewPostsPage([]feed.Post{p}, false, states).Items, nil
}

// BenchmarkStreamDelivery measures delivering one new post to N open
// streams of one process, the old way (each stream renders it for its
// reader: a hidden-set and a like-state round trip each, 4 per CPU at
// once) against the shared rendering (one post read, hidden sets from
// the streams, one bulk likes round trip). One op is one post to all N
// streams; deliveries/s is N per op. Needs Redis (FEEDD_TEST_REDIS_URL,
// default 127.0.0.1:6379/1) for the round trips:
//
//	go test -run XXX -bench StreamDelivery -benchtime 20x ./internal/stream
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
	const author = 1
	for _, n := range []int{1000, 10000} {
		fake := &oneAuthor{}
		svc := tripService{oneAuthor: fake, rdb: rdb}
		cache := inmemcache.New(inmemcache.Options{})
		hub := New(nil, Config{Max: n + 1, Buffer: 4}, cache,
			func(context.Context, int64) ([]int64, error) { return []int64{author}, nil })
		ctx := context.Background()
		streams := make([]*Stream, n)
		for i := range streams {
			s, err := hub.Open(ctx, int64(1000+i))
			if err != nil {
				b.Fatal(err)
			}
			s.SetHidden(feed.Hidden{}, time.Now(), 0)
			streams[i] = s
		}
		p := fake.seedPost(author, "a post to everyone")
		renders := make(chan struct{}, rendersPerCPU*runtime.GOMAXPROCS(0))
		b.Run(fmt.Sprintf("per-stream/streams=%d", n), func(b *testing.B) {
			ev := Event{Kind: Post, ID: p.ID}
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
				ev := Event{Kind: Post, ID: p.ID, Shared: NewShared(streams)}
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

func (f *oneAuthor) ListShows(context.Context, int64, int64, feed.Post) (bool, error) {
	return true, nil
}
