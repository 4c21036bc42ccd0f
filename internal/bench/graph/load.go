package graph

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
)

// Author is a user the manifest names, with its exact follower count.
type Author struct {
	ID        string `json:"id"`
	Followers int    `json:"followers"`
}

// Cohort is a group of readers who follow the same number of accounts.
type Cohort struct {
	Name        string   `json:"name"` // following_<n>
	Following   int      `json:"following"`
	Celebrities int      `json:"celebrities"`
	Readers     []string `json:"readers"`
}

// Manifest describes a generated graph for bench run. Ids are decimal
// strings, as in the API.
type Manifest struct {
	Version            int       `json:"version"`
	CreatedAt          time.Time `json:"created_at"`
	Store              string    `json:"store"`
	Users              int       `json:"users"`
	Follows            int64     `json:"follows"`
	Posts              int64     `json:"posts"`
	FirstUserID        string    `json:"first_user_id"`
	LastUserID         string    `json:"last_user_id"`
	Celebrities        []Author  `json:"celebrities"`
	ZeroFollowerAuthor Author    `json:"zero_follower_author"`
	TopOrdinaryAuthor  Author    `json:"top_ordinary_author"`
	Cohorts            []Cohort  `json:"cohorts"`
	SampleUsers        []string  `json:"sample_users"`
	Options            Options   `json:"options"`
	Seconds            float64   `json:"seconds"`
	Notes              []string  `json:"notes,omitempty"`
	// LikedPost is the first celebrity's newest post, liked by each of its
	// followers (the notifications scenario's recipient and its one
	// group of them all); absent without a celebrity, or when the loader
	// does not load likes (LikesLoader).
	LikedPost *LikedPost `json:"liked_post,omitempty"`
}

// LikedPost is a post of the graph and how many users like it.
type LikedPost struct {
	ID       string `json:"id"`
	AuthorID string `json:"author_id"`
	Likes    int    `json:"likes"`
}

// LikesLoader is a Loader that also stores a post's likes, with its like
// count and its author's notifications of them (SQLLoader does).
type LikesLoader interface {
	LoadLikes(ctx context.Context, post, author int64, likers []int64, at time.Time) error
}

// Loader writes a graph into a store; SQLLoader writes into feedd's SQL
// tables. Finish is called once, when the whole graph is written.
type Loader interface {
	LoadUsers(ctx context.Context, users []feed.User) error
	LoadFollows(ctx context.Context, edges [][2]int64) error
	LoadPosts(ctx context.Context, posts []feed.Post) error
	Finish(ctx context.Context) error
}

// Load writes the graph through l with workers concurrent writers
// (follows first, then the users with their exact counts, then the
// posts), showing progress bars on bars, and returns the manifest.
func (g *Graph) Load(ctx context.Context, l Loader, workers int, bars io.Writer) (*Manifest, error) {
	begin := time.Now()
	workers = max(workers, 1)
	n := len(g.ids)
	in, out := make([]int64, n), make([]int64, n)

	bar := progress.New(bars, "follows", g.follows)
	err := pump(ctx, workers, func(ctx context.Context, send func([][2]int64) error) error {
		return g.eachEdgeBatch(ctx, 10_000, in, out, send)
	}, func(ctx context.Context, b [][2]int64) error {
		if err := l.LoadFollows(ctx, b); err != nil {
			return err
		}
		bar.Add(int64(len(b)))
		return nil
	})
	bar.Done()
	if err != nil {
		return nil, fmt.Errorf("bench graph: follows: %w", err)
	}

	bar = progress.New(bars, "users", int64(n))
	err = pump(ctx, workers, func(ctx context.Context, send func([]feed.User) error) error {
		const size = 10_000
		for s := 0; s < n; s += size {
			batch := make([]feed.User, 0, size)
			for i := s; i < min(s+size, n); i++ {
				name := g.userName(int32(i))
				batch = append(batch, feed.User{ID: g.ids[i], Name: name, Handle: userHandle(name), FollowerCount: in[i], FollowingCount: out[i], CreatedAt: g.now})
			}
			if err := send(batch); err != nil {
				return err
			}
		}
		return nil
	}, func(ctx context.Context, b []feed.User) error {
		if err := l.LoadUsers(ctx, b); err != nil {
			return err
		}
		bar.Add(int64(len(b)))
		return nil
	})
	bar.Done()
	if err != nil {
		return nil, fmt.Errorf("bench graph: users: %w", err)
	}

	bar = progress.New(bars, "posts", g.Posts())
	var (
		mu    sync.Mutex
		liked int64 // the first celebrity's newest post
	)
	err = pump(ctx, workers, func(ctx context.Context, send func([]feed.Post) error) error {
		return g.eachPostBatch(ctx, 5_000, send)
	}, func(ctx context.Context, b []feed.Post) error {
		if err := l.LoadPosts(ctx, b); err != nil {
			return err
		}
		for _, p := range b {
			if len(g.celebs) > 0 && p.AuthorID == g.ids[g.celebs[0]] {
				mu.Lock()
				liked = max(liked, p.ID)
				mu.Unlock()
			}
		}
		bar.Add(int64(len(b)))
		return nil
	})
	bar.Done()
	if err != nil {
		return nil, fmt.Errorf("bench graph: posts: %w", err)
	}
	lp, err := g.loadLikes(ctx, l, liked, bars)
	if err != nil {
		return nil, err
	}
	if err := l.Finish(ctx); err != nil {
		return nil, fmt.Errorf("bench graph: finish: %w", err)
	}
	m := g.manifest(in)
	m.LikedPost = lp
	m.Seconds = time.Since(begin).Seconds()
	return m, nil
}

