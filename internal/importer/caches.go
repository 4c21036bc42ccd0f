package importer

import (
	"context"
	"sync"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/timeline"
)

// cacheCalls is how many cache calls run at once: each is a round trip,
// and a batch may drop thousands of inboxes.
const cacheCalls = 16

// followersPage is how many followers of an author one read returns.
const followersPage = 1000

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

// dropInboxes drops the inboxes of readers whose feeds changed. A reader
// whose inbox the cache would not drop is marked stale in SQL instead, and
// the serving processes reset its feed once the cache answers again
// (timeline's stale.go): reads renew an inbox's ttl, so waiting for it to
// expire could take for ever.
func (r *run) dropInboxes(ctx context.Context, readers []int64) {
	if r.caches.Inboxes == nil {
		return
	}
	r.each(ctx, readers, func(ctx context.Context, reader int64) error {
		err := r.caches.Inboxes.DropInbox(ctx, reader)
		if err != nil && r.store.MarkFeedStale(ctx, reader) == nil {
			return nil
		}
		return err
	})
}

// authorsPosted forgets what the authors' new posts changed: the feeds
// of their followers, and the author lists of those that are pulled,
// which hold their newest posts and say nothing of older ones.
func (r *run) authorsPosted(ctx context.Context, authors []int64) {
	if r.caches.AuthorLists != nil {
		r.each(ctx, authors, r.caches.AuthorLists.DropInbox)
	}
	if r.caches.Inboxes == nil {
		return
	}
	// One author at a time, a page of followers at a time: memory stays
	// bounded however many followers an author has.
	for _, a := range authors {
		for after := int64(0); ; {
			page, err := r.store.Followers(ctx, a, after, followersPage)
			if err != nil {
				r.cacheErrs.Add(1)
				r.opts.Logger.Warn("the followers of an author with imported posts could not be read; their inboxes stay stale until they expire", "author", a, "err", err)
				break
			}
			r.dropInboxes(ctx, page)
			if len(page) < followersPage {
				break
			}
			after = page[len(page)-1]
		}
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
	posts := make([]int64, 0, len(res.Tallies))
	for p := range res.Tallies {
		posts = append(posts, p)
	}
	r.each(ctx, posts, func(ctx context.Context, post int64) error {
		return r.caches.Likes.SettleLikes(ctx, map[int64]feed.LikeTally{post: res.Tallies[post]}, nil, r.caches.LikeCountTTL)
	})
	if res.Liked > 0 {
		r.each(ctx, res.Users, func(ctx context.Context, user int64) error {
			return r.caches.Likes.DropLikes(ctx, user, 0)
		})
	}
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
