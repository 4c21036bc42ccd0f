package importer

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/timeline"
)

// cacheCalls is how many cache calls run at once: each is a round trip,
// and a batch may drop thousands of inboxes.
const cacheCalls = 16

// cacheBatch is how many entries one pipelined cache call names, for the
// caches that take many in one round trip (rediscache's DropInboxes,
// DropUsersLikes and SettleLikes).
const cacheBatch = 1000

// inboxesDropper is a cache that drops many inboxes in one round trip
// and says which it could not; the others are called an inbox at a time.
type inboxesDropper interface {
	DropInboxes(ctx context.Context, readers []int64) (failed []int64, err error)
}

// likesDropper is a like cache that drops the sets of many users in one
// round trip.
type likesDropper interface {
	DropUsersLikes(ctx context.Context, users []int64) error
}

// each runs fn on every id, cacheCalls at a time, and counts failures:
// a cache entry that stays is stale until it expires, which the summary
// reports, but the SQL is done and the import goes on.
func (r *run) each(ctx context.Context, ids []int64, fn func(ctx context.Context, id int64) error) {
	if len(ids) == 0 {
		return
	}
	var wg sync.WaitGroup
	work := make(chan int64)
	for range min(cacheCalls, len(ids)) {
		wg.Go(func() {
			for id := range work {
				if err := fn(ctx, id); err != nil {
					if r.cacheErrs.Add(1) == 1 {
						r.opts.Logger.Warn("a cache entry could not be dropped; it stays stale until it expires", "err", err)
					}
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// eachChunk is each over chunks of up to cacheBatch ids, fn reporting
// how many of its chunk's entries failed.
func (r *run) eachChunk(ctx context.Context, ids []int64, fn func(ctx context.Context, chunk []int64) (int, error)) {
	chunks := slices.Collect(slices.Chunk(ids, cacheBatch))
	var wg sync.WaitGroup
	work := make(chan []int64)
	for range min(cacheCalls, len(chunks)) {
		wg.Go(func() {
			for chunk := range work {
				if n, err := fn(ctx, chunk); err != nil && n > 0 {
					if r.cacheErrs.Add(int64(n)) == int64(n) {
						r.opts.Logger.Warn("a cache entry could not be dropped; it stays stale until it expires", "err", err)
					}
				}
			}
		})
	}
	for _, chunk := range chunks {
		work <- chunk
	}
	close(work)
	wg.Wait()
}

// dropInboxes drops the inboxes of readers whose feeds changed, a
// pipeline of cacheBatch readers at a time where the cache has one. A
// reader whose inbox the cache would not drop is marked stale in SQL
// instead, and the serving processes reset its feed once the cache
// answers again (timeline's stale.go): reads renew an inbox's ttl, so
// waiting for it to expire could take for ever.
func (r *run) dropInboxes(ctx context.Context, readers []int64) {
	if r.caches.Inboxes != nil {
		r.dropFrom(ctx, r.caches.Inboxes, readers, r.store.MarkFeedStale)
	}
}

// dropFrom drops the inboxes of ids from inboxes, a pipeline of
// cacheBatch at a time where the cache has one, and calls failed (if not
// nil) with each id whose inbox stayed: an id it does not see to (nil, or
// an error) counts as a cache error.
func (r *run) dropFrom(ctx context.Context, inboxes feed.Inboxes, ids []int64, failed func(ctx context.Context, id int64) error) {
	left := func(ctx context.Context, id int64) bool { return failed == nil || failed(ctx, id) != nil }
	many, ok := inboxes.(inboxesDropper)
	if !ok {
		r.each(ctx, ids, func(ctx context.Context, id int64) error {
			if err := inboxes.DropInbox(ctx, id); err != nil && left(ctx, id) {
				return err
			}
			return nil
		})
		return
	}
	r.eachChunk(ctx, ids, func(ctx context.Context, chunk []int64) (int, error) {
		stayed, err := many.DropInboxes(ctx, chunk)
		n := 0
		for _, id := range stayed {
			if left(ctx, id) {
				n++
			}
		}
		return n, err
	})
}

// authorsPosted forgets what the authors' new posts changed: the feeds
// of their followers, and the author lists of those that are pulled,
// which hold their newest posts and say nothing of older ones.
func (r *run) authorsPosted(ctx context.Context, authors []int64) {
	if r.caches.AuthorLists != nil {
		r.dropFrom(ctx, r.caches.AuthorLists, authors, nil)
	}
	if r.caches.Inboxes == nil {
		return
	}
	// The followers as their rows stream in, dropped cacheBatch readers
	// at a time: memory stays bounded however many followers the
	// authors have, and a pipeline names many authors' followers (a
	// reader once, though it follows several of them).
	var readers []int64
	flush := func() {
		slices.Sort(readers)
		r.dropInboxes(ctx, slices.Compact(readers))
		readers = readers[:0]
	}
	err := r.store.EachFollower(ctx, authors, func(follower int64) {
		if readers = append(readers, follower); len(readers) >= cacheCalls*cacheBatch {
			flush()
		}
	})
	flush()
	if err != nil {
		r.cacheErrs.Add(1)
		r.opts.Logger.Warn("the followers of authors with imported posts could not be read; their inboxes stay stale until they expire", "authors", len(authors), "err", err)
	}
}

// likesChanged puts SQL's new tallies under the cached counters of the
// posts whose counts moved (a counter that is not cached is loaded from
// SQL when read) and
// drops the recent sets of the users who liked, which would otherwise
// answer "not liked" for the posts they now like.
func (r *run) likesChanged(ctx context.Context, res feed.LikeImport) {
	if r.caches.Likes == nil {
		return
	}
	// SettleLikes takes many posts in one call (rediscache: one
	// pipeline): cacheBatch a call.
	posts := slices.Sorted(maps.Keys(res.Tallies))
	r.eachChunk(ctx, posts, func(ctx context.Context, chunk []int64) (int, error) {
		tallies := make(map[int64]feed.LikeTally, len(chunk))
		for _, p := range chunk {
			tallies[p] = res.Tallies[p]
		}
		return len(chunk), r.caches.Likes.SettleLikes(ctx, tallies, nil, r.caches.LikeCountTTL)
	})
	if res.Liked == 0 {
		return
	}
	if many, ok := r.caches.Likes.(likesDropper); ok {
		r.eachChunk(ctx, res.Users, func(ctx context.Context, chunk []int64) (int, error) {
			return len(chunk), many.DropUsersLikes(ctx, chunk)
		})
		return
	}
	r.each(ctx, res.Users, func(ctx context.Context, user int64) error {
		return r.caches.Likes.DropLikes(ctx, user, 0)
	})
}

// newModesEpoch makes every reader's cached list of pulled followees
// stale.
func (r *run) newModesEpoch(ctx context.Context) {
	if r.caches.KV == nil {
		return
	}
	if _, err := timeline.NewModesEpoch(ctx, r.caches.KV, r.caches.InboxTTL); err != nil {
		r.cacheErrs.Add(1)
		r.opts.Logger.Warn("the delivery modes' epoch could not be renewed; readers' lists of pulled followees stay until they expire", "err", err)
	}
}
