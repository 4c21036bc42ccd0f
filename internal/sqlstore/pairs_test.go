package sqlstore

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

// pairChunks keeps every pair once, in key order, and no chunk names
// more than pairTerms first ids or pairMax pairs: a follower's many edges
// share a chunk, many followers' single edges are spread over several.
func TestPairChunks(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var pairs []feed.Edge
	for range 5000 { // many followers with one edge or a few
		pairs = append(pairs, feed.Edge{Follower: rnd.Int64N(3000), Followee: rnd.Int64N(100)})
	}
	for b := range int64(2500) { // one follower with many
		pairs = append(pairs, feed.Edge{Follower: 7, Followee: 1000 + b}, feed.Edge{Follower: 7, Followee: 1000 + b})
	}
	var got []feed.Edge
	for _, c := range pairChunks(pairs) {
		firsts := map[int64]bool{}
		for _, e := range c {
			firsts[e.Follower] = true
		}
		if len(c) == 0 || len(c) > pairMax || len(firsts) > pairTerms {
			t.Fatalf("a chunk of %d pairs with %d first ids; want 1 to %d pairs and at most %d first ids", len(c), len(firsts), pairMax, pairTerms)
		}
		got = append(got, c...)
	}
	want := slices.SortedFunc(slices.Values(pairs), func(x, y feed.Edge) int {
		return cmp.Or(cmp.Compare(x.Follower, y.Follower), cmp.Compare(x.Followee, y.Followee))
	})
	if want = slices.Compact(want); !slices.Equal(got, want) {
		t.Fatalf("the chunks hold %d pairs; want the %d distinct pairs in key order", len(got), len(want))
	}
	if n := len(pairChunks(pairs)); n > len(want)/pairTerms+len(want)/pairMax+2 {
		t.Errorf("%d chunks for %d pairs", n, len(want))
	}
}

// syncChunks keeps every journal row once within the same bounds, and
// syncsWhere names each kind and first user once, with as many
// arguments as its terms need.
func TestSyncChunks(t *testing.T) {
	var syncs []Sync
	for a := range int64(120) {
		for b := range a%30 + 1 {
			syncs = append(syncs, Sync{Kind: SyncFollow, A: a, B: b, Due: 5}, Sync{Kind: SyncLike, A: a, B: b, Due: 5})
		}
	}
	total := 0
	for _, c := range syncChunks(syncs) {
		if len(c) > pairMax {
			t.Fatalf("a chunk of %d journal rows; want at most %d", len(c), pairMax)
		}
		total += len(c)
		where, args := syncsWhere(c, true)
		terms := strings.Count(where, " OR ") + 1
		if terms > pairTerms {
			t.Fatalf("a chunk's where has %d terms; want at most %d", terms, pairTerms)
		}
		if want := 3*terms + len(c); len(args) != want || strings.Count(where, "?") != want {
			t.Fatalf("%d terms over %d rows: %d arguments, %d placeholders; want %d", terms, len(c), len(args), strings.Count(where, "?"), want)
		}
	}
	if total != len(syncs) {
		t.Fatalf("the chunks hold %d rows; want %d", total, len(syncs))
	}
}
