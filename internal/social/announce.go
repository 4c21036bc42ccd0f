package social

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/feedd/feedd/internal/feed"
)

const (
	// announceTimeout bounds telling the live streams of a change that
	// is already committed: its caller waits for it.
	announceTimeout = 2 * time.Second
	// announceWorkers bounds the announcements a follow batch sends at
	// once, so that a batch of 1,000 readers is not 1,000 round trips end
	// to end.
	announceWorkers = 8
)

// WithAnnouncer makes the service tell the live streams of every process
// of each change it commits (nil: none): an edit or a delete of a post,
// and a change of whom a reader follows, mutes or blocks. (A new post
// reaches them with its fan-out.)
func WithAnnouncer(a feed.Announcer) Option { return func(s *Service) { s.announcer = a } }

// announce tells the live streams of a change already committed, within
// announceTimeout, even if ctx (the request) ends meanwhile. A failure is
// logged and the change stands: open streams learn of it late (a
// reconnect reads the feed afresh).
func (s *Service) announce(ctx context.Context, what string, tell func(ctx context.Context, a feed.Announcer) error) {
	if s.announcer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	if err := tell(ctx, s.announcer); err != nil {
		s.logger.WarnContext(ctx, "could not announce a change to the live streams; they learn of it on reconnect", "change", what, "err", err)
	}
}

// tokensEnded tells the streams of user that its tokens no longer stand,
// so that they end within moments rather than at their next heartbeat.
func (s *Service) tokensEnded(ctx context.Context, what string, user int64) {
	s.announce(ctx, what, func(ctx context.Context, a feed.Announcer) error { return a.TokensChanged(ctx, user) })
}

// followsChanged tells the streams of readers to read whom they follow,
// mute and block again, a few readers at once.
func (s *Service) followsChanged(ctx context.Context, what string, readers ...int64) {
	s.announce(ctx, what, func(ctx context.Context, a feed.Announcer) error {
		var g errgroup.Group
		g.SetLimit(announceWorkers)
		for _, r := range readers {
			g.Go(func() error { return a.FollowsChanged(ctx, r) })
		}
		return g.Wait()
	})
}
