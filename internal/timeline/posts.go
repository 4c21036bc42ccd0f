package timeline

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// Publish stores a post and its outbox event in one SQL transaction and
// returns. Fan-out happens later, off the request path, so latency does not
// grow with the author's followers. A non-empty idem.Key makes it
// idempotent for Config.IdempotencyTTL (feed.Idempotency): a repeat of the
// same request returns the post the first call created.
func (s *Service) Publish(ctx context.Context, author int64, content string, idem feed.Idempotency) (feed.Post, error) {
	if err := feed.CheckContent(content); err != nil {
		return feed.Post{}, err
	}
	if idem.Key != "" {
		idem.TTL = s.cfg.IdempotencyTTL
	}
	var (
		p       feed.Post
		created bool
		err     error
	)
	for attempt := 0; attempt < 4; attempt++ {
		id := s.ids.Next()
		p, created, err = s.store.CreatePost(ctx, feed.Post{
			ID: id, AuthorID: author, Content: content, CreatedAt: feed.IDTime(id),
		}, idem)
		// Another process drew the same id in the same millisecond: draw again.
		if feed.ErrorCode(err) != feed.ECONFLICT {
			break
		}
	}
	if err != nil {
		return feed.Post{}, fmt.Errorf("timeline: publish: %w", err)
	}
	if created {
		// Nothing is written to the shared cache here: while a big fan-out
		// runs, Redis works through the workers' pipelines, and one SET
		// queued behind them cost publish tens of milliseconds (bench:
		// p50 30 ms with it, 5 ms without, next to a 100,000-follower
		// fan-out). The first reader's miss caches the post, one SQL query
		// per post and process (misses collapse).
		s.hot.Put(p.ID, p)
		s.published()
	}
	return p, nil
}

// Post returns a live post; deleted and unknown posts are ENOTFOUND.
func (s *Service) Post(ctx context.Context, id int64) (feed.Post, error) {
	posts, _, err := s.hydrate(ctx, []int64{id}, withSQL)
	if err != nil {
		return feed.Post{}, err
	}
	if len(posts) == 0 {
		return feed.Post{}, feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	return posts[0], nil
}

// DeletePost soft-deletes a post of actor's. Inboxes are not touched here:
// a read that meets the post skips it and removes it from that inbox (lazy
// delete), so a delete costs the same for an author with 10 followers or
// 10 million.
func (s *Service) DeletePost(ctx context.Context, actor, id int64) error {
	if err := s.store.DeletePost(ctx, id, actor); err != nil {
		return err
	}
	// A tombstone, so cached copies stop being served at once.
	tomb := feed.Post{ID: id, AuthorID: actor, Deleted: true, CreatedAt: feed.IDTime(id)}
	s.hot.Put(id, tomb)
	if err := s.cache.CachePosts(ctx, []feed.Post{tomb}, s.cfg.PostTTL); err != nil {
		s.cacheFailed("cache tombstone", err)
	}
	return nil
}

// AuthorPosts lists an author's live posts below before, newest first.
func (s *Service) AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, bool, error) {
	if _, err := s.store.User(ctx, author); err != nil {
		return nil, false, err
	}
	posts, err := s.store.AuthorPosts(ctx, author, before, n+1)
	if err != nil {
		return nil, false, err
	}
	if len(posts) > n {
		return posts[:n], true, nil
	}
	return posts, false, nil
}

// LivePosts returns the live posts among ids, in the order of ids, from
// the post cache and one SQL query for the misses: for other services
// (likes) that show posts.
func (s *Service) LivePosts(ctx context.Context, ids []int64) ([]feed.Post, error) {
	live, _, err := s.hydrate(ctx, ids, withSQL)
	return live, err
}
