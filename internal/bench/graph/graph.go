// Package graph is the data feedd bench measures with: a synthetic social
// graph planned from a seed (celebrities with an exact follower count, an
// author nobody follows, cohorts of readers who follow a fixed number of
// accounts, and ordinary users whose followees are drawn from a Zipf law),
// loaded in bulk into the SQL store, and described by the Manifest that
// bench run reads to know whom to read and publish as.
package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/progress"
)

// Options shape a synthetic social graph.
type Options struct {
	// Users is the number of accounts, every special one included.
	Users int `json:"users"`
	// Celebrities each get exactly CelebrityFollowers followers.
	Celebrities        int `json:"celebrities"`
	CelebrityFollowers int `json:"celebrity_followers"`
	// PostsPerUser posts are written for every user, spread evenly over
	// PostSpan before the generation time.
	PostsPerUser int           `json:"posts_per_user"`
	PostSpan     time.Duration `json:"post_span_ns"`
	// PostBytes is the length of a post's content.
	PostBytes int `json:"post_bytes"`
	// Following is the mean number of ordinary authors an ordinary user
	// follows (uniform in [Following/2, 3*Following/2]); celebrities come
	// on top for the users in their follower sets.
	Following int `json:"following"`
	// Followees are drawn with a Zipf law of exponent ZipfS over a random
	// ranking of the ordinary authors, so follower counts follow a power
	// law; the law's offset is chosen so that the most followed ordinary
	// author expects about MaxFollowers followers.
	ZipfS        float64 `json:"zipf_s"`
	MaxFollowers int     `json:"max_followers"`
	// Cohorts are the following counts of the reader cohorts: each has
	// CohortReaders readers who follow exactly that many accounts, of
	// them CohortCelebrities celebrities (at most Celebrities).
	Cohorts           []int `json:"cohorts"`
	CohortReaders     int   `json:"cohort_readers"`
	CohortCelebrities int   `json:"cohort_celebrities"`
	// SampleUsers ordinary users are listed in the manifest, for runs that
	// need a random sample of readers.
	SampleUsers int    `json:"sample_users"`
	Seed        uint64 `json:"seed"`
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{
		Users: 10_000, Celebrities: 1, CelebrityFollowers: 5_000,
		PostsPerUser: 10, PostSpan: 72 * time.Hour, PostBytes: 80,
		Following: 20, ZipfS: 1.1,
		Cohorts: []int{50, 500, 5000}, CohortReaders: 100, CohortCelebrities: 20,
		SampleUsers: 2000, Seed: 1,
	}
}

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
}

// Loader writes a graph into a store; SQLLoader writes into feedd's SQL
// tables.
type Loader interface {
	LoadUsers(ctx context.Context, users []feed.User) error
	LoadFollows(ctx context.Context, edges [][2]int64) error
	LoadPosts(ctx context.Context, posts []feed.Post) error
}

// Graph is a planned graph: roles, celebrity follower sets and out-degrees
// are fixed; the edges themselves are drawn, deterministically from the
// seed, while they are streamed.
type Graph struct {
	opts Options
	now  time.Time
	ids  []int64 // user id by index; ascending

	celebs  []int32 // indexes of the celebrities
	zero    int32   // index of the zero-follower author
	authors []int32 // ordinary authors in Zipf rank order
	zipfV   float64

	// celebFollows[c] has bit i set when user i follows celebrity c.
	celebFollows []bitset
	// outDeg[i] is how many ordinary authors user i follows.
	outDeg []int32
	// cohorts: readers by index.
	cohorts []plannedCohort
	sample  []int32
	notes   []string

	follows int64 // total edges
}

type plannedCohort struct {
	following, celebs int
	readers           []int32
}

type bitset []uint64

