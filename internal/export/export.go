// Package export writes everything feedd holds about one user as one JSON
// Lines document: what GDPR articles 15 (access) and 20 (portability) ask
// for. Every line is a JSON object whose "kind" says what it is, in the
// format of package jsonl, which feedd import reads as it is (--export):
//
//	{"kind":"user","id":"42","name":"alice"}
//	{"kind":"profile","user_id":"42","created_at":"…","follower_count":1,"following_count":2}
//	{"kind":"marker","user_id":"42","timeline":"home","last_read_id":"…","updated_at":"…"}
//	{"kind":"follow","follower_id":"42","followee_id":"7"}   whom the user follows
//	{"kind":"follow","follower_id":"9","followee_id":"42"}   who follows the user
//	{"kind":"mute","user_id":"42","target_id":"8"}
//	{"kind":"block","blocker_id":"42","blocked_id":"5"}
//	{"kind":"post","author_id":"42","external_id":"blog-9913","content":"…","created_at":"…","data":{…}}
//	{"kind":"like","user_id":"42","author_id":"7","external_id":"blog-17"}
//	{"kind":"list","owner_id":"42","list_id":"246…","name":"friends","replies":"followed","exclusive":false}
//	{"kind":"list_member","owner_id":"42","list_id":"246…","member_id":"7"}
//
// A post without an external id carries its feedd id as external_id, so
// that likes can name it and an import elsewhere has a key to keep it
// once. The likes of posts that a block hides from the user are left out,
// as the API's lists of likes leave them out. The document is written as
// it is read, a page at a time, so memory stays flat whatever the user's
// size; it is not one snapshot (a follow made during an export may or may
// not be in it).
package export

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/jsonl"
)

// ContentType is the media type of an export.
const ContentType = "application/x-ndjson"

// pageSize is how many rows one read of the source returns.
const pageSize = 500

// Source is what an export reads: the SQL store, directly (feedd export)
// or behind the SQL breaker (social.Service, for the API). Lists are keyset pages.
type Source interface {
	// User returns the user; ENOTFOUND if unknown or deleted.
	User(ctx context.Context, id int64) (feed.User, error)
	Marker(ctx context.Context, user int64) (feed.Marker, error)
	// Following, Followers, Mutes and Blocks return up to n ids above
	// after, ascending.
	Following(ctx context.Context, user, after int64, n int) ([]int64, error)
	Followers(ctx context.Context, user, after int64, n int) ([]int64, error)
	Mutes(ctx context.Context, user, after int64, n int) ([]int64, error)
	Blocks(ctx context.Context, user, after int64, n int) ([]int64, error)
	// AuthorPosts returns up to n live posts of author below before (0:
	// from the newest), newest first.
	AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, error)
	// LikedPosts returns up to n live posts user likes with ids above
	// after (0: from the first, negative ids included), ascending.
	LikedPosts(ctx context.Context, user, after int64, n int) ([]feed.Post, error)
	// Hidden returns whom user mutes and whom a block stands between it
	// and, either way.
	Hidden(ctx context.Context, user int64) (feed.Hidden, error)
	// Lists returns user's lists; ListMembers up to n member ids of one
	// above after, ascending.
	Lists(ctx context.Context, owner int64) ([]feed.List, error)
	ListMembers(ctx context.Context, owner, id, after int64, n int) ([]int64, error)
}

// Write writes user's export to w. It reads the user first: an unknown or
// deleted user is ENOTFOUND before anything is written, so a caller can
// still answer with an error. An error later leaves w with a partial
// document, which the caller must not pass off as whole.
func Write(ctx context.Context, src Source, user int64, w io.Writer) error {
	return write(ctx, src, user, w, pageSize)
}

// write is Write reading page rows at a time.
func write(ctx context.Context, src Source, user int64, w io.Writer, page int) error {
	u, err := src.User(ctx, user)
	if err != nil {
		return fmt.Errorf("export: user %d: %w", user, err)
	}
	e := &encoder{w: w, page: page}
	if err := e.run(ctx, src, u); err != nil {
		return fmt.Errorf("export: user %d: %w", user, err)
	}
	return nil
}

// encoder writes lines through a buffer it flushes after every page, so
// the document leaves as it is read.
type encoder struct {
	w    io.Writer
	page int // rows per read
	out  *jsonl.Writer
}

func (e *encoder) line(v any) error { return e.out.Write(v) }

// flush sends what is buffered on, and through an http.ResponseWriter
// (or anything else that buffers and can flush) to its client.
func (e *encoder) flush() error {
	if err := e.out.Flush(); err != nil {
		return err
	}
	if f, ok := e.w.(interface{ Flush() }); ok {
		f.Flush()
	}
	return nil
}

