package feedtest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

func cacheRandomOps(t *testing.T, newCache newCacheFunc) {
	// Pushes in any order, adds, removes, fills and drops on a few
	// inboxes, checked after every step against the contract written
	// as the plainest code (model): whatever layout an implementation
	// keeps — a ring that wraps and grows, buckets — must not show.
	// Several maxima so that a full inbox, one that is still growing
	// and one of a single id are all covered.
	for _, inboxMax := range []int{1, 5, 40, 150} {
		t.Run(fmt.Sprintf("max=%d", inboxMax), func(t *testing.T) {
			randomOps(t, newCache(t, inboxMax), inboxMax, 400, 100)
		})
	}
	// Around 0: the negative ids of posts from before 2025 and the
	// first ids after, in one inbox.
	t.Run("max=40 history", func(t *testing.T) {
		randomOps(t, newCache(t, 40), 40, 400, -65)
	})
}

// model is an inbox as the contract describes it: ids ascending.
type model struct {
	ids      []int64
	complete bool
}

func (m *model) insert(ids []int64, inboxMax int) {
	for _, id := range ids {
		if i, found := slices.BinarySearch(m.ids, id); !found {
			m.ids = slices.Insert(m.ids, i, id)
		}
	}
	if over := len(m.ids) - inboxMax; over > 0 {
		m.ids = slices.Delete(m.ids, 0, over)
		m.complete = false
	}
}

// page is the model's InboxPage.
func (m *model) page(before int64, n int) feed.InboxPage {
	if m == nil {
		return feed.InboxPage{}
	}
	p := feed.InboxPage{Exists: true, Complete: m.complete}
	for _, id := range slices.Backward(m.ids) {
		if len(p.IDs) == n {
			break
		}
		if before == 0 || id < before {
			p.IDs = append(p.IDs, id)
		}
	}
	return p
}

// randomOps runs steps random operations on c and on a model of each
// inbox, checking the whole of every inbox after each step, a random page
// and the bounds.
func randomOps(t *testing.T, c feed.Cache, inboxMax, steps int, lo int64) {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(uint64(inboxMax), uint64(7+lo)))
	// id is the id at offset x from lo; 0 is no id, so it takes 1's place
	// (1 is then twice as likely: a repeat, which is fine).
	id := func(x int64) int64 {
		if lo+x == 0 {
			return 1
		}
		return lo + x
	}
	readers := []int64{1, 2, 3}
	models := map[int64]*model{}
	// Ids from a range three times the inbox, so that duplicates, late
	// ids and ids older than a full inbox are all common.
	span := int64(3*inboxMax + 10)
	randomIDs := func(max int) []int64 {
		ids := make([]int64, rng.IntN(max+1))
		for i := range ids {
			ids[i] = id(rng.Int64N(span))
		}
		return ids
	}
	var log []string // the steps so far, for a failure
	for step := range steps {
		r := readers[rng.IntN(len(readers))]
		m := models[r]
		var op string
		switch x := rng.IntN(100); {
		case x < 55:
			// Mostly the next new id, as a fan-out delivers them; else a
			// late or repeated one.
			next := id(rng.Int64N(span))
			if m != nil && len(m.ids) > 0 && x < 35 {
				next = min(m.ids[len(m.ids)-1]+1+rng.Int64N(3), lo+span+int64(step))
				if next == 0 {
					next = 1
				}
			}
			op = fmt.Sprintf("push(%v, %d)", readers, next)
			must(t, c.PushToInboxes(ctx, readers, next))
			for _, mm := range models {
				mm.insert([]int64{next}, inboxMax)
			}
		case x < 65:
			ids, mark := randomIDs(2*inboxMax), rng.IntN(4) == 0
			op = fmt.Sprintf("add(%d, %v, %v)", r, ids, mark)
			must(t, c.AddToInbox(ctx, r, ids, mark))
			if m != nil {
				m.insert(ids, inboxMax)
				m.complete = m.complete && !mark
			}
		case x < 80:
			// A few ids, as a lazy delete removes, or many, as an
			// unfollow does; some of them in the inbox.
			ids := randomIDs(4)
			if rng.IntN(4) == 0 {
				ids = randomIDs(2 * inboxMax)
			}
			for range 1 + len(ids)/2 {
				if m != nil && len(m.ids) > 0 {
					ids = append(ids, m.ids[rng.IntN(len(m.ids))])
				}
			}
			op = fmt.Sprintf("remove(%d, %v)", r, ids)
			must(t, c.RemoveFromInbox(ctx, r, ids))
			if m != nil {
				m.ids = slices.DeleteFunc(m.ids, func(id int64) bool { return slices.Contains(ids, id) })
			}
		case x < 96:
			ids, complete := randomIDs(inboxMax+inboxMax/2+2), rng.IntN(2) == 0
			op = fmt.Sprintf("fill(%d, %v, %v)", r, ids, complete)
			must(t, c.FillInbox(ctx, r, ids, complete, longTTL))
			m = &model{complete: complete}
			m.insert(ids, inboxMax)
			models[r] = m
		default:
			op = fmt.Sprintf("drop(%d)", r)
			must(t, c.DropInbox(ctx, r))
			delete(models, r)
		}
		log = append(log, op)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("after step %d, %s: %s\nsteps:\n  %s", step, op, fmt.Sprintf(format, args...),
				strings.Join(log[max(0, len(log)-20):], "\n  "))
		}
		for _, r := range readers {
			m := models[r]
			if got, err := c.InboxPage(ctx, r, 0, 10_000); err != nil {
				fail("InboxPage(%d): %v", r, err)
			} else if want := m.page(0, 10_000); !samePage(got, want) {
				fail("inbox %d = %s; want %s", r, fmtPage(got), fmtPage(want))
			}
			before, n := lo+rng.Int64N(span+int64(step)+1), rng.IntN(6) // 0 among them: from the newest
			if m != nil && len(m.ids) > 0 && rng.IntN(2) == 0 {
				before = m.ids[rng.IntN(len(m.ids))] // a cursor the reader saw
			}
			if got, err := c.InboxPage(ctx, r, before, n); err != nil {
				fail("InboxPage(%d, %d, %d): %v", r, before, n, err)
			} else if want := m.page(before, n); !samePage(got, want) {
				fail("InboxPage(%d, %d, %d) = %s; want %s", r, before, n, fmtPage(got), fmtPage(want))
			}
			newest, oldest, exists, err := c.InboxBounds(ctx, r)
			var wantNewest, wantOldest int64
			if m != nil && len(m.ids) > 0 {
				wantNewest, wantOldest = m.ids[len(m.ids)-1], m.ids[0]
			}
			if err != nil || newest != wantNewest || oldest != wantOldest || exists != (m != nil) {
				fail("InboxBounds(%d) = %d, %d, %v, %v; want %d, %d, %v",
					r, newest, oldest, exists, err, wantNewest, wantOldest, m != nil)
			}
		}
	}
}
