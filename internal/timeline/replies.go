package timeline

import (
	"context"
	"fmt"
	"slices"

	"github.com/feedd/feedd/internal/feed"
)

// The home feed's rule for replies (feed.HomeReplies): a reply of someone
// the reader follows shows when it answers the reader, its own author, or
// someone else the reader follows. The rule is applied where the page is
// read, not at fan-out, so that a reader's change of rule applies to the
// whole feed at once and the inbox stays one list of ids; replies left out
// stay in the inbox (a later rule may show them) and cost only read-ahead.
//
// Only the third case needs a lookup: whom the reader follows among the
// users the page's replies answer, asked once per page round in one SQL
// statement (FollowingAmong) for the users the process does not hold an
// answer for. Answers are held for HiddenTTL, as the hidden set is, and
// not trusted by a reader who wrote within it (a follow included).

// followAnswers bounds the reader–user answers a process keeps.
const followAnswers = 200_000

// followPair is a reader and a user a reply of its feed answers.
type followPair struct{ reader, user int64 }

// homeKeep returns the filter of reader's home pages: the hidden authors'
// posts out (unhidden), then the replies the reader's rule leaves out.
func (s *Service) homeKeep(ctx context.Context, reader int64, in *inboxSource, hidden feed.Hidden) func([]feed.Post) ([]feed.Post, error) {
	return func(live []feed.Post) ([]feed.Post, error) {
		return s.replyRule(ctx, reader, hidden.Replies(), repostRule(reader, hidden, s.unhidden(ctx, in, hidden, live)), true)
	}
}

// replyRule returns live without the replies rule leaves out of reader's
// feed (its home feed's rule, or a list's). Without SQL (withSQL false: a degraded page) a reply whose
// answer the process does not hold is left out: a degraded page may miss
// posts, it never shows one the rule hides.
func (s *Service) replyRule(ctx context.Context, reader int64, rule feed.ReplyRule, live []feed.Post, withSQL bool) ([]feed.Post, error) {
	// Most pages hold no reply: they cost one pass and no allocation.
	if !slices.ContainsFunc(live, feed.Post.IsReply) {
		return live, nil
	}
	var ask []int64
	known := map[int64]bool{}
	trust := !s.wroteSince(ctx, 2*s.cfg.HiddenTTL)
	for _, p := range live {
		u := rule.NeedsFollows(reader, p)
		if _, seen := known[u]; u == 0 || seen {
			continue
		}
		if v, ok := s.followAnswers.Get(followPair{reader, u}); ok && trust {
			known[u] = v
			continue
		}
		known[u] = false
		ask = append(ask, u)
	}
	if len(ask) > 0 && withSQL {
		found, err := s.store.FollowingAmong(ctx, reader, ask)
		if err != nil {
			return nil, fmt.Errorf("timeline: whom %d follows among %d users: %w", reader, len(ask), err)
		}
		for _, u := range found {
			known[u] = true
		}
		for _, u := range ask {
			s.followAnswers.Put(followPair{reader, u}, known[u])
		}
	}
	follows := func(u int64) bool { return known[u] }
	kept := live[:0]
	for _, p := range live {
		if rule.Shows(reader, p, follows) {
			kept = append(kept, p)
		}
	}
	if n := len(live) - len(kept); n > 0 {
		s.metrics.hiddenReplies.Add(float64(n))
	}
	return kept, nil
}

// ListShows reports whether post p belongs in reader's list id by the
// list's rule for replies (feed.ListReplyRule), for a list's live stream:
// the list's members and setting and whom the reader follows are the
// process's copies, as a page of the list reads them.
func (s *Service) ListShows(ctx context.Context, reader, list int64, p feed.Post) (bool, error) {
	if !p.IsReply() {
		return true, nil
	}
	st, err := s.listState(ctx, reader, list)
	if err != nil {
		return false, err
	}
	kept, err := s.replyRule(ctx, reader, st.rule, []feed.Post{p}, true)
	return len(kept) == 1, err
}

// SettingsChanged keeps the caches in step with a change of user's
// settings committed in SQL, or of what else its hidden set carries (its
// first repost: feed.Hidden.Reposter): the set is published again
// (hiddenChanged).
func (s *Service) SettingsChanged(ctx context.Context, user int64) {
	s.hiddenChanged(ctx, user)
}