func newBitset(n int) bitset      { return make(bitset, (n+63)/64) }
func (b bitset) set(i int32)      { b[i/64] |= 1 << (uint(i) % 64) }
func (b bitset) has(i int32) bool { return b[i/64]&(1<<(uint(i)%64)) != 0 }

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// Plan validates opts and fixes the graph's shape. now is the
// generation time (posts end there).
func Plan(opts Options, now time.Time) (*Graph, error) {
	o := opts
	switch {
	case o.Users < 2:
		return nil, errors.New("bench graph: --users must be at least 2")
	case o.Celebrities < 0 || o.CelebrityFollowers < 0 || o.PostsPerUser < 0 || o.Following < 0 || o.CohortReaders < 0 || o.CohortCelebrities < 0 || o.SampleUsers < 0 || o.PostBytes < 1:
		return nil, errors.New("bench graph: counts must not be negative and --post-bytes must be positive")
	case o.Celebrities > 0 && o.CelebrityFollowers < 1:
		return nil, errors.New("bench graph: --celebrity-followers must be positive when there are celebrities")
	case o.ZipfS <= 1:
		return nil, errors.New("bench graph: --zipf-s must be greater than 1")
	case o.PostSpan <= 0:
		return nil, errors.New("bench graph: --post-span must be positive")
	}
	g := &Graph{opts: o, now: now}
	n := o.Users
	rng := g.rng(1)

	// Ids: time-ordered like every feedd id, so index order is id order.
	gen := feed.NewIDGen(func() time.Time { return now })
	g.ids = make([]int64, n)
	for i := range g.ids {
		g.ids[i] = gen.Next()
	}

	// Roles, in index order: celebrities, the zero-follower author, the
	// cohort readers, then everyone else. Index order carries no meaning
	// for the edges: followees are drawn through a random ranking.
	next := int32(0)
	take := func(k int) []int32 {
		out := make([]int32, k)
		for i := range out {
			out[i] = next
			next++
		}
		return out
	}
	special := o.Celebrities + 1
	if special > n {
		return nil, fmt.Errorf("bench graph: %d celebrities and the zero-follower author need more than %d users", o.Celebrities, n)
	}
	g.celebs = take(o.Celebrities)
	g.zero = take(1)[0]
	ordinary := n - special // cohort readers are ordinary authors too
	cohortCelebs := min(o.CohortCelebrities, o.Celebrities)
	for _, f := range o.Cohorts {
		if o.CohortReaders == 0 {
			break
		}
		if f <= 0 {
			return nil, fmt.Errorf("bench graph: cohort following %d must be positive", f)
		}
		celebs := min(cohortCelebs, f)
		need := f - celebs
		// A reader follows need ordinary authors other than itself.
		if need > ordinary-1 {
			g.notes = append(g.notes, fmt.Sprintf("cohort following_%d left out: only %d ordinary authors to follow", f, ordinary-1))
			continue
		}
		if int(next)+o.CohortReaders > n {
			g.notes = append(g.notes, fmt.Sprintf("cohort following_%d left out: not enough users for %d more readers", f, o.CohortReaders))
			continue
		}
		g.cohorts = append(g.cohorts, plannedCohort{following: f, celebs: celebs, readers: take(o.CohortReaders)})
	}
	firstFree := next

	// Ordinary authors in a random rank order for the Zipf draws.
	g.authors = make([]int32, 0, ordinary)
	for i := int32(special); i < int32(n); i++ {
		g.authors = append(g.authors, i)
	}
	rng.Shuffle(len(g.authors), func(i, j int) { g.authors[i], g.authors[j] = g.authors[j], g.authors[i] })

	// Out-degrees towards ordinary authors.
	g.outDeg = make([]int32, n)
	maxOut := max(len(g.authors)-1, 0)
	for i := int32(0); i < int32(n); i++ {
		if i == g.zero {
			continue
		}
		d := 0
		if o.Following > 0 {
			d = o.Following/2 + rng.IntN(o.Following+1)
		}
		g.outDeg[i] = int32(min(d, maxOut))
	}
	for _, c := range g.cohorts {
		for _, r := range c.readers {
			g.outDeg[r] = int32(c.following - c.celebs)
		}
	}

	// Celebrity follower sets: the cohort readers assigned to them, then
	// a uniform sample (Knuth's selection sampling: exact size, one pass)
	// of everyone but the celebrity, the zero-follower author and the
	// cohort readers, whose following counts are fixed.
	isReader := newBitset(n)
	for _, c := range g.cohorts {
		for _, r := range c.readers {
			isReader.set(r)
		}
	}
	g.celebFollows = make([]bitset, len(g.celebs))
	for ci, c := range g.celebs {
		set := newBitset(n)
		forced := 0
		for _, co := range g.cohorts {
			if ci < co.celebs {
				for _, r := range co.readers {
					set.set(r)
					forced++
				}
			}
		}
		pool := n - 2 - isReader.count()
		want := o.CelebrityFollowers - forced
		if want < 0 {
			return nil, fmt.Errorf("bench graph: --celebrity-followers %d is fewer than the %d cohort readers who follow celebrity %d", o.CelebrityFollowers, forced, ci)
		}
		if want > pool {
			return nil, fmt.Errorf("bench graph: --celebrity-followers %d is more than the %d users who can follow a celebrity (raise --users)", o.CelebrityFollowers, pool+forced)
		}
		left := pool
		for i := int32(0); i < int32(n) && want > 0; i++ {
			if i == c || i == g.zero || isReader.has(i) {
				continue
			}
			if rng.IntN(left) < want {
				set.set(i)
				want--
			}
			left--
		}
		g.celebFollows[ci] = set
	}

	for _, d := range g.outDeg {
		g.follows += int64(d)
	}
	g.follows += int64(len(g.celebs)) * int64(o.CelebrityFollowers)

	// The Zipf offset: the top-ranked author expects maxF of the draws.
	maxF := o.MaxFollowers
	if maxF <= 0 {
		maxF = n / 50
		if o.Celebrities > 0 {
			maxF = min(maxF, o.CelebrityFollowers/10)
		}
		maxF = max(maxF, 10)
	}
	var draws int64
	for _, d := range g.outDeg {
		draws += int64(d)
	}
	g.zipfV = zipfOffset(o.ZipfS, len(g.authors), float64(maxF)/math.Max(float64(draws), 1))

	// A sample of ordinary users outside the cohorts.
	free := int(int32(n) - firstFree)
	k := min(o.SampleUsers, free)
	for i, left := firstFree, free; i < int32(n) && k > 0; i++ {
		if rng.IntN(left) < k {
			g.sample = append(g.sample, i)
			k--
		}
		left--
	}
	return g, nil
}

