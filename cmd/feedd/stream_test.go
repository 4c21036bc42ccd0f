package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/testenv"
)

// sseStream is an open GET /v1/me/feed/stream.
type sseStream struct {
	*testenv.SSE
	t     *testing.T
	pings int
}

// openStream opens a stream and waits for it to listen (its ": open").
func (in *instance) openStream(path, token string, hdr ...string) *sseStream {
	in.t.Helper()
	s, res := in.tryStream(path, token, hdr...)
	if s == nil {
		in.t.Fatalf("GET %s: status %d; want 200", path, res.StatusCode)
	}
	return s
}

// tryStream opens a stream; on a status other than 200 it returns nil and
// the response.
func (in *instance) tryStream(path, token string, hdr ...string) (*sseStream, *http.Response) {
	in.t.Helper()
	sse, res := testenv.OpenSSE(in.t, in.url+path, token, hdr...)
	if sse == nil {
		return nil, res
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		in.t.Fatalf("stream Content-Type = %q; want text/event-stream", ct)
	}
	s := &sseStream{SSE: sse, t: in.t}
	if ev := s.Next(5 * time.Second); ev.Comment != "open" {
		in.t.Fatalf("first block of the stream = %q; want the comment open", ev.Raw)
	}
	return s, res
}

// canOpenStream reports whether token's user can open a stream now, and
// closes it.
func (in *instance) canOpenStream(token string) bool {
	in.t.Helper()
	s, _ := in.tryStream("/v1/me/feed/stream", token)
	if s != nil {
		s.Close()
	}
	return s != nil
}

// event returns the next event, skipping pings.
func (s *sseStream) event(d time.Duration) testenv.SSEEvent {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ev := s.Next(time.Until(deadline))
		if ev.Comment == "ping" {
			s.pings++
			continue
		}
		return ev
	}
}

// expectPost waits for post id's event.
func (s *sseStream) expectPost(id string) testenv.SSEEvent {
	s.t.Helper()
	ev := s.event(10 * time.Second)
	if ev.Event != "post" || ev.ID != id {
		s.t.Fatalf("stream event %q; want post %s", ev.Raw, id)
	}
	return ev
}

// feedItem returns post id as reader's feed page shows it, in bytes.
func (in *instance) feedItem(token, id string) string {
	in.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var page struct {
			Items []json.RawMessage `json:"items"`
		}
		r := in.must(200, "GET", "/v1/me/feed?limit=100", token, nil)
		if err := json.Unmarshal(r.raw, &page); err != nil {
			in.t.Fatal(err)
		}
		for _, it := range page.Items {
			var p struct{ ID string }
			_ = json.Unmarshal(it, &p)
			if p.ID == id {
				return string(it)
			}
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("post %s never reached the feed", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStreamDelivers: a stream carries its reader's followees' new posts,
// pushed and pulled, and the reader's own, each once and as the feed page
// shows it; deletes of posts it sent; follows and unfollows made while it
// is open; and pings.
func TestStreamDelivers(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", "hybrid", "FEEDD_PULL_THRESHOLD", "5",
			"FEEDD_STREAM_HEARTBEAT", "300ms")
		star, starTok := in.user("star")
		friend, friendTok := in.user("friend")
		other, otherTok := in.user("other")
		_, readerTok := in.user("reader")
		starID, _ := feed.ParseID(star)
		bulkFollowers(t, in, starID, 6)
		in.follow(readerTok, star)
		in.follow(readerTok, friend)
		if got := in.must(200, "GET", "/v1/users/"+star, readerTok, nil).str("delivery_mode"); got != "pull" {
			t.Fatalf("star delivery_mode = %q; want pull", got)
		}
		s := in.openStream("/v1/me/feed/stream", readerTok)

		pushed := in.post(friendTok, "pushed")
		ev := s.expectPost(pushed)
		if want := in.feedItem(readerTok, pushed); ev.Data != want {
			t.Errorf("stream data of a pushed post:\n%s\nwant the feed page's item:\n%s", ev.Data, want)
		}
		pulled := in.post(starTok, "pulled")
		ev = s.expectPost(pulled)
		if want := in.feedItem(readerTok, pulled); ev.Data != want {
			t.Errorf("stream data of a pulled post:\n%s\nwant the feed page's item:\n%s", ev.Data, want)
		}
		own := in.post(readerTok, "mine")
		s.expectPost(own)

		// Not followed: nothing; its delete: nothing either.
		stranger := in.post(otherTok, "not followed")
		in.must(204, "DELETE", "/v1/posts/"+stranger, otherTok, nil)
		in.must(204, "DELETE", "/v1/posts/"+pushed, friendTok, nil)
		if ev := s.event(10 * time.Second); ev.Event != "delete" || ev.Data != `{"id":"`+pushed+`"}` {
			t.Fatalf("after deleting a sent post: event %+v; want its delete", ev)
		}

		// Follow and unfollow while open take effect within a second.
		in.follow(readerTok, other)
		time.Sleep(time.Second)
		followed := in.post(otherTok, "now followed")
		s.expectPost(followed)
		in.must(204, "DELETE", "/v1/me/following/"+friend, readerTok, nil)
		time.Sleep(time.Second)
		in.post(friendTok, "unfollowed")
		last := in.post(otherTok, "still followed")
		s.expectPost(last) // and not the unfollowed author's
		if s.pings == 0 {
			t.Errorf("no ping in %s of a stream with a 300ms heartbeat", "several seconds")
		}
	})
}

