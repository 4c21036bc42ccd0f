package graph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

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
		id := gen.NextOn(g.ids[a], g.opts.Shards)
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

// userHandle is the handle of a user named name ("reader-50-7" is
// @reader_50_7): names are unique, so are their handles.
func userHandle(name string) string { return strings.ReplaceAll(name, "-", "_") }

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
