// Package pages composes the pages of posts a client reads: the posts the
// timeline (a home feed, an author's posts, one post) or the likes service
// (a user's likes, the top posts) chose, joined with each post's like count
// and whether the viewer likes it. It is the one place that join is made,
// so that the HTTP layer only parses, calls one method, and renders.
package pages

import (
	"context"
	"slices"

	"github.com/feedd/feedd/internal/feed"
)

// Timeline is what the pages need of the timeline service, and of the
// writes beside it (EditPost: social.Service), as the API passes them.
type Timeline interface {
	Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error)
	RankedFeed(ctx context.Context, reader, pos int64, n int) (feed.Page, error)
	ListFeed(ctx context.Context, reader, list, before int64, n int) (feed.Page, error)
	RankedListFeed(ctx context.Context, reader, list, pos int64, n int) (feed.Page, error)
	AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, bool, error)
	Post(ctx context.Context, id int64) (feed.Post, error)
	EditPost(ctx context.Context, actor, id int64, e feed.PostEdit) (feed.Post, error)
	Hidden(ctx context.Context, viewer int64) (feed.Hidden, error)
	// Replies and Thread are a post's replies (replies.Service).
	Replies(ctx context.Context, viewer, parent, after int64, n int) (feed.Page, error)
	Thread(ctx context.Context, viewer, id int64) (feed.Thread, error)
}

// Likes is what the pages need of the likes service.
type Likes interface {
	LikeStates(ctx context.Context, viewer int64, posts []feed.Post) (states map[int64]feed.LikeState, degraded bool, err error)
	UserLikes(ctx context.Context, viewer, user, before int64, n int) (feed.Page, error)
	TopPosts(ctx context.Context, viewer int64, window string, n int) ([]feed.Post, error)
}

// Page is a page of posts with their likes. States is nil while the
// likes service drops that enrichment (degradation switch L1): the posts
// then carry no likes at all rather than a misleading 0.
type Page struct {
	feed.Page
	States map[int64]feed.LikeState
}

// Service composes pages. Its zero services are never called before a
// request (the API's route table is built with nil services).
type Service struct {
	timeline Timeline
	likes    Likes
}

// New returns a Service over the timeline and the likes.
func New(tl Timeline, lk Likes) *Service { return &Service{timeline: tl, likes: lk} }

// Join gives pg's posts their likes as viewer (0: nobody) sees them. The
// cursor and the degraded mark stay pg's; likesDegraded says the likes were
// answered from the cache alone.
func Join(ctx context.Context, lk Likes, viewer int64, pg feed.Page) (page Page, likesDegraded bool, err error) {
	states, likesDegraded, err := lk.LikeStates(ctx, viewer, pg.Posts)
	if err != nil {
		return Page{}, false, err
	}
	return Page{Page: pg, States: states}, likesDegraded, nil
}

// Feed is reader's home feed page (timeline.Feed) with its likes. It is
// degraded when its posts or their likes came from the cache alone.
func (s *Service) Feed(ctx context.Context, reader, before int64, n int) (Page, error) {
	return s.feedPage(ctx, reader)(s.timeline.Feed(ctx, reader, before, n))
}

// RankedFeed is reader's ranked home feed page (package ranked) with its
// likes, degraded as Feed is.
func (s *Service) RankedFeed(ctx context.Context, reader, pos int64, n int) (Page, error) {
	return s.feedPage(ctx, reader)(s.timeline.RankedFeed(ctx, reader, pos, n))
}

// ListFeed is a page of reader's list with its likes.
func (s *Service) ListFeed(ctx context.Context, reader, list, before int64, n int) (Page, error) {
	return s.feedPage(ctx, reader)(s.timeline.ListFeed(ctx, reader, list, before, n))
}

// RankedListFeed is a page of reader's list, ranked, with its likes.
func (s *Service) RankedListFeed(ctx context.Context, reader, list, pos int64, n int) (Page, error) {
	return s.feedPage(ctx, reader)(s.timeline.RankedListFeed(ctx, reader, list, pos, n))
}

// feedPage returns the join of one of reader's feed pages with its likes,
// degraded when the page or its likes are.
func (s *Service) feedPage(ctx context.Context, reader int64) func(feed.Page, error) (Page, error) {
	return func(pg feed.Page, err error) (Page, error) {
		if err != nil {
			return Page{}, err
		}
		page, likesDegraded, err := Join(ctx, s.likes, reader, pg)
		page.Degraded = page.Degraded || likesDegraded
		return page, err
	}
}