func (e *encoder) run(ctx context.Context, src Source, u feed.User) error {
	e.out = jsonl.NewWriter(e.w, 64<<10)
	id := jsonl.ID(u.ID)
	if err := e.line(jsonl.UserLine{Kind: jsonl.User, ID: id, Name: u.Name, Handle: u.Handle}); err != nil {
		return err
	}
	// The settings travel with the hidden set (feed.Hidden.Replies).
	settings, err := src.Hidden(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("read settings: %w", err)
	}
	profile := jsonl.ProfileLine{Kind: jsonl.Profile, UserID: id, CreatedAt: formatTime(u.CreatedAt),
		FollowerCount: u.FollowerCount, FollowingCount: u.FollowingCount}
	if r := settings.Replies(); r != feed.RepliesFollowing {
		profile.HomeReplies = r.String()
	}
	if err := e.line(profile); err != nil {
		return err
	}
	m, err := src.Marker(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("read marker: %w", err)
	}
	if m.LastReadID != 0 {
		if err := e.line(jsonl.MarkerLine{Kind: jsonl.Marker, UserID: id, Timeline: "home",
			LastReadID: feed.FormatID(m.LastReadID), UpdatedAt: formatTime(m.UpdatedAt)}); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		what string
		list func(ctx context.Context, user, after int64, n int) ([]int64, error)
		line func(other jsonl.ID) any
	}{
		{"following", src.Following, func(o jsonl.ID) any { return jsonl.FollowLine{Kind: jsonl.Follow, FollowerID: id, FolloweeID: o} }},
		{"followers", src.Followers, func(o jsonl.ID) any { return jsonl.FollowLine{Kind: jsonl.Follow, FollowerID: o, FolloweeID: id} }},
		{"mutes", src.Mutes, func(o jsonl.ID) any { return jsonl.MuteLine{Kind: jsonl.Mute, UserID: id, TargetID: o} }},
		{"blocks", src.Blocks, func(o jsonl.ID) any { return jsonl.BlockLine{Kind: jsonl.Block, BlockerID: id, BlockedID: o} }},
	} {
		err := walk(e, l.what, func(after int64) ([]int64, error) { return l.list(ctx, u.ID, after, e.page) },
			func(other int64) int64 { return other },
			func(other int64) any { return l.line(jsonl.ID(other)) })
		if err != nil {
			return err
		}
	}
	postID := func(p feed.Post) int64 { return p.ID }
	err = walk(e, "posts", func(before int64) ([]feed.Post, error) { return src.AuthorPosts(ctx, u.ID, before, e.page) }, postID,
		func(p feed.Post) any {
			if p.IsRepost() {
				// Not carried yet: a post line has no field for it, and
				// an import would make it a post without content.
				return nil
			}
			return jsonl.PostLine{Kind: jsonl.Post, AuthorID: id, ExternalID: externalID(p), Content: p.Content,
				CreatedAt: formatTime(p.CreatedAt), Data: rawData(p.Data), Weight: weightOf(p.Weight)}
		})
	if err != nil {
		return err
	}
	// Read after the lists: a block made meanwhile hides its likes too.
	hidden, err := src.Hidden(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("read blocks: %w", err)
	}
	err = walk(e, "likes", func(after int64) ([]feed.Post, error) { return src.LikedPosts(ctx, u.ID, after, e.page) }, postID,
		func(p feed.Post) any {
			if hidden.Blocked(p.AuthorID) {
				return nil
			}
			return jsonl.LikeLine{Kind: jsonl.Like, UserID: id, AuthorID: jsonl.ID(p.AuthorID), ExternalID: externalID(p)}
		})
	if err != nil {
		return err
	}
	lists, err := src.Lists(ctx, u.ID)
	if err != nil {
		return fmt.Errorf("read lists: %w", err)
	}
	for _, l := range lists {
		lid := jsonl.ID(l.ID)
		if err := e.line(jsonl.ListLine{Kind: jsonl.List, OwnerID: id, ListID: lid, Name: l.Name, Replies: l.Replies, Exclusive: l.Exclusive}); err != nil {
			return err
		}
		err := walk(e, "list members", func(after int64) ([]int64, error) { return src.ListMembers(ctx, u.ID, l.ID, after, e.page) },
			func(m int64) int64 { return m },
			func(m int64) any {
				return jsonl.ListMemberLine{Kind: jsonl.ListMember, OwnerID: id, ListID: lid, MemberID: jsonl.ID(m)}
			})
		if err != nil {
			return err
		}
	}
	return nil
}

// walk writes a keyset-paged list: read returns the page after cursor (0
// first), key gives the cursor of the next page from a page's last row,
// line the row's line (nil: none). Each page is flushed before the next
// is read.
func walk[T any](e *encoder, what string, read func(cursor int64) ([]T, error), key func(T) int64, line func(T) any) error {
	for cursor := int64(0); ; {
		rows, err := read(cursor)
		if err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
		for _, r := range rows {
			if l := line(r); l != nil {
				if err := e.line(l); err != nil {
					return err
				}
			}
		}
		if err := e.flush(); err != nil {
			return err
		}
		if len(rows) < e.page {
			return nil
		}
		cursor = key(rows[len(rows)-1])
	}
}

// externalID is the id a post goes by in an export: the app's own, or
// feedd's when the post has none.
func externalID(p feed.Post) string {
	if p.ExternalID != "" {
		return p.ExternalID
	}
	return feed.FormatID(p.ID)
}

// rawData is a post's data as a JSON value, nil (left out) when it has none.
func rawData(data string) json.RawMessage {
	if data == "" {
		return nil
	}
	return json.RawMessage(data)
}

// formatTime writes t as the API does.
func formatTime(t time.Time) string { return t.UTC().Format(feed.TimeFormat) }

// weightOf is a post's weight as a line carries it: absent for the default.
func weightOf(w feed.Weight) *float64 {
	if w.IsDefault() {
		return nil
	}
	v := w.Value()
	return &v
}
