// Package graph is the data feedd bench measures with: a synthetic social
// graph planned from a seed (celebrities with an exact follower count, an
// author nobody follows, cohorts of readers who follow a fixed number of
// accounts, and ordinary users whose followees are drawn from a Zipf law),
// loaded in bulk into the SQL store, and described by the Manifest that
// bench run reads to know whom to read and publish as.
//
// graph.go plans the shape; draw.go draws the edges, posts and names from
// it; load.go writes them through a Loader (sql.go: the SQL store's bulk
// API; jsonl.go: feedd import's files) and returns the manifest.
package graph

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/feedd/feedd/internal/feed"
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
	// Shards is the number of logical shards of the store the graph goes
	// into (FEEDD_SHARDS; 0 or 1: one database): a post's id carries its
	// author's shard (feed.IDGen.NextOn), as a published one's does.
	Shards int `json:"shards,omitempty"`
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
