package importer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/jsonl"
)

// reason turns a domain error into the sentence a bad line is reported
// with.
func reason(err error) string {
	var fe *feed.Error
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}

func required(field string, v jsonl.ID) error {
	if v == 0 {
		return fmt.Errorf("%s is required", field)
	}
	return nil
}

func (r *run) parseUser(line []byte) (feed.User, error) {
	var l jsonl.UserLine
	if err := jsonl.Decode(line, &l); err != nil {
		return feed.User{}, err
	}
	if err := required("id", l.ID); err != nil {
		return feed.User{}, err
	}
	if err := feed.CheckName(l.Name); err != nil {
		return feed.User{}, errors.New(reason(err))
	}
	u := feed.User{ID: int64(l.ID), Name: l.Name}
	if l.Handle != "" {
		h, err := feed.CheckHandle(l.Handle)
		if err != nil {
			return feed.User{}, errors.New(reason(err))
		}
		u.Handle = h
	}
	return u, nil
}

func (r *run) writeUsers(ctx context.Context, src Source, batch []item[feed.User]) error {
	users := make([]feed.User, len(batch))
	for i, it := range batch {
		users[i] = it.row
	}
	out, err := r.store.ImportUsers(ctx, users)
	if err != nil {
		return fmt.Errorf("importer: %s: %w", src.Name, err)
	}
	return outcomes(r, src, batch, out, func(i int, o feed.ImportOutcome) string {
		if o == feed.HandleInUse {
			return fmt.Sprintf("user %d: %s", users[i].ID, feed.ErrorMessage(feed.HandleTaken(users[i].Handle)))
		}
		return fmt.Sprintf("user %d is being deleted; its id is free again once the purge is done", users[i].ID)
	})
}

