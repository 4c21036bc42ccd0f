package stream

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
)

// renderTimeout bounds one post's rendering for all its streams.
const renderTimeout = 10 * time.Second

// hiddenLoads is how many of a post's readers' hidden authors are read at
// once when their streams hold none fresh (rare: streams read them when
// they open and at their heartbeats).
const hiddenLoads = 8

// sendShared sends the post of ev (a Post or an Update) as s's reader's
// feed page shows it; a post deleted meanwhile, or by an author the
// reader's feed hides (muted, blocked either way), is skipped, as the
// feed skips it. The post is rendered once for all the process's streams
// that take it (renderShared, within a slot of renders); this stream only
// picks its bytes and writes them to its client, all within a slot of
// writes (writesPerCPU says why), not of renders: a slow client holds up
// no rendering.
func sendShared(ctx context.Context, tl Timeline, lk Likes, s *Stream, ev Event, sse *sseWriter, renders, writes chan struct{}) error {
	if ev.Shared == nil { // an event not from the hub: this stream's alone
		ev.Shared = NewShared([]*Stream{s})
	}
	// The slot first, then the rendering: the streams waiting for a post's
	// rendering are then at most the slots, and the others wait their turn
	// for a slot, woken one at a time as slots free. Waiting for the
	// rendering first, all 10,000 streams of a celebrity's post were woken
	// at once when it was done.
	select {
	case writes <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	defer func() { <-writes }()
	v, err := ev.Shared.Do(ctx, func() (any, error) {
		// The stream that renders may close meanwhile: the others wait
		// for this rendering, so it runs to its end on its own clock.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), renderTimeout)
		defer cancel()
		select {
		case renders <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("stream: wait to render post %d: %w", ev.ID, ctx.Err())
		}
		defer func() { <-renders }()
		return renderShared(ctx, tl, lk, ev)
	})
	if ctx.Err() != nil {
		return nil // the client is gone: Next ends the stream
	}
	if err != nil {
		return err
	}
	b, err := v.(*sharedPost).bytesFor(s)
	if b == nil || err != nil {
		return err
	}
	if ev.Kind == Post && !s.idLine(ev.ID) {
		b = withoutID(b)
	}
	return sse.send(b)
}

// withoutID returns a post event without its id: line, in a new slice
// (the rendering is shared by many streams).
func withoutID(b []byte) []byte {
	const head = "event: post\n"
	rest, ok := bytes.CutPrefix(b, []byte(head+"id: "))
	if !ok {
		return b
	}
	_, rest, _ = bytes.Cut(rest, []byte("\n"))
	return append([]byte(head), rest...)
}

// loadHidden reads s's reader's hidden authors into s.
func loadHidden(ctx context.Context, tl Timeline, s *Stream) error {
	_, _, gen := s.Hidden(time.Now())
	at := time.Now()
	h, err := tl.Hidden(ctx, s.Reader())
	if err != nil {
		return fmt.Errorf("stream: hidden authors of %d: %w", s.Reader(), err)
	}
	s.SetHidden(h, at, gen)
	return nil
}

// sharedPost is a post rendered for all the streams that take it: at most
// two events, the one with liked_by_me true and the one with false, and
// which stream gets which; and the author's own, which shows the post's
// weight, as the author's feed page does.
type sharedPost struct {
	plain, liked []byte // nil plain: the post is gone, no one gets it
	own          []byte // for the author's streams; nil when none takes it
	author       int64
	hidden       map[*Stream]bool
	likers       map[int64]bool
	// failed holds the streams whose reader's hidden authors could not
	// be read: they alone end (and resume), the others get the post.
	failed map[*Stream]error
}

// bytesFor is the event s sends: nil when it sends none.
func (p *sharedPost) bytesFor(s *Stream) ([]byte, error) {
	if err := p.failed[s]; err != nil {
		return nil, err
	}
	switch {
	case p.plain == nil || p.hidden[s]:
		return nil, nil
	case s.Reader() == p.author && p.own != nil:
		return p.own, nil
	case p.likers[s.Reader()]:
		return p.liked, nil
	}
	return p.plain, nil
}

// renderShared reads the post of ev once and renders it for every stream
// of ev.Shared, exactly as each reader's feed page shows it: the post
// (at least at the edit's version for an update: this process's copy may
// predate an edit made on another), each reader's hidden authors from its
// stream, and the like count and each reader's liked_by_me in one bulk
// call of the likes service.
func renderShared(ctx context.Context, tl Timeline, lk Likes, ev Event) (*sharedPost, error) {
	var p feed.Post
	var err error
	if ev.Kind == Update {
		p, err = tl.PostVersion(ctx, ev.ID, ev.Version)
	} else {
		p, err = tl.Post(ctx, ev.ID)
	}
	out := &sharedPost{hidden: map[*Stream]bool{}}
	if feed.ErrorCode(err) == feed.ENOTFOUND || err == nil && p.Deleted {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	streams := ev.Shared.Streams()
	out.failed = freshHidden(ctx, tl, streams)
	now := time.Now()
	readers := make([]int64, 0, len(streams))
	seen := make(map[int64]bool, len(streams))
	for _, s := range streams {
		if out.failed[s] != nil {
			continue
		}
		if h, _, _ := s.Hidden(now); !s.Shows(h, p) {
			out.hidden[s] = true
			continue
		}
		// A list's rule for replies, as its pages apply it (a failed
		// read of it leaves the reply out: the list's pages have it).
		if s.List() != 0 && p.IsReply() {
			if ok, err := tl.ListShows(ctx, s.Reader(), s.List(), p); err != nil || !ok {
				out.hidden[s] = true
				continue
			}
		}
		if !seen[s.Reader()] {
			seen[s.Reader()] = true
			readers = append(readers, s.Reader())
		}
	}
	if len(readers) == 0 {
		return out, nil
	}
	states, err := likedBy(ctx, lk, p, readers)
	if err != nil {
		return nil, err
	}
	out.likers = map[int64]bool{}
	var anyLiked bool
	if states != nil {
		for r, on := range states.liked {
			out.likers[r] = on
			anyLiked = anyLiked || on
		}
	}
	render := func(likedByMe, own bool) []byte {
		var st map[int64]feed.LikeState
		if states != nil {
			st = map[int64]feed.LikeState{p.ID: {Count: states.count, LikedByMe: likedByMe, Replies: states.replies, Reposts: states.reposts}}
			if states.original != nil {
				st[p.RepostOf.ID] = *states.original
			}
		}
		page := apijson.NewPostsPage([]feed.Post{p}, false, st)
		if len(page.Items) == 0 {
			return nil
		}
		it := page.Items[0]
		if own {
			it = it.WithWeight(p)
		}
		var b []byte
		if ev.Kind == Update {
			// No id: line on an update: the post is older than the last
			// one sent, and an id: line would move the client's
			// Last-Event-ID back to it, so a resume would send again
			// every post sent since.
			b = append(b, "event: update"...)
		} else {
			b = append(append(b, "event: post\nid: "...), it.ID...)
		}
		b = append(b, "\ndata: "...)
		b = it.AppendJSON(b)
		return append(b, "\n\n"...)
	}
	out.plain = render(false, false)
	if anyLiked {
		out.liked = render(true, false)
	}
	if seen[p.AuthorID] {
		out.author, out.own = p.AuthorID, render(out.likers[p.AuthorID], true)
	}
	return out, nil
}

// freshHidden reads the hidden authors of the streams that hold none
// fresh, hiddenLoads at a time, and returns the streams it could not read
// them for.
func freshHidden(ctx context.Context, tl Timeline, streams []*Stream) map[*Stream]error {
	now := time.Now()
	var stale []*Stream
	for _, s := range streams {
		if _, fresh, _ := s.Hidden(now); !fresh {
			stale = append(stale, s)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	type result struct {
		s   *Stream
		err error
	}
	results := make(chan result, len(stale))
	sem := make(chan struct{}, hiddenLoads)
	for _, s := range stale {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			results <- result{s, loadHidden(ctx, tl, s)}
		}()
	}
	var failed map[*Stream]error
	for range stale {
		if r := <-results; r.err != nil {
			if failed == nil {
				failed = map[*Stream]error{}
			}
			failed[r.s] = r.err
		}
	}
	return failed
}

// bulkLikes is the likes service's answer for many readers of one post
// at once (likes.Service has it).
type bulkLikes interface {
	LikedBy(ctx context.Context, p feed.Post, readers []int64) (count int64, liked map[int64]bool, enriched bool, err error)
}

type readersLikes struct {
	count   int64
	liked   map[int64]bool
	replies int64
	reposts int64
	// original is a repost's original's state, the same for every reader
	// (its likes and counts; the readers' own states are not read).
	original *feed.LikeState
}

// replyCounter is the likes service's reply and repost counts
// (likes.Service has it): a post sent again as edited shows its replies.
type replyCounter interface {
	Counts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error)
}

// likedBy returns p's like count and which of readers like it; nil while
// the likes service drops that enrichment (degradation switch L1). A
// likes service without the bulk call is asked reader by reader.
func likedBy(ctx context.Context, lk Likes, p feed.Post, readers []int64) (*readersLikes, error) {
	if bl, ok := lk.(bulkLikes); ok {
		count, liked, enriched, err := bl.LikedBy(ctx, p, readers)
		if err != nil || !enriched {
			return nil, err
		}
		out := &readersLikes{count: count, liked: liked}
		if rc, ok := lk.(replyCounter); ok {
			// A new post has none; an edited one may.
			counts, err := rc.Counts(ctx, []int64{p.ID})
			if err != nil {
				return nil, err
			}
			out.replies, out.reposts = counts[p.ID].Replies, counts[p.ID].Reposts
		}
		return out, originalState(ctx, lk, p, out)
	}
	out := &readersLikes{liked: map[int64]bool{}}
	for _, r := range readers {
		st, _, err := lk.LikeStates(ctx, r, []feed.Post{p})
		if err != nil {
			return nil, err
		}
		if st == nil {
			return nil, nil
		}
		out.count, out.replies, out.reposts = st[p.ID].Count, st[p.ID].Replies, st[p.ID].Reposts
		out.liked[r] = st[p.ID].LikedByMe
	}
	return out, originalState(ctx, lk, p, out)
}

// originalState reads the state of repost p's original into out: its
// counts, as no reader's (a repost in a stream shows its original's
// counts; liked_by_me and reposted_by_me of the original are false
// there, and right on the next page read).
func originalState(ctx context.Context, lk Likes, p feed.Post, out *readersLikes) error {
	if p.RepostOf == nil {
		return nil
	}
	st, _, err := lk.LikeStates(ctx, 0, []feed.Post{*p.RepostOf})
	if err != nil || st == nil {
		return err
	}
	o := st[p.RepostOf.ID]
	out.original = &o
	return nil
}
