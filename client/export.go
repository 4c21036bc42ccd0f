package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
)

// The kinds of the lines of a user's export, in the order they come.
const (
	ExportUser    = "user"    // id, name: a line of feedd import --users
	ExportProfile = "profile" // user_id, created_at, follower_count, following_count
	ExportMarker  = "marker"  // user_id, timeline, last_read_id, updated_at; only when set
	ExportFollow  = "follow"  // follower_id, followee_id: whom the user follows, then who follows them
	ExportMute    = "mute"    // user_id, target_id
	ExportBlock   = "block"   // blocker_id, blocked_id
	ExportPost    = "post"    // author_id, external_id, content, created_at, data?: the live posts, newest first
	ExportLike    = "like"    // user_id, author_id, external_id: the live posts the user likes
)

// ExportLine is one line of a user's export.
type ExportLine struct {
	// Kind is one of the Export… constants; a newer server may send others.
	Kind string
	// JSON is the line's object as sent, kind included; it is the line's
	// own copy, so it may be kept.
	JSON json.RawMessage
}

// Decode decodes the line into v: a struct with the kind's fields.
func (l ExportLine) Decode(v any) error {
	if err := json.Unmarshal(l.JSON, v); err != nil {
		return fmt.Errorf("client: export line %s: %w", l.Kind, err)
	}
	return nil
}

// Export opens the export of everything feedd holds about user (the admin
// token, or the user's own): JSON Lines, streamed as the server reads
// them, which the caller reads to its end and closes. GET
// /v1/users/{id}/export. An export the server could not finish is cut
// off, and reading it then fails (io.ErrUnexpectedEOF) rather than ending
// as if complete. Opening is retried as a GET is; reading is not. The
// client's http.Client Timeout does not apply: a large export takes as
// long as it takes, bounded by ctx.
func (c *Client) Export(ctx context.Context, user ID) (io.ReadCloser, error) {
	r := request{method: http.MethodGet, path: pathf("/v1/users/", user, "/export"), want: http.StatusOK}
	hc := *c.http
	hc.Timeout = 0
	var body io.ReadCloser
	err := c.attempts(ctx, &r, func() error {
		res, err := c.send(ctx, &hc, &r, nil)
		if err != nil {
			return err
		}
		if res.StatusCode != r.want {
			defer res.Body.Close()
			b, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			if err != nil {
				return fmt.Errorf("client: %s %s: read answer: %w", r.method, r.path, err)
			}
			return parseError(r.method, r.path, res, b)
		}
		body = res.Body
		return nil
	})
	return body, err
}

// ExportLines iterates over the lines of user's export (see Export). An
// error (the export refused, cut off, or a line that is no JSON object) is
// yielded once and ends the iteration; breaking out of the loop closes
// the connection.
func (c *Client) ExportLines(ctx context.Context, user ID) iter.Seq2[ExportLine, error] {
	return func(yield func(ExportLine, error) bool) {
		body, err := c.Export(ctx, user)
		if err != nil {
			yield(ExportLine{}, err)
			return
		}
		defer body.Close()
		dec := json.NewDecoder(body)
		for {
			var line ExportLine
			if err := dec.Decode(&line.JSON); err != nil {
				if errors.Is(err, io.EOF) {
					return
				}
				yield(ExportLine{}, fmt.Errorf("client: export of user %s: %w", user, err))
				return
			}
			var k struct {
				Kind string `json:"kind"`
			}
			if err := json.Unmarshal(line.JSON, &k); err != nil {
				yield(ExportLine{}, fmt.Errorf("client: export of user %s: a line is no JSON object: %w", user, err))
				return
			}
			line.Kind = k.Kind
			if !yield(line, nil) {
				return
			}
		}
	}
}