// zipfOffset returns v >= 1 such that rank 0 of a Zipf law P(k) ~ (v+k)^-s
// over n ranks has probability about p0, using the Euler-Maclaurin
// estimate of the normalizing sum.
func zipfOffset(s float64, n int, p0 float64) float64 {
	if n <= 1 || p0 <= 0 {
		return 1
	}
	nn := float64(n - 1)
	head := func(v float64) float64 {
		sum := (math.Pow(v, 1-s)-math.Pow(v+nn, 1-s))/(s-1) + (math.Pow(v, -s)+math.Pow(v+nn, -s))/2
		return math.Pow(v, -s) / sum
	}
	if head(1) <= p0 {
		return 1
	}
	// v up to 1e7: beyond it the law is uniform to within float64's
	// precision over any n bench draws from (and rand.Zipf's arithmetic
	// breaks down). A p0 below uniform's 1/n cannot be had: that cap.
	lo, hi := 0.0, math.Log(1e7) // log(v)
	if head(math.Exp(hi)) >= p0 {
		return math.Exp(hi)
	}
	for range 100 {
		mid := (lo + hi) / 2
		if head(math.Exp(mid)) > p0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp(hi)
}

func (g *Graph) rng(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(g.opts.Seed, stream*0x9e3779b97f4a7c15+1))
}

// Follows returns the exact number of edges the graph has.
func (g *Graph) Follows() int64 { return g.follows }

// Posts returns the exact number of posts.
func (g *Graph) Posts() int64 { return int64(g.opts.Users) * int64(g.opts.PostsPerUser) }

// eachEdgeBatch streams every edge, grouped by follower in ascending id
// order (the follows primary key's order), in batches of about size edges,
// and adds each edge to the follower's and followee's counts.
func (g *Graph) eachEdgeBatch(ctx context.Context, size int, in, out []int64, emit func([][2]int64) error) error {
	rng := g.rng(2)
	zipf := rand.NewZipf(rng, g.opts.ZipfS, g.zipfV, uint64(max(len(g.authors)-1, 0)))
	batch := make([][2]int64, 0, size+len(g.celebs))
	var picked []int32
	seen := map[int32]struct{}{}
	for u := int32(0); u < int32(len(g.ids)); u++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		picked = picked[:0]
		if d := int(g.outDeg[u]); d > 0 {
			picked = g.drawFollowees(rng, zipf, u, d, picked, seen)
		}
		for ci, c := range g.celebs {
			if g.celebFollows[ci].has(u) {
				picked = append(picked, c)
			}
		}
		slices.Sort(picked)
		for _, v := range picked {
			batch = append(batch, [2]int64{g.ids[u], g.ids[v]})
			in[v]++
		}
		out[u] += int64(len(picked))
		if len(batch) >= size {
			if err := emit(batch); err != nil {
				return err
			}
			batch = make([][2]int64, 0, size+len(g.celebs))
		}
	}
	if len(batch) > 0 {
		return emit(batch)
	}
	return nil
}

