package social

import (
	"context"
	"fmt"

	"github.com/feedd/feedd/internal/feed"
)

// PostStore is what posts.go needs of SQL.
type PostStore interface {
	CreatePost(ctx context.Context, p feed.Post, idem feed.Idempotency) (feed.Post, bool, error)
	EditPost(ctx context.Context, id, author int64, e feed.PostEdit) (feed.Post, error)
	DeletePost(ctx context.Context, id, author int64) error
}

// Publish stores a post and its outbox event in one SQL transaction and
// returns. Fan-out happens later, off the request path, so latency does not
// grow with the author's followers. A non-empty idem.Key makes it
// idempotent for Config.IdempotencyTTL (feed.Idempotency): a repeat of the
// same request returns the post the first call created.
//
// The caller has checked d with feed's rules (CheckContent, CheckData,
// which compacts the data, and CheckExternalID): the API does as it
// decodes a request, the one layer that checks them.
func (s *Service) Publish(ctx context.Context, author int64, d feed.Draft, idem feed.Idempotency) (feed.Post, error) {
	var err error
	if idem.Key != "" {
		idem.TTL = s.cfg.IdempotencyTTL
	}
	var (
		p       feed.Post
		created bool
	)
	for attempt := 0; attempt < 4; attempt++ {
		id := s.ids.NextOn(author, s.cfg.Shards)
		p, created, err = s.store.CreatePost(ctx, feed.Post{
			ID: id, AuthorID: author, Content: d.Content, Data: d.Data, CreatedAt: feed.IDTime(id),
			ExternalID: d.ExternalID, Weight: d.Weight, InReplyToID: d.InReplyToID,
		}, idem)
		// Another process drew the same id in the same millisecond: draw again.
		if feed.ErrorCode(err) != feed.ECONFLICT {
			break
		}
	}
	if err != nil {
		return feed.Post{}, fmt.Errorf("social: publish: %w", err)
	}
	if created {
		s.timeline.PostCreated(p)
		if p.IsReply() && s.replied != nil {
			s.replied(ctx, p.ID, p.InReplyToID)
		}
	}
	return p, nil
}

// WithReplyHook has the service call replied after a reply is created
// (id, its parent) or any post deleted (id, 0), once SQL committed it:
// the replies' counts kept in process (replies.Service.PostWritten).
func WithReplyHook(replied func(ctx context.Context, id, parent int64)) Option {
	return func(s *Service) { s.replied = replied }
}

// DeletePost soft-deletes a post of actor's; the read engine serves a
// tombstone from then on (timeline.Service.PostDeleted), and the streams
// that sent the post send its delete.
func (s *Service) DeletePost(ctx context.Context, actor, id int64) error {
	if err := s.store.DeletePost(ctx, id, actor); err != nil {
		return err
	}
	s.timeline.PostDeleted(ctx, actor, id)
	if s.replied != nil {
		s.replied(ctx, id, 0)
	}
	s.announce(ctx, "delete", func(ctx context.Context, a feed.Announcer) error { return a.PostDeleted(ctx, actor, id) })
	return nil
}

// EditPost applies e to a post of actor's and returns the post as edited.
// Its id, and so its place in every feed, does not change. The edit is
// committed to SQL first, then the read engine's copies are replaced
// (timeline.Service.PostEdited says how every process shows it), then
// the streams that sent the post send it again (event: update).
//
// The caller has checked e as Publish's caller checks a draft, and with
// feed.PostEdit.Check.
func (s *Service) EditPost(ctx context.Context, actor, id int64, e feed.PostEdit) (feed.Post, error) {
	// A repost has no content or data of its own (docs/reposts.md): one
	// read more, for an edit, a rare write.
	if p, err := s.store.Post(ctx, id); err == nil && p.IsRepost() && !p.Deleted && p.AuthorID == actor {
		return feed.Post{}, feed.Errorf(feed.EINVALID, "post %d is a repost, which has nothing to edit", id)
	}
	p, err := s.store.EditPost(ctx, id, actor, e)
	if err != nil {
		return feed.Post{}, fmt.Errorf("social: edit post %d: %w", id, err)
	}
	s.timeline.PostEdited(ctx, p)
	s.announce(ctx, "edit", func(ctx context.Context, a feed.Announcer) error { return a.PostEdited(ctx, actor, id, p.Version()) })
	return p, nil
}
