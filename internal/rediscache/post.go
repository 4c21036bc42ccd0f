package rediscache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedd/feedd/internal/feed"
)

// A cached post is a compact binary record rather than JSON: every page of
// a timeline decodes tens of them, and a varint record is a third of the
// size and needs no reflection.
//
// Format 1, a post never edited and without data: format byte, flags
// byte, varint id, varint author id, varint Unix seconds and uvarint
// nanoseconds of CreatedAt, then the content's bytes to the end. Seconds
// and nanoseconds, not UnixNano, so that any time — the zero time
// included — round-trips. CreatedAt comes back in UTC; the instant is
// exact.
//
// Format 2, an edited post or one with data: format byte, flags byte,
// then if flagEdited the post's version (feed.Post.Version, the edit's
// Unix milliseconds) as 8 big-endian bytes, where post_set.lua reads it
// without decoding the rest; then format 1's varints; then if flagData a
// uvarint length and the data's bytes; then the content to the end.
//
// Format 3, a post with an external id: format 2's layout, flagExternal
// set, and after the data (if any) a uvarint length and the external id's
// bytes, then the content to the end. A format of its own rather than a
// new flag in format 2, because a process of the version before it would
// decode a format-2 record with a flag it does not know and show the
// external id as the start of the content; an unknown format is a miss.
//
// Format 4, a post whose weight is not the default: format 3's layout,
// flagWeight set, and after the external id (if any) the weight as the 8
// big-endian bytes of its float64, then the content to the end.
//
// Format 5, a reply: format 4's layout, flagReply set, and after the
// weight (if any) the varints of InReplyToID and InReplyToAuthorID, then
// the content to the end. Its own format for format 3's reason: a process
// of the version before would take the two varints for content.
//
// Format 6, a repost: format 5's layout, flagRepost set, and after the
// reply's varints (if any) the varints of RepostOfID and
// RepostOfAuthorID, then the content to the end. Its own format for
// format 3's reason.
//
// A post that needs none of this is still written in format 1, and one
// that needs only format 2 in format 2, so that processes of the versions
// before, during a rolling deploy, keep decoding most posts; this version
// decodes all six.
const (
	postFormat   = 1
	postFormatV2 = 2
	postFormatV3 = 3
	postFormatV4 = 4
	postFormatV5 = 5
	postFormatV6 = 6

	flagDeleted  = 1 << 0
	flagEdited   = 1 << 1
	flagData     = 1 << 2
	flagExternal = 1 << 3
	flagWeight   = 1 << 4
	flagReply    = 1 << 5
	flagRepost   = 1 << 6
)

// appendPost appends p's record to b.
func appendPost(b []byte, p feed.Post) []byte {
	var flags byte
	if p.Deleted {
		flags |= flagDeleted
	}
	format := byte(postFormat)
	if !p.EditedAt.IsZero() {
		flags |= flagEdited
		format = postFormatV2
	}
	if p.Data != "" {
		flags |= flagData
		format = postFormatV2
	}
	if p.ExternalID != "" {
		flags |= flagExternal
		format = postFormatV3
	}
	if !p.Weight.IsDefault() {
		flags |= flagWeight
		format = postFormatV4
	}
	if p.IsReply() {
		flags |= flagReply
		format = postFormatV5
	}
	if p.IsRepost() {
		flags |= flagRepost
		format = postFormatV6
	}
	b = slices.Grow(b, 2+8+8+8*binary.MaxVarintLen64+len(p.Data)+len(p.ExternalID)+len(p.Content))
	b = append(b, format, flags)
	if flags&flagEdited != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(p.Version()))
	}
	b = binary.AppendVarint(b, p.ID)
	b = binary.AppendVarint(b, p.AuthorID)
	b = binary.AppendVarint(b, p.CreatedAt.Unix())
	b = binary.AppendUvarint(b, uint64(p.CreatedAt.Nanosecond()))
	if flags&flagData != 0 {
		b = binary.AppendUvarint(b, uint64(len(p.Data)))
		b = append(b, p.Data...)
	}
	if flags&flagExternal != 0 {
		b = binary.AppendUvarint(b, uint64(len(p.ExternalID)))
		b = append(b, p.ExternalID...)
	}
	if flags&flagWeight != 0 {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.Weight.Value()))
	}
	if flags&flagReply != 0 {
		b = binary.AppendVarint(b, p.InReplyToID)
		b = binary.AppendVarint(b, p.InReplyToAuthorID)
	}
	if flags&flagRepost != 0 {
		b = binary.AppendVarint(b, p.RepostOfID)
		b = binary.AppendVarint(b, p.RepostOfAuthorID)
	}
	return append(b, p.Content...)
}