// Post is one post with its likes; ENOTFOUND for a post unknown, deleted,
// or of a user a block stands between with viewer.
func (s *Service) Post(ctx context.Context, viewer, id int64) (Page, error) {
	p, err := s.timeline.Post(ctx, id)
	if err == nil && p.Deleted {
		err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	if err == nil && s.visible(ctx, viewer, p.AuthorID) != nil {
		err = feed.Errorf(feed.ENOTFOUND, "post %d does not exist", id)
	}
	if err != nil {
		return Page{}, err
	}
	return s.join(ctx, viewer, feed.Page{Posts: []feed.Post{p}})
}

// EditPost edits a post as actor (social.Service.EditPost) and returns it with
// its likes.
func (s *Service) EditPost(ctx context.Context, actor, id int64, e feed.PostEdit) (Page, error) {
	p, err := s.timeline.EditPost(ctx, actor, id, e)
	if err != nil {
		return Page{}, err
	}
	return s.join(ctx, actor, feed.Page{Posts: []feed.Post{p}})
}

// AuthorPosts is a page of author's posts with their likes; ENOTFOUND for
// an author unknown, or one a block stands between with viewer.
func (s *Service) AuthorPosts(ctx context.Context, viewer, author, before int64, n int) (Page, error) {
	if err := s.visible(ctx, viewer, author); err != nil {
		return Page{}, err
	}
	posts, more, err := s.timeline.AuthorPosts(ctx, author, before, n)
	if err != nil {
		return Page{}, err
	}
	if posts, err = s.withoutHiddenReposts(ctx, viewer, posts); err != nil {
		return Page{}, err
	}
	return s.join(ctx, viewer, feed.PageOf(posts, more))
}

// withoutHiddenReposts leaves out the reposts of posts whose originals'
// authors viewer mutes or a block stands between (feed.Hidden.HidesRepost):
// asked only of a page that holds a repost.
func (s *Service) withoutHiddenReposts(ctx context.Context, viewer int64, posts []feed.Post) ([]feed.Post, error) {
	if viewer == 0 || !slices.ContainsFunc(posts, feed.Post.IsRepost) {
		return posts, nil
	}
	hidden, err := s.timeline.Hidden(ctx, viewer)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(posts, hidden.HidesRepost), nil
}

// UserLikes is a page of the posts user likes (likes.UserLikes) with
// their likes; its Next is a like's version.
func (s *Service) UserLikes(ctx context.Context, viewer, user, before int64, n int) (Page, error) {
	pg, err := s.likes.UserLikes(ctx, viewer, user, before, n)
	if err != nil {
		return Page{}, err
	}
	return s.join(ctx, viewer, pg)
}

// TopPosts is the most liked posts of window (likes.TopPosts) with their
// likes, one page.
func (s *Service) TopPosts(ctx context.Context, viewer int64, window string, n int) (Page, error) {
	posts, err := s.likes.TopPosts(ctx, viewer, window, n)
	if err != nil {
		return Page{}, err
	}
	return s.join(ctx, viewer, feed.Page{Posts: posts})
}

// Replies is a page of a post's direct replies, oldest first, with their
// likes; its Next is the last reply's id.
func (s *Service) Replies(ctx context.Context, viewer, parent, after int64, n int) (Page, error) {
	pg, err := s.timeline.Replies(ctx, viewer, parent, after, n)
	if err != nil {
		return Page{}, err
	}
	return s.join(ctx, viewer, pg)
}

// Thread is a post's context with the likes of its posts, joined in one
// call: the ancestors' page and the descendants' page share its States.
func (s *Service) Thread(ctx context.Context, viewer, id int64) (ancestors, descendants Page, err error) {
	t, err := s.timeline.Thread(ctx, viewer, id)
	if err != nil {
		return Page{}, Page{}, err
	}
	all := append(append(make([]feed.Post, 0, len(t.Ancestors)+len(t.Descendants)), t.Ancestors...), t.Descendants...)
	joined, err := s.join(ctx, viewer, feed.Page{Posts: all})
	if err != nil {
		return Page{}, Page{}, err
	}
	return Page{Page: feed.Page{Posts: t.Ancestors}, States: joined.States},
		Page{Page: feed.Page{Posts: t.Descendants}, States: joined.States}, nil
}

func (s *Service) join(ctx context.Context, viewer int64, pg feed.Page) (Page, error) {
	page, _, err := Join(ctx, s.likes, viewer, pg)
	return page, err
}

// visible returns ENOTFOUND, as for a user who does not exist, when a
// block stands between viewer and user.
func (s *Service) visible(ctx context.Context, viewer, user int64) error {
	h, err := s.timeline.Hidden(ctx, viewer)
	if err != nil {
		return err
	}
	if h.Blocked(user) {
		return feed.Errorf(feed.ENOTFOUND, "user %d does not exist", user)
	}
	return nil
}