// loadLikes has every follower of the first celebrity like its newest
// post (id post), when l loads likes: the post liked by a million of the
// 1M graph, one notification group of a million.
func (g *Graph) loadLikes(ctx context.Context, l Loader, post int64, bars io.Writer) (*LikedPost, error) {
	ll, ok := l.(LikesLoader)
	if !ok || post == 0 {
		return nil, nil
	}
	c := g.celebs[0]
	likers := make([]int64, 0, g.opts.CelebrityFollowers)
	for i := range int32(len(g.ids)) {
		if g.celebFollows[0].has(i) && i != c {
			likers = append(likers, g.ids[i])
		}
	}
	bar := progress.New(bars, "likes", int64(len(likers)))
	defer bar.Done()
	if err := ll.LoadLikes(ctx, post, g.ids[c], likers, g.now); err != nil {
		return nil, fmt.Errorf("bench graph: likes: %w", err)
	}
	bar.Add(int64(len(likers)))
	return &LikedPost{ID: feed.FormatID(post), AuthorID: feed.FormatID(g.ids[c]), Likes: len(likers)}, nil
}

// pump runs produce on one goroutine and consume on workers others,
// connected by a short channel; the first error stops everything.
func pump[T any](ctx context.Context, workers int, produce func(context.Context, func(T) error) error, consume func(context.Context, T) error) error {
	g, ctx := errgroup.WithContext(ctx)
	ch := make(chan T, workers)
	g.Go(func() error {
		defer close(ch)
		return produce(ctx, func(b T) error {
			select {
			case ch <- b:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	})
	for range workers {
		g.Go(func() error {
			for b := range ch {
				if err := consume(ctx, b); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

func (g *Graph) manifest(in []int64) *Manifest {
	id := func(i int32) string { return feed.FormatID(g.ids[i]) }
	m := &Manifest{
		Version: 1, CreatedAt: g.now.UTC(), Users: len(g.ids),
		Follows: g.follows, Posts: g.Posts(),
		FirstUserID: id(0), LastUserID: id(int32(len(g.ids) - 1)),
		ZeroFollowerAuthor: Author{ID: id(g.zero), Followers: int(in[g.zero])},
		Options:            g.opts,
		Notes:              g.notes,
	}
	for _, c := range g.celebs {
		m.Celebrities = append(m.Celebrities, Author{ID: id(c), Followers: int(in[c])})
	}
	top := int32(-1)
	for _, a := range g.authors {
		if top < 0 || in[a] > in[top] {
			top = a
		}
	}
	if top >= 0 {
		m.TopOrdinaryAuthor = Author{ID: id(top), Followers: int(in[top])}
	}
	for _, c := range g.cohorts {
		co := Cohort{Name: "following_" + strconv.Itoa(c.following), Following: c.following, Celebrities: c.celebs}
		for _, r := range c.readers {
			co.Readers = append(co.Readers, id(r))
		}
		m.Cohorts = append(m.Cohorts, co)
	}
	for _, s := range g.sample {
		m.SampleUsers = append(m.SampleUsers, id(s))
	}
	return m
}