// drawFollowees appends d distinct ordinary authors other than u, drawn
// from the Zipf law; when the draws keep hitting authors already taken (a
// reader following a large share of them), it tops up from a random point
// of the ranking, so the count is always exact and the work bounded.
func (g *Graph) drawFollowees(rng *rand.Rand, zipf *rand.Zipf, u int32, d int, picked []int32, seen map[int32]struct{}) []int32 {
	clear(seen)
	base := len(picked)
	has := func(a int32) bool {
		if d <= 32 {
			return slices.Contains(picked[base:], a)
		}
		_, ok := seen[a]
		return ok
	}
	add := func(a int32) {
		picked = append(picked, a)
		if d > 32 {
			seen[a] = struct{}{}
		}
	}
	for tries := 0; len(picked)-base < d && tries < 4*d+64; tries++ {
		k := zipf.Uint64()
		if k >= uint64(len(g.authors)) {
			continue
		}
		a := g.authors[k]
		if a != u && !has(a) {
			add(a)
		}
	}
	if len(picked)-base < d {
		start := rng.IntN(len(g.authors))
		for i := 0; i < len(g.authors) && len(picked)-base < d; i++ {
			a := g.authors[(start+i)%len(g.authors)]
			if a != u && !has(a) {
				add(a)
			}
		}
	}
	return picked
}

// filler is cut into post contents.
const filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. "

// eachPostBatch streams PostsPerUser posts of every user in id order,
// spread evenly over PostSpan before now, with authors in random order.
func (g *Graph) eachPostBatch(ctx context.Context, size int, emit func([]feed.Post) error) error {
	total := g.Posts()
	if total == 0 {
		return nil
	}
	rng := g.rng(3)
	authors := make([]int32, 0, total)
	for i := range int32(len(g.ids)) {
		for range g.opts.PostsPerUser {
			authors = append(authors, i)
		}
	}
	rng.Shuffle(len(authors), func(i, j int) { authors[i], authors[j] = authors[j], authors[i] })
	start := g.now.Add(-g.opts.PostSpan)
	var clock time.Time
	gen := feed.NewIDGen(func() time.Time { return clock })
	body := []byte(nil)
	batch := make([]feed.Post, 0, size)
	for k, a := range authors {
		if k%size == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		clock = start.Add(time.Duration(float64(g.opts.PostSpan) * float64(k) / float64(total)))
		id := gen.Next()
		body = append(body[:0], "bench post "...)
		body = strconv.AppendInt(body, int64(k), 10)
		body = append(body, ": "...)
		for off := k % len(filler); len(body) < g.opts.PostBytes; off = 0 {
			body = append(body, filler[off:min(len(filler), off+g.opts.PostBytes-len(body))]...)
		}
		batch = append(batch, feed.Post{ID: id, AuthorID: g.ids[a], Content: string(body[:g.opts.PostBytes]), CreatedAt: feed.IDTime(id)})
		if len(batch) == size {
			if err := emit(batch); err != nil {
				return err
			}
			batch = make([]feed.Post, 0, size)
		}
	}
	if len(batch) > 0 {
		return emit(batch)
	}
	return nil
}

func (g *Graph) userName(i int32) string {
	if slices.Contains(g.celebs, i) {
		return "celebrity-" + strconv.Itoa(slices.Index(g.celebs, i))
	}
	if i == g.zero {
		return "zero-follower-author"
	}
	for _, c := range g.cohorts {
		if len(c.readers) > 0 && i >= c.readers[0] && i <= c.readers[len(c.readers)-1] {
			return fmt.Sprintf("reader-%d-%d", c.following, i-c.readers[0])
		}
	}
	return "user-" + strconv.Itoa(int(i))
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
				batch = append(batch, feed.User{ID: g.ids[i], Name: g.userName(int32(i)), FollowerCount: in[i], FollowingCount: out[i], CreatedAt: g.now})
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
	err = pump(ctx, workers, func(ctx context.Context, send func([]feed.Post) error) error {
		return g.eachPostBatch(ctx, 5_000, send)
	}, func(ctx context.Context, b []feed.Post) error {
		if err := l.LoadPosts(ctx, b); err != nil {
			return err
		}
		bar.Add(int64(len(b)))
		return nil
	})
	bar.Done()
	if err != nil {
		return nil, fmt.Errorf("bench graph: posts: %w", err)
	}
	m := g.manifest(in)
	m.Seconds = time.Since(begin).Seconds()
	return m, nil
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
