package rediscache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
// Layout: format byte, flags byte, varint id, varint author id, varint
// Unix seconds and uvarint nanoseconds of CreatedAt, then the content's
// bytes to the end. Seconds and nanoseconds, not UnixNano, so that any
// time — the zero time included — round-trips. CreatedAt comes back in
// UTC; the instant is exact.
const (
	postFormat  = 1
	flagDeleted = 1 << 0
)

// appendPost appends p's record to b.
func appendPost(b []byte, p feed.Post) []byte {
	var flags byte
	if p.Deleted {
		flags |= flagDeleted
	}
	b = slices.Grow(b, 2+4*binary.MaxVarintLen64+len(p.Content))
	b = append(b, postFormat, flags)
	b = binary.AppendVarint(b, p.ID)
	b = binary.AppendVarint(b, p.AuthorID)
	b = binary.AppendVarint(b, p.CreatedAt.Unix())
	b = binary.AppendUvarint(b, uint64(p.CreatedAt.Nanosecond()))
	return append(b, p.Content...)
}

// decodePost parses a record; ok is false for anything malformed or of an
// unknown format, which the caller treats as a miss so that a format
// change during a rolling deploy costs cache hits, not errors.
func decodePost(b []byte) (p feed.Post, ok bool) {
	if len(b) < 2 || b[0] != postFormat {
		return feed.Post{}, false
	}
	p.Deleted = b[1]&flagDeleted != 0
	b = b[2:]
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
	p.Content = string(b[n+m+k+l:])
	return p, true
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

// CachePosts stores posts for ttl (no expiry if ttl <= 0), in one
// pipeline.
func (c *Cache) CachePosts(ctx context.Context, posts []feed.Post, ttl time.Duration) error {
	if len(posts) == 0 {
		return nil
	}
	ttl = max(ttl, 0) // go-redis reads -1 as KEEPTTL
	p := c.client.Pipeline()
	for _, post := range posts {
		p.Set(ctx, c.postKeyOf(post.ID), appendPost(nil, post), ttl)
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("rediscache: cache %d posts: %w", len(posts), err)
	}
	return nil
}