// decodePost parses a record; ok is false for anything malformed or of an
// unknown format, which the caller treats as a miss so that a format
// change during a rolling deploy costs cache hits, not errors.
func decodePost(b []byte) (p feed.Post, ok bool) {
	if len(b) < 2 || b[0] < postFormat || b[0] > postFormatV6 {
		return feed.Post{}, false
	}
	format, flags := b[0], b[1]
	p.Deleted = flags&flagDeleted != 0
	b = b[2:]
	// Formats 3 to 6 are format 2 and more, so v2 is true for them.
	v2 := format >= postFormatV2
	if v2 && flags&flagEdited != 0 {
		if len(b) < 8 {
			return feed.Post{}, false
		}
		v := binary.BigEndian.Uint64(b)
		if v == 0 || v >= uint64(feed.TombstoneVersion) {
			return feed.Post{}, false
		}
		p.EditedAt = time.UnixMilli(int64(v)).UTC()
		b = b[8:]
	}
	var sec int64
	var nsec uint64
	var n, m, k, l int
	if p.ID, n = binary.Varint(b); n > 0 {
		if p.AuthorID, m = binary.Varint(b[n:]); m > 0 {
			if sec, k = binary.Varint(b[n+m:]); k > 0 {
				nsec, l = binary.Uvarint(b[n+m+k:])
			}
		}
	}
	if n <= 0 || m <= 0 || k <= 0 || l <= 0 || nsec >= 1e9 {
		return feed.Post{}, false
	}
	p.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
	b = b[n+m+k+l:]
	var ok2 bool
	if v2 && flags&flagData != 0 {
		if p.Data, b, ok2 = cutSized(b); !ok2 {
			return feed.Post{}, false
		}
	}
	if format >= postFormatV3 && flags&flagExternal != 0 {
		if p.ExternalID, b, ok2 = cutSized(b); !ok2 {
			return feed.Post{}, false
		}
	}
	if format >= postFormatV4 && flags&flagWeight != 0 {
		if len(b) < 8 {
			return feed.Post{}, false
		}
		w := math.Float64frombits(binary.BigEndian.Uint64(b))
		if feed.CheckWeight(w) != nil {
			return feed.Post{}, false
		}
		p.Weight, b = feed.WeightOf(w), b[8:]
	}
	if format >= postFormatV5 && flags&flagReply != 0 {
		if p.InReplyToID, p.InReplyToAuthorID, b, ok2 = cutPair(b); !ok2 {
			return feed.Post{}, false
		}
	}
	if format >= postFormatV6 && flags&flagRepost != 0 {
		if p.RepostOfID, p.RepostOfAuthorID, b, ok2 = cutPair(b); !ok2 {
			return feed.Post{}, false
		}
	}
	p.Content = string(b)
	return p, true
}

// cutPair cuts a post id (not 0) and its author's id, two varints, off
// the front of b.
func cutPair(b []byte) (id, author int64, rest []byte, ok bool) {
	id, n := binary.Varint(b)
	if n <= 0 || id == 0 {
		return 0, 0, nil, false
	}
	author, m := binary.Varint(b[n:])
	if m <= 0 {
		return 0, 0, nil, false
	}
	return id, author, b[n+m:], true
}

// cutSized cuts a uvarint length and that many bytes, at least one, off
// the front of b.
func cutSized(b []byte) (field string, rest []byte, ok bool) {
	size, j := binary.Uvarint(b)
	if j <= 0 || size == 0 || size > uint64(len(b)-j) {
		return "", nil, false
	}
	return string(b[j : j+int(size)]), b[j+int(size):], true
}

// postKeyOf returns post:{<id>}: each post its own hash tag, so that a
// page's GETs spread over a Cluster.
func (c *Cache) postKeyOf(id int64) string {
	b := make([]byte, 0, len(c.postKey)+22)
	b = append(b, c.postKey...)
	b = append(b, '{')
	b = strconv.AppendInt(b, id, 10)
	return string(append(b, '}'))
}

// CachedPosts returns the cached posts among ids, with a pipeline of GETs
// (one key each, so that a Cluster can serve them from every node). An
// entry that does not decode is a miss: the caller reloads it from SQL and
// overwrites it.
func (c *Cache) CachedPosts(ctx context.Context, ids []int64) (map[int64]feed.Post, error) {
	got := make(map[int64]feed.Post, len(ids))
	if len(ids) == 0 {
		return got, nil
	}
	cmds := make([]*redis.StringCmd, len(ids))
	p := c.client.Pipeline()
	for i, id := range ids {
		cmds[i] = p.Get(ctx, c.postKeyOf(id))
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("rediscache: get %d posts: %w", len(ids), err)
	}
	for i, cmd := range cmds {
		b, err := cmd.Bytes()
		if err != nil {
			continue // redis.Nil: a miss
		}
		if post, ok := decodePost(b); ok && post.ID == ids[i] {
			got[post.ID] = post
		}
	}
	return got, nil
}

// CachePosts stores each of posts for ttl (no expiry if ttl <= 0) unless
// Redis holds a newer version of it (post_set.lua), one EVALSHA per post
// in one pipeline. A node that lost the script gets it again and the
// posts it missed are stored with EVAL.
func (c *Cache) CachePosts(ctx context.Context, posts []feed.Post, ttl time.Duration) error {
	if len(posts) == 0 {
		return nil
	}
	ttlArg := ms(ttl)
	set := func(posts []feed.Post, eval func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd) ([]*redis.Cmd, error) {
		cmds := make([]*redis.Cmd, len(posts))
		p := c.client.Pipeline()
		for i, post := range posts {
			cmds[i] = eval(ctx, p, []string{c.postKeyOf(post.ID)}, appendPost(nil, post), post.Version(), ttlArg)
		}
		_, err := p.Exec(ctx)
		return cmds, err
	}
	cmds, err := set(posts, c.postSet.EvalSha)
	if err == nil {
		return nil
	}
	idx, cmdErr := missedScript(cmds)
	if cmdErr != nil {
		return fmt.Errorf("rediscache: cache %d posts: %w", len(posts), cmdErr)
	}
	missed := make([]feed.Post, len(idx))
	for j, i := range idx {
		missed[j] = posts[i]
	}
	if len(missed) == 0 {
		return fmt.Errorf("rediscache: cache %d posts: %w", len(posts), err)
	}
	loadErr := c.loadScript(ctx, c.postSet)
	if _, err := set(missed, c.postSet.Eval); err != nil {
		return fmt.Errorf("rediscache: cache %d posts (%d without the script): %w", len(posts), len(missed), errors.Join(err, loadErr))
	}
	return nil
}