func (r *run) parseFollow(line []byte) ([2]int64, error) {
	var l jsonl.FollowLine
	if err := jsonl.Decode(line, &l); err != nil {
		return [2]int64{}, err
	}
	if err := errors.Join(required("follower_id", l.FollowerID), required("followee_id", l.FolloweeID)); err != nil {
		return [2]int64{}, errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if err := feed.CheckNotSelf("follow", int64(l.FollowerID), int64(l.FolloweeID)); err != nil {
		return [2]int64{}, errors.New(feed.ErrorMessage(err))
	}
	return [2]int64{int64(l.FollowerID), int64(l.FolloweeID)}, nil
}

func (r *run) writeFollows(ctx context.Context, src Source, batch []item[[2]int64]) error {
	edges := make([][2]int64, len(batch))
	for i, it := range batch {
		edges[i] = it.row
	}
	res, err := r.store.ImportFollows(ctx, edges)
	if err != nil {
		return fmt.Errorf("importer: %s: %w", src.Name, err)
	}
	if len(res.Followers) > 0 {
		r.followed.Store(true)
		// Each follower's feed now holds the followee's posts: its inbox
		// goes, and is rebuilt from SQL on its next read; its live
		// streams start listening to the new followees.
		r.dropInboxes(ctx, res.Followers)
		if r.caches.Streams != nil {
			r.each(ctx, res.Followers, r.caches.Streams.FollowsChanged)
		}
	}
	return outcomes(r, src, batch, res.Outcomes, func(i int, o feed.ImportOutcome) string {
		e := edges[i]
		switch o {
		case feed.UnknownUser:
			return fmt.Sprintf("unknown user: %d or %d does not exist", e[0], e[1])
		case feed.Blocked:
			return fmt.Sprintf("a block between users %d and %d forbids the follow", e[0], e[1])
		}
		return "a user cannot follow themselves"
	})
}

// followsDone settles what the follows changed beyond the inboxes: in
// hybrid mode the authors the import took over the pull threshold are
// recorded as pulled, and every reader's cached list of pulled followees
// is made stale, since new follows may name pulled authors.
func (r *run) followsDone(ctx context.Context) error {
	if !r.followed.Load() {
		return nil
	}
	if r.opts.Policy.Mode == feed.ModeHybrid {
		_, high := r.opts.Policy.Band()
		n, err := r.store.MarkPulled(ctx, high)
		if err != nil {
			return fmt.Errorf("importer: %w", err)
		}
		if n > 0 {
			r.opts.Logger.Info("authors the import took over the pull threshold are now pulled", "authors", n)
		}
	}
	r.newModesEpoch(ctx)
	return nil
}

func (r *run) parsePost(line []byte) (feed.Post, error) {
	var l jsonl.PostLine
	if err := jsonl.Decode(line, &l); err != nil {
		return feed.Post{}, err
	}
	if err := required("author_id", l.AuthorID); err != nil {
		return feed.Post{}, err
	}
	if err := feed.CheckExternalID(l.ExternalID); err != nil {
		return feed.Post{}, errors.New(reason(err))
	}
	if err := feed.CheckContent(l.Content); err != nil {
		return feed.Post{}, errors.New(reason(err))
	}
	if l.CreatedAt == "" {
		return feed.Post{}, errors.New("created_at is required")
	}
	at, err := time.Parse(time.RFC3339Nano, l.CreatedAt)
	if err != nil {
		return feed.Post{}, fmt.Errorf("created_at %q is not an RFC 3339 time like 2019-05-01T12:00:00Z", l.CreatedAt)
	}
	// Not in the future: an imported post would sort above the posts
	// made after the import.
	if at.Before(feed.HistoryStart) || at.After(time.Now()) {
		return feed.Post{}, fmt.Errorf("created_at %s is outside %s to now", l.CreatedAt, feed.HistoryStart.Format(time.RFC3339))
	}
	row := feed.Post{AuthorID: int64(l.AuthorID), ExternalID: l.ExternalID, Content: l.Content, CreatedAt: at.UTC()}
	if l.Weight != nil {
		if err := feed.CheckWeight(*l.Weight); err != nil {
			return feed.Post{}, errors.New(reason(err))
		}
		row.Weight = feed.WeightOf(*l.Weight)
	}
	if len(l.Data) > 0 && string(l.Data) != "null" {
		if row.Data, err = feed.CheckData(l.Data); err != nil {
			return feed.Post{}, errors.New(reason(err))
		}
	}
	return row, nil
}

// maxSeqAttempts bounds the sequence numbers a post tries for an id in
// its millisecond: far more than a millisecond's 4,096 need, unless it
// is full.
const maxSeqAttempts = 1 << 14

func (r *run) writePosts(ctx context.Context, src Source, batch []item[feed.Post]) error {
	authors := make([]int64, 0, len(batch))
	for _, it := range batch {
		authors = append(authors, it.row.AuthorID)
	}
	users, err := r.store.Users(ctx, authors)
	if err != nil {
		return fmt.Errorf("importer: %s: %w", src.Name, err)
	}
	out := make([]feed.ImportOutcome, len(batch))
	reasons := map[int]string{}
	// The posts of known authors, with their ids: each post's millisecond
	// at the sequence feed.ImportSeq gives it (the same in every run),
	// or its next attempt's while another post holds the id.
	var todo []int
	attempt := make([]int, len(batch))
	for i, it := range batch {
		if _, ok := users[it.row.AuthorID]; !ok {
			out[i], reasons[i] = feed.UnknownUser, fmt.Sprintf("unknown user: author %d does not exist", it.row.AuthorID)
			continue
		}
		todo = append(todo, i)
	}
	var authorsPosted []int64
	posted := map[int64]bool{}
	for len(todo) > 0 {
		posts := make([]feed.Post, 0, len(todo))
		var trying []int
		for _, i := range todo {
			p := batch[i].row
			for ; attempt[i] < maxSeqAttempts; attempt[i]++ {
				if p.ID, err = feed.IDAt(p.CreatedAt, feed.OnShard(feed.ImportSeq(p.AuthorID, p.ExternalID, attempt[i]), p.AuthorID, r.opts.Shards)); err == nil {
					break
				}
			}
			if attempt[i] >= maxSeqAttempts {
				out[i], reasons[i] = feed.IDTaken, "no free id in the millisecond of created_at"
				continue
			}
			posts = append(posts, p)
			trying = append(trying, i)
		}
		res, err := r.store.ImportPosts(ctx, posts)
		if err != nil {
			return fmt.Errorf("importer: %s: %w", src.Name, err)
		}
		todo = todo[:0]
		for k, rr := range res {
			i := trying[k]
			switch rr.Outcome {
			case feed.Imported:
				out[i] = feed.Imported
				if a := posts[k].AuthorID; !posted[a] {
					posted[a] = true
					authorsPosted = append(authorsPosted, a)
				}
			case feed.ExternalIDExists:
				out[i] = feed.Unchanged
			case feed.IDTaken:
				attempt[i]++
				todo = append(todo, i)
			}
		}
	}
	r.authorsPosted(ctx, authorsPosted)
	return outcomes(r, src, batch, out, func(i int, o feed.ImportOutcome) string { return reasons[i] })
}

func (r *run) parseLike(line []byte) (jsonl.LikeLine, error) {
	var l jsonl.LikeLine
	if err := jsonl.Decode(line, &l); err != nil {
		return l, err
	}
	if err := errors.Join(required("user_id", l.UserID), required("author_id", l.AuthorID)); err != nil {
		return l, errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if err := feed.CheckExternalID(l.ExternalID); err != nil {
		return l, errors.New(reason(err))
	}
	return l, nil
}

func (r *run) writeLikes(ctx context.Context, src Source, batch []item[jsonl.LikeLine]) error {
	keys := make([]feed.ExternalKey, len(batch))
	for i, it := range batch {
		keys[i] = feed.ExternalKey{AuthorID: int64(it.row.AuthorID), ExternalID: it.row.ExternalID}
	}
	ids, err := r.store.PostIDsByExternalID(ctx, keys)
	if err != nil {
		return fmt.Errorf("importer: %s: %w", src.Name, err)
	}
	// The lines whose post exists go to the store; the others are bad.
	var likes [][2]int64
	var at []int
	out := make([]feed.ImportOutcome, len(batch))
	for i, it := range batch {
		post, ok := ids[keys[i]]
		if !ok {
			out[i] = feed.UnknownPost
			continue
		}
		likes = append(likes, [2]int64{int64(it.row.UserID), post})
		at = append(at, i)
	}
	res, err := r.store.ImportLikes(ctx, likes)
	if err != nil {
		return fmt.Errorf("importer: %s: %w", src.Name, err)
	}
	valid := 0
	for k, o := range res.Outcomes {
		out[at[k]] = o
		if o == feed.Imported {
			valid++
		}
	}
	// ImportLikes says how many of the valid likes were new, not which:
	// the totals are exact, and no line needs more.
	for i, n := 0, valid-res.Liked; i < len(out) && n > 0; i++ {
		if out[i] == feed.Imported {
			out[i], n = feed.Unchanged, n-1
		}
	}
	r.likesChanged(ctx, res)
	return outcomes(r, src, batch, out, func(i int, o feed.ImportOutcome) string {
		l := batch[i].row
		if o == feed.UnknownUser {
			return fmt.Sprintf("unknown user: %d does not exist", l.UserID)
		}
		return fmt.Sprintf("unknown post: author %d has no post %q", l.AuthorID, l.ExternalID)
	})
}

func (r *run) parseList(line []byte) (feed.List, error) {
	var l jsonl.ListLine
	if err := jsonl.Decode(line, &l); err != nil {
		return feed.List{}, err
	}
	if err := errors.Join(required("owner_id", l.OwnerID), required("list_id", l.ListID)); err != nil {
		return feed.List{}, errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if err := feed.CheckListName(l.Name); err != nil {
		return feed.List{}, errors.New(reason(err))
	}
	if l.Replies == "" {
		l.Replies = feed.ListRepliesFollowed
	}
	if err := feed.CheckListReplies(l.Replies); err != nil {
		return feed.List{}, errors.New(reason(err))
	}
	return feed.List{ID: int64(l.ListID), OwnerID: int64(l.OwnerID), Name: l.Name, Replies: l.Replies, Exclusive: l.Exclusive}, nil
}

// writeLists stores each list with its id, a list at a time (a user has
// 100 at the most): one the owner has already is unchanged.
func (r *run) writeLists(ctx context.Context, src Source, batch []item[feed.List]) error {
	out := make([]feed.ImportOutcome, len(batch))
	for i, it := range batch {
		_, err := r.store.CreateList(ctx, it.row)
		switch feed.ErrorCode(err) {
		case "":
			out[i] = feed.Imported
		case feed.ECONFLICT:
			out[i] = feed.Unchanged
		case feed.ENOTFOUND:
			out[i] = feed.UnknownUser
		case feed.ELIMIT:
			out[i] = feed.LimitReached
		default:
			return fmt.Errorf("importer: %s: %w", src.Name, err)
		}
	}
	return outcomes(r, src, batch, out, func(i int, o feed.ImportOutcome) string {
		if o == feed.LimitReached {
			return fmt.Sprintf("user %d has %d lists already", batch[i].row.OwnerID, feed.MaxLists)
		}
		return fmt.Sprintf("unknown user: %d does not exist", batch[i].row.OwnerID)
	})
}

func (r *run) parseListMember(line []byte) ([3]int64, error) {
	var l jsonl.ListMemberLine
	if err := jsonl.Decode(line, &l); err != nil {
		return [3]int64{}, err
	}
	if err := errors.Join(required("owner_id", l.OwnerID), required("list_id", l.ListID), required("member_id", l.MemberID)); err != nil {
		return [3]int64{}, errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return [3]int64{int64(l.OwnerID), int64(l.ListID), int64(l.MemberID)}, nil
}

// writeListMembers adds each member to its list, idempotently, after
// checking that the members exist.
func (r *run) writeListMembers(ctx context.Context, src Source, batch []item[[3]int64]) error {
	ids := make([]int64, len(batch))
	for i, it := range batch {
		ids[i] = it.row[2]
	}
	users, err := r.store.Users(ctx, ids)
	if err != nil {
		return fmt.Errorf("importer: %s: %w", src.Name, err)
	}
	out := make([]feed.ImportOutcome, len(batch))
	for i, it := range batch {
		owner, list, member := it.row[0], it.row[1], it.row[2]
		if _, ok := users[member]; !ok {
			out[i] = feed.UnknownUser
			continue
		}
		added, err := r.store.AddListMember(ctx, owner, list, member)
		switch feed.ErrorCode(err) {
		case "":
			out[i] = feed.Unchanged
			if added {
				out[i] = feed.Imported
			}
		case feed.ENOTFOUND:
			out[i] = feed.UnknownList
		case feed.ELIMIT:
			out[i] = feed.LimitReached
		default:
			return fmt.Errorf("importer: %s: %w", src.Name, err)
		}
	}
	return outcomes(r, src, batch, out, func(i int, o feed.ImportOutcome) string {
		row := batch[i].row
		switch o {
		case feed.UnknownList:
			return fmt.Sprintf("unknown list: user %d has no list %d", row[0], row[1])
		case feed.LimitReached:
			return fmt.Sprintf("list %d has %d members already", row[1], feed.MaxListMembers)
		}
		return fmt.Sprintf("unknown user: %d does not exist", row[2])
	})
}