// TestStreamModes: the stream carries posts on the push and the pull
// model alike (hybrid, both at once, is TestStreamDelivers).
func TestStreamModes(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for _, mode := range []string{"push", "pull"} {
			t.Run(mode, func(t *testing.T) {
				in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", mode)
				author, authorTok := in.user("author")
				_, readerTok := in.user("reader")
				in.follow(readerTok, author)
				s := in.openStream("/v1/me/feed/stream", readerTok)
				p := in.post(authorTok, mode)
				if ev := s.expectPost(p); ev.Data != in.feedItem(readerTok, p) {
					t.Errorf("stream data %s; want the feed page's item", ev.Data)
				}
			})
		}
	})
}

// TestStreamResumeAndLimits: Last-Event-ID replays the missed posts oldest
// first, or says reset past 100; streams are bounded per user (429) and
// per process (503); a ticket opens one stream once; shutdown ends streams
// with a retry hint.
func TestStreamResumeAndLimits(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil, "FEEDD_STREAM_MAX_PER_USER", "2", "FEEDD_STREAM_MAX", "3")
		author, authorTok := in.user("author")
		_, readerTok := in.user("reader")
		in.follow(readerTok, author)
		x1 := in.post(authorTok, "x1")
		x2 := in.post(authorTok, "x2")
		x3 := in.post(authorTok, "x3")
		in.feedItem(readerTok, x3)

		s := in.openStream("/v1/me/feed/stream", readerTok, "Last-Event-ID", x1)
		s.expectPost(x2)
		s.expectPost(x3)
		x4 := in.post(authorTok, "x4")
		s.expectPost(x4)

		// The per-user bound, then the process's.
		s2 := in.openStream("/v1/me/feed/stream", readerTok)
		if _, res := in.tryStream("/v1/me/feed/stream", readerTok); res.StatusCode != 429 {
			t.Fatalf("third stream of one user: status %d; want 429", res.StatusCode)
		}
		_, otherTok := in.user("other")
		os := in.openStream("/v1/me/feed/stream", otherTok)
		_, thirdTok := in.user("third")
		_, res := in.tryStream("/v1/me/feed/stream", thirdTok)
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Fatalf("a stream past the process's bound: status %d, Retry-After %q; want 503 with one", res.StatusCode, res.Header.Get("Retry-After"))
		}
		s2.Close()
		os.Close()
		eventually(t, func() bool { return in.canOpenStream(thirdTok) })

		// Tickets: single use. (The streams closed above leave the
		// server's count when it notices: until then, 503.)
		var tk resp
		eventually(t, func() bool {
			tk = in.must(201, "POST", "/v1/me/feed/stream-tickets", readerTok, nil)
			if tk.str("ticket") == "" || tk.str("expires_at") == "" {
				t.Fatalf("ticket answer %s; want ticket and expires_at", tk.raw)
			}
			ts, res := in.tryStream("/v1/me/feed/stream?ticket="+tk.str("ticket"), "")
			if ts == nil && res.StatusCode != 503 {
				t.Fatalf("a fresh ticket: status %d; want 200", res.StatusCode)
			}
			if ts != nil {
				ts.Close()
			}
			return ts != nil
		})
		if _, res := in.tryStream("/v1/me/feed/stream?ticket="+tk.str("ticket"), ""); res.StatusCode != 401 {
			t.Fatalf("a ticket used twice: status %d; want 401", res.StatusCode)
		}
		if _, res := in.tryStream("/v1/me/feed/stream", readerTok, "Last-Event-ID", "nope"); res.StatusCode != 400 {
			t.Fatalf("a malformed Last-Event-ID: status %d; want 400", res.StatusCode)
		}

		// Past 100 missed posts: reset.
		var newest string
		for i := range 101 {
			newest = in.post(authorTok, "bulk "+strconv.Itoa(i))
		}
		s.Close()
		in.feedItem(readerTok, newest)
		eventually(t, func() bool {
			r, _ := in.tryStream("/v1/me/feed/stream", readerTok, "Last-Event-ID", x4)
			if r == nil {
				return false
			}
			s = r
			return true
		})
		if ev := s.event(10 * time.Second); ev.Event != "reset" || ev.ID != newest {
			t.Fatalf("resume past 101 missed posts: %+v; want reset with id %s", ev, newest)
		}

		// Shutdown ends the stream with a retry hint.
		go in.stop()
		deadline := time.Now().Add(10 * time.Second)
		for {
			ev := s.Next(time.Until(deadline))
			if ev.Retry != "" {
				break
			}
		}
	})
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStreamAcrossProcesses: with Redis and RabbitMQ, posts, edits,
// deletes, follows and tickets made on one serve process reach a stream on
// another, through the fan-out of a work process; a stream resumes
// across a restart of its process (on the embedded default, of the one
// process) missing nothing.
func TestStreamAcrossProcesses(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		var api, streams *instance
		restart := func() *instance { return startFeedd(t, env, nil) }
		if env["FEEDD_REDIS_URL"] == "" {
			api = startFeedd(t, env, nil)
			streams = api
		} else {
			api = startRole(t, "serve", env, nil)
			startRole(t, "work", env, nil)
			streams = startRole(t, "serve", env, nil)
			restart = func() *instance { return startRole(t, "serve", env, nil) }
		}
		author, authorTok := api.user("author")
		other, otherTok := api.user("other")
		_, readerTok := api.user("reader")
		api.follow(readerTok, author)

		tk := api.must(201, "POST", "/v1/me/feed/stream-tickets", readerTok, nil)
		s := streams.openStream("/v1/me/feed/stream?ticket="+tk.str("ticket"), "")
		p1 := api.post(authorTok, "one")
		s.expectPost(p1)
		api.must(204, "DELETE", "/v1/posts/"+p1, authorTok, nil)
		if ev := s.event(10 * time.Second); ev.Event != "delete" || ev.Data != `{"id":"`+p1+`"}` {
			t.Fatalf("a delete on another process: %+v; want the delete of %s", ev, p1)
		}
		api.follow(readerTok, other)
		time.Sleep(time.Second)
		p2 := api.post(otherTok, "two")
		s.expectPost(p2)
		// An edit on another process: the stream's process held the post
		// as it sent it, and sends the edit, not that copy.
		api.must(200, "PATCH", "/v1/posts/"+p2, otherTok, map[string]any{"content": "two, edited"})
		if ev := s.event(10 * time.Second); ev.Event != "update" || ev.ID != "" || ev.Data != api.feedItem(readerTok, p2) {
			t.Fatalf("an edit on another process: %q; want event: update with the edited post, no id", ev.Raw)
		}

		// The stream's process goes away: a retry hint, then a resume on
		// the restarted one gets what was posted meanwhile.
		go streams.stop()
		for deadline := time.Now().Add(10 * time.Second); ; {
			if ev := s.Next(time.Until(deadline)); ev.Retry != "" {
				break
			}
		}
		streams.stop()
		streams = restart()
		if env["FEEDD_REDIS_URL"] == "" {
			api = streams
		}
		p3 := api.post(authorTok, "three")
		p4 := api.post(otherTok, "four")
		api.feedItem(readerTok, p4)
		s = streams.openStream("/v1/me/feed/stream", readerTok, "Last-Event-ID", p2)
		s.expectPost(p3)
		s.expectPost(p4)
		p5 := api.post(authorTok, "five")
		s.expectPost(p5)
	})
}

