package apijson

import (
	"encoding/json"
	"strconv"
)

// A page of posts is the API's most frequent body, 20 posts of every home
// feed read: encoding/json spent a fifth of feedd's CPU per page on it,
// walking the same structs by reflection each time. PostsPage writes
// itself instead, byte for byte what encoding/json writes (the tests hold
// it to that), so clients see no difference; the one exception is a
// post's data, written as stored, where encoding/json would also escape
// <, > and &.

// Appender is a body that can append its own JSON encoding.
type Appender interface {
	AppendJSON(b []byte) []byte
}

var (
	_ Appender = PostsPage{}
	_ Appender = Post{}
)

// AppendJSON appends p's JSON encoding to b.
func (p PostsPage) AppendJSON(b []byte) []byte {
	b = append(b, `{"items":[`...)
	for i, it := range p.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = it.AppendJSON(b)
	}
	b = append(b, `],"next_cursor":`...)
	if p.NextCursor == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, *p.NextCursor)
	}
	if p.Degraded {
		b = append(b, `,"degraded":true`...)
	}
	return append(b, '}')
}

// AppendJSON appends p's JSON encoding to b: the bytes of a feed page's
// item, which a stream's event carries too.
func (p Post) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, p.ID)
	b = append(b, `,"author_id":`...)
	b = appendString(b, p.AuthorID)
	if !p.Repost {
		b = append(b, `,"content":`...)
		b = appendString(b, p.Content)
	}
	if len(p.Data) > 0 {
		// As stored: compact JSON the API checked. encoding/json would
		// escape <, > and & in it too; the client's own bytes are kept.
		b = append(b, `,"data":`...)
		b = append(b, p.Data...)
	}
	b = append(b, `,"created_at":`...)
	b = appendString(b, p.CreatedAt)
	if p.EditedAt != "" {
		b = append(b, `,"edited_at":`...)
		b = appendString(b, p.EditedAt)
	}
	if p.ExternalID != "" {
		b = append(b, `,"external_id":`...)
		b = appendString(b, p.ExternalID)
	}
	if p.Weight != nil {
		// Rare (its author's and the admin's views): encoding/json's own
		// float format, exponents included.
		w, _ := json.Marshal(*p.Weight) // CheckWeight: never NaN or infinite
		b = append(b, `,"weight":`...)
		b = append(b, w...)
	}
	if p.InReplyToID != "" {
		b = append(b, `,"in_reply_to_id":`...)
		b = appendString(b, p.InReplyToID)
		b = append(b, `,"in_reply_to_author_id":`...)
		b = appendString(b, p.InReplyToAuthorID)
	}
	if p.LikeCount != nil {
		b = append(b, `,"like_count":`...)
		b = strconv.AppendInt(b, *p.LikeCount, 10)
	}
	if p.LikedByMe != nil {
		b = append(b, `,"liked_by_me":`...)
		b = strconv.AppendBool(b, *p.LikedByMe)
	}
	if p.ReplyCount != nil {
		b = append(b, `,"reply_count":`...)
		b = strconv.AppendInt(b, *p.ReplyCount, 10)
	}
	if p.RepostCount != nil {
		b = append(b, `,"repost_count":`...)
		b = strconv.AppendInt(b, *p.RepostCount, 10)
	}
	if p.RepostedByMe != nil {
		b = append(b, `,"reposted_by_me":`...)
		b = strconv.AppendBool(b, *p.RepostedByMe)
	}
	if p.RepostOf != nil {
		b = append(b, `,"repost_of":`...)
		b = p.RepostOf.AppendJSON(b)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string. Plain ASCII, the common case,
// is copied; anything encoding/json would escape or check (control
// characters, quotes, backslashes, <, > and &, any byte above 0x7f for
// invalid UTF-8 and U+2028/U+2029) goes through encoding/json itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