// TestStreamPerUserBoundAcrossProcesses: FEEDD_STREAM_MAX_PER_USER bounds
// a user's streams across the serve processes sharing Redis (on the
// embedded default, its one process): a stream past it is 429 on either
// process, and one closed on one process frees its place on the other.
func TestStreamPerUserBoundAcrossProcesses(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		bound := []string{"FEEDD_STREAM_MAX_PER_USER", "2"}
		var a, b *instance
		if env["FEEDD_REDIS_URL"] == "" {
			a = startFeedd(t, env, nil, bound...)
			b = a
		} else {
			a = startRole(t, "serve", env, nil, bound...)
			b = startRole(t, "serve", env, nil, bound...)
		}
		_, tok := a.user("reader")
		s1 := a.openStream("/v1/me/feed/stream", tok)
		s2 := b.openStream("/v1/me/feed/stream", tok)
		defer s2.Close()
		for _, in := range []*instance{a, b} {
			if s, res := in.tryStream("/v1/me/feed/stream", tok); res.StatusCode != 429 {
				if s != nil {
					s.Close()
				}
				t.Fatalf("a third stream of one user: status %d; want 429", res.StatusCode)
			}
		}
		s1.Close()
		eventually(t, func() bool { return b.canOpenStream(tok) })
	})
}
