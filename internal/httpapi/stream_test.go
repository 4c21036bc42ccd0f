package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/apijson"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/inmemcache"
	"github.com/feedd/feedd/internal/limit"
	"github.com/feedd/feedd/internal/stream"
	"github.com/feedd/feedd/internal/testenv"
)

// streamEnv is a server with a live stream: a real hub and announcer on
// the in-process notifier, tickets in the in-process cache, a fake
// Timeline, and a clock tests can move.
type streamEnv struct {
	t   *testing.T
	url string
	svc *fakeService
	hub *stream.Hub
	ann *stream.Announcer
	now *atomic.Int64 // unix nanoseconds
}

// followeesOf is the hub's stream.Followees on the fake's follows.
func (f *fakeService) followeesOf(ctx context.Context, reader int64) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int64
	for id := range f.follows[reader] {
		ids = append(ids, id)
	}
	return ids, nil
}

func newStreamEnv(t *testing.T, cfg stream.Config) *streamEnv {
	t.Helper()
	return newStreamEnvWith(t, cfg, nil)
}

// newStreamEnvWith is newStreamEnv with the API's Config adjusted by tweak.
func newStreamEnvWith(t *testing.T, cfg stream.Config, tweak func(*Config)) *streamEnv {
	t.Helper()
	svc := newFakeService(testNow)
	svc.seedUser(alice, "alice")
	svc.seedUser(bob, "bob")
	svc.seedUser(carol, "carol")
	svc.seedFollow(bob, alice)
	cache := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { cache.Close() })
	cfg.Members = svc.listMembersOf
	hub := stream.New(nil, cfg, cache, svc.followeesOf)
	ctx, cancel := context.WithCancel(context.Background())
	go hub.Run(ctx)
	t.Cleanup(cancel)
	now := &atomic.Int64{}
	now.Store(testNow.UnixNano())
	ann := stream.NewAnnouncer(cache)
	svc.announcer = ann
	apiCfg := Config{
		AdminToken: testAdmin,
		JWTSecret:  []byte(testSecret),
		Now:        func() time.Time { return time.Unix(0, now.Load()) },
		Live:       &Live{Hub: hub, Tickets: cache},
	}
	if tweak != nil {
		tweak(&apiCfg)
	}
	srv := httptest.NewServer(NewServer(slog.New(slog.DiscardHandler), apiCfg, svc, svc, nil, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(hub.Shutdown) // before srv.Close, which waits for the streams
	return &streamEnv{t: t, url: srv.URL, svc: svc, hub: hub, ann: ann, now: now}
}

// sse is an open stream read block by block (the text up to a blank line).
type sse struct {
	*testenv.SSE
	t *testing.T
}

// open sends GET /v1/me/feed/stream (query is appended as is) and returns
// the response; on 200 also the stream, past its ": open".
func (e *streamEnv) open(token, query string, hdr ...string) (*sse, *http.Response) {
	e.t.Helper()
	st, res := testenv.OpenSSE(e.t, e.url+"/v1/me/feed/stream"+query, token, hdr...)
	if st == nil {
		return nil, res
	}
	s := &sse{SSE: st, t: e.t}
	if got := s.next(); got != ": open\n\n" {
		e.t.Fatalf("first block %q; want \": open\\n\\n\"", got)
	}
	return s, res
}

func (s *sse) next() string {
	s.t.Helper()
	return s.Next(5 * time.Second).Raw
}

// event returns the next block that is not a ping.
func (s *sse) event() string {
	s.t.Helper()
	for {
		if b := s.next(); b != ": ping\n\n" {
			return b
		}
	}
}

// call sends an empty-bodied request as user and checks its status.
func (e *streamEnv) call(user int64, method, path string, want int) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+userToken(e.t, user))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != want {
		e.t.Fatalf("%s %s as %d: %d; want %d", method, path, user, res.StatusCode, want)
	}
}

// feedItem is post id's item in reader's feed page, in bytes.
func (e *streamEnv) feedItem(reader, id int64) string {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.url+"/v1/me/feed?limit=100", nil)
	req.Header.Set("Authorization", "Bearer "+userToken(e.t, reader))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var page struct{ Items []json.RawMessage }
	if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
		e.t.Fatal(err)
	}
	for _, it := range page.Items {
		var p struct{ ID string }
		_ = json.Unmarshal(it, &p)
		if p.ID == feed.FormatID(id) {
			return string(it)
		}
	}
	e.t.Fatalf("post %d is not in %d's feed", id, reader)
	return ""
}

func TestStreamFraming(t *testing.T) {
	e := newStreamEnv(t, stream.Config{Heartbeat: 50 * time.Millisecond})
	s, res := e.open(userToken(t, bob), "")
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache"} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s = %q; want %q", k, got, want)
		}
	}
	if got := s.next(); got != ": ping\n\n" {
		t.Fatalf("an idle stream sent %q; want a ping", got)
	}
	p := e.svc.seedPost(alice, "hello\nworld")
	if err := e.ann.PostCreated(t.Context(), alice, p.ID); err != nil {
		t.Fatal(err)
	}
	id := feed.FormatID(p.ID)
	want := "event: post\nid: " + id + "\ndata: " + e.feedItem(bob, p.ID) + "\n\n"
	if got := s.event(); got != want {
		t.Fatalf("post event:\n%q\nwant\n%q", got, want)
	}
	// Again (a redelivered post event): not sent twice. A post of someone
	// bob does not follow, and the delete of a post never sent: nothing.
	other := e.svc.seedPost(carol, "not followed")
	for _, f := range []func() error{
		func() error { return e.ann.PostCreated(t.Context(), alice, p.ID) },
		func() error { return e.ann.PostCreated(t.Context(), carol, other.ID) },
		func() error { return e.ann.PostDeleted(t.Context(), carol, other.ID) },
		func() error { return e.ann.PostDeleted(t.Context(), alice, p.ID) },
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.event(), "event: delete\ndata: {\"id\":\""+id+"\"}\n\n"; got != want {
		t.Fatalf("after a repeat, a stranger's post and two deletes: %q; want only %q", got, want)
	}
}

func TestStreamResume(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	var ids []int64
	for range 3 {
		ids = append(ids, e.svc.seedPost(alice, "x").ID)
	}
	s, _ := e.open(userToken(t, bob), "", "Last-Event-ID", feed.FormatID(ids[0]))
	for _, id := range ids[1:] {
		if got := s.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(id)+"\n") {
			t.Fatalf("resumed event %q; want post %d", got, id)
		}
	}
	// Announcements arriving late, of a resumed post and of one the
	// client had: not sent again.
	for _, id := range []int64{ids[2], ids[0]} {
		if err := e.ann.PostCreated(t.Context(), alice, id); err != nil {
			t.Fatal(err)
		}
	}
	late := e.svc.seedPost(alice, "late")
	if err := e.ann.PostCreated(t.Context(), alice, late.ID); err != nil {
		t.Fatal(err)
	}
	if got := s.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(late.ID)+"\n") {
		t.Fatalf("after a resumed post's late announcement: %q; want the next post", got)
	}

	var newest int64
	for range 101 {
		newest = e.svc.seedPost(alice, "more").ID
	}
	s, _ = e.open(userToken(t, bob), "", "Last-Event-ID", feed.FormatID(late.ID))
	if got, want := s.event(), "event: reset\nid: "+feed.FormatID(newest)+"\ndata: {}\n\n"; got != want {
		t.Fatalf("resume past 101 posts: %q; want %q", got, want)
	}

	if _, res := e.open(userToken(t, bob), "", "Last-Event-ID", "12x"); res.StatusCode != 400 {
		t.Fatalf("malformed Last-Event-ID: status %d; want 400", res.StatusCode)
	}
}

// A browser reconnects with a fresh ticket and names its last post in the
// query (EventSource sends Last-Event-ID only to the URL it first opened);
// the header, when both come, wins.
func TestStreamResumeFromQuery(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	var ids []int64
	for range 3 {
		ids = append(ids, e.svc.seedPost(alice, "x").ID)
	}
	s, _ := e.open("", "?ticket="+e.ticket(bob)+"&last_event_id="+feed.FormatID(ids[0]))
	for _, id := range ids[1:] {
		if got := s.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(id)+"\n") {
			t.Fatalf("resumed event %q; want post %d", got, id)
		}
	}
	s, _ = e.open(userToken(t, bob), "?last_event_id="+feed.FormatID(ids[0]), "Last-Event-ID", feed.FormatID(ids[1]))
	if got := s.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(ids[2])+"\n") {
		t.Fatalf("with the header and the query: %q; want post %d only (the header's resume)", got, ids[2])
	}
	if _, res := e.open(userToken(t, bob), "?last_event_id=12x"); res.StatusCode != 400 {
		t.Fatalf("malformed last_event_id: status %d; want 400", res.StatusCode)
	}
}

// ticket mints a stream ticket for user.
func (e *streamEnv) ticket(user int64) string {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.url+"/v1/me/feed/stream-tickets", nil)
	req.Header.Set("Authorization", "Bearer "+userToken(e.t, user))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var tk ticketJSON
	if err := json.NewDecoder(res.Body).Decode(&tk); err != nil || res.StatusCode != 201 {
		e.t.Fatalf("mint a ticket: %d %v", res.StatusCode, err)
	}
	return tk.Ticket
}

func TestStreamTickets(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	mint := func(token string) (int, ticketJSON) {
		t.Helper()
		req, _ := http.NewRequest("POST", e.url+"/v1/me/feed/stream-tickets", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var tk ticketJSON
		if res.StatusCode == 201 {
			b, _ := io.ReadAll(res.Body)
			if err := json.Unmarshal(b, &tk); err != nil {
				t.Fatalf("ticket body %s: %v", b, err)
			}
		}
		return res.StatusCode, tk
	}
	status, tk := mint(userToken(t, bob))
	if status != 201 || tk.Ticket == "" || tk.ExpiresAt != apijson.Time(testNow.Add(time.Minute)) {
		t.Fatalf("mint: %d %+v; want 201 with a ticket expiring in 60s", status, tk)
	}
	if status, _ := mint(testAdmin); status != 403 {
		t.Errorf("mint with the admin token: %d; want 403", status)
	}
	// With a header, the header counts and the ticket is left unused.
	if _, res := e.open(userToken(t, carol), "?ticket="+tk.Ticket); res.StatusCode != 200 {
		t.Fatalf("header and ticket: %d; want 200", res.StatusCode)
	}
	if _, res := e.open("", "?ticket="+tk.Ticket); res.StatusCode != 200 {
		t.Fatalf("a fresh ticket: %d; want 200", res.StatusCode)
	}
	if _, res := e.open("", "?ticket="+tk.Ticket); res.StatusCode != 401 {
		t.Fatalf("a ticket used twice: %d; want 401", res.StatusCode)
	}
	if _, res := e.open("", "?ticket=made-up"); res.StatusCode != 401 {
		t.Fatalf("an unknown ticket: %d; want 401", res.StatusCode)
	}
	_, tk = mint(userToken(t, bob))
	e.now.Add(int64(60 * time.Second))
	if _, res := e.open("", "?ticket="+tk.Ticket); res.StatusCode != 401 {
		t.Fatalf("a ticket 60s old: %d; want 401", res.StatusCode)
	}
}

func TestStreamLimits(t *testing.T) {
	e := newStreamEnv(t, stream.Config{MaxPerUser: 1, Max: 2})
	e.open(userToken(t, bob), "")
	if _, res := e.open(userToken(t, bob), ""); res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream of a user: %d, Retry-After %q; want 429 with one", res.StatusCode, res.Header.Get("Retry-After"))
	}
	e.open(userToken(t, carol), "")
	_, res := e.open(userToken(t, alice), "")
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Fatalf("past the process's bound: %d, Retry-After %q; want 503 with one", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if _, res := e.open(testAdmin, ""); res.StatusCode != 403 {
		t.Fatalf("the admin token: %d; want 403", res.StatusCode)
	}
}

func TestStreamShutdown(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	s, _ := e.open(userToken(t, bob), "")
	e.hub.Shutdown()
	if got := s.event(); !strings.HasPrefix(got, "retry: ") {
		t.Fatalf("on shutdown: %q; want a retry hint", got)
	}
	if !s.Ended(5 * time.Second) {
		t.Fatal("the stream goes on after its retry hint")
	}
	if _, res := e.open(userToken(t, carol), ""); res.StatusCode != 503 {
		t.Fatalf("a stream after shutdown: %d; want 503", res.StatusCode)
	}
}

// TestStreamHoldsNoRequestSlot: an open stream holds neither its user's
// in-flight slot nor one of the reads', which it would hold for hours;
// opening one spends a read of the user's token bucket.
func TestStreamHoldsNoRequestSlot(t *testing.T) {
	e := newStreamEnvWith(t, stream.Config{}, func(c *Config) {
		c.UserSlots = limit.NewUserSlots(1)
		c.Shed = limit.NewShedder(map[limit.Class]int{limit.Read: 1, limit.Write: 1}, time.Millisecond)
		c.Rates = limit.NewRates(limit.Config{PerUser: map[limit.Class]limit.Rule{limit.Read: {Rate: 0.001, Burst: 3}}})
	})
	e.open(userToken(t, bob), "")
	e.open(userToken(t, carol), "")
	req, _ := http.NewRequest("GET", e.url+"/v1/me/feed", nil)
	req.Header.Set("Authorization", "Bearer "+userToken(t, bob))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("a feed read beside two open streams, with one slot per user and one for reads: %d; want 200", res.StatusCode)
	}
	e.open(userToken(t, bob), "") // bob's third read
	if _, res := e.open(userToken(t, bob), ""); res.StatusCode != 429 {
		t.Fatalf("a stream opened past the user's read bucket: %d; want 429", res.StatusCode)
	}
}

// TestStreamHidesMuted: a post of an author the reader muted is not sent,
// as the feed does not show it; after the unmute the author's posts come
// again.
func TestStreamHidesMuted(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	if err := e.svc.Follow(t.Context(), bob, carol); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Mute(t.Context(), bob, alice); err != nil {
		t.Fatal(err)
	}
	s, _ := e.open(userToken(t, bob), "")
	// Events are sent in order: carol's post, announced after the muted
	// one, shows that the muted one was passed over.
	muted := e.svc.seedPost(alice, "while muted")
	shown := e.svc.seedPost(carol, "not muted")
	for _, a := range []struct{ author, post int64 }{{alice, muted.ID}, {carol, shown.ID}} {
		if err := e.ann.PostCreated(t.Context(), a.author, a.post); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(shown.ID)+"\n") {
		t.Fatalf("first event %q; want carol's post (%d), not the muted one (%d)", got, shown.ID, muted.ID)
	}
	// The stream keeps bob's hidden authors: the unmute, made through
	// the API, is announced, and the stream reads them again.
	e.call(bob, "DELETE", "/v1/me/mutes/"+feed.FormatID(alice), 204)
	back := e.svc.seedPost(alice, "after the unmute")
	if err := e.ann.PostCreated(t.Context(), alice, back.ID); err != nil {
		t.Fatal(err)
	}
	if got := s.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(back.ID)+"\n") {
		t.Fatalf("event %q; want the post after the unmute (%d)", got, back.ID)
	}
	// A mute while the stream is open, and a block by carol (which hides
	// each from the other, announced to bob too), take effect at once.
	e.call(bob, "PUT", "/v1/me/mutes/"+feed.FormatID(alice), 204)
	e.call(carol, "PUT", "/v1/me/blocks/"+feed.FormatID(bob), 204)
	mutedAgain := e.svc.seedPost(alice, "muted again")
	blocked := e.svc.seedPost(carol, "blocked")
	own := e.svc.seedPost(bob, "bob's own")
	for _, a := range []struct{ author, post int64 }{{alice, mutedAgain.ID}, {carol, blocked.ID}, {bob, own.ID}} {
		if err := e.ann.PostCreated(t.Context(), a.author, a.post); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(own.ID)+"\n") {
		t.Fatalf("event %q; want bob's own post (%d), not the muted (%d) nor the blocked one (%d)", got, own.ID, mutedAgain.ID, blocked.ID)
	}
}

// TestStreamTicketKeptWhenRefused: a stream refused for a limit (429 per
// user, 503 per process) leaves its ticket unspent, so the client's retry
// within the ticket's minute works; the open that succeeds spends it.
func TestStreamTicketKeptWhenRefused(t *testing.T) {
	e := newStreamEnv(t, stream.Config{MaxPerUser: 1, Max: 2})
	mint := func(user int64) string {
		t.Helper()
		req, _ := http.NewRequest("POST", e.url+"/v1/me/feed/stream-tickets", nil)
		req.Header.Set("Authorization", "Bearer "+userToken(t, user))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var tk ticketJSON
		if err := json.NewDecoder(res.Body).Decode(&tk); err != nil || res.StatusCode != 201 {
			t.Fatalf("mint: %d, %v", res.StatusCode, err)
		}
		return tk.Ticket
	}
	// Open with a ticket once the hub has room: the ticket, refused until
	// then, is still good.
	openOnce := func(ticket string, refused int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			s, res := e.open("", "?ticket="+ticket)
			if s != nil {
				s.Close()
				break
			}
			if res.StatusCode != refused || time.Now().After(deadline) {
				t.Fatalf("a ticket of a refused open: status %d; want %d, then 200 once there is room", res.StatusCode, refused)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, res := e.open("", "?ticket="+ticket); res.StatusCode != 401 {
			t.Fatalf("the ticket after its stream opened: %d; want 401, spent", res.StatusCode)
		}
	}

	bobs, _ := e.open(userToken(t, bob), "")
	tk := mint(bob)
	for range 3 {
		if _, res := e.open("", "?ticket="+tk); res.StatusCode != 429 {
			t.Fatalf("bob's second stream: %d; want 429", res.StatusCode)
		}
	}
	bobs.Close()
	openOnce(tk, 429)

	// The same past the process's bound. Bob's stream that openOnce
	// closed counts until the server sees it gone: wait for his next.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, res := e.open(userToken(t, bob), "")
		if s != nil {
			break
		}
		if res.StatusCode != 429 || time.Now().After(deadline) {
			t.Fatalf("bob's stream after his last closed: %d; want 200 once the server saw the close", res.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	carols, _ := e.open(userToken(t, carol), "")
	tk = mint(alice)
	if _, res := e.open("", "?ticket="+tk); res.StatusCode != 503 {
		t.Fatalf("a stream past the process's bound: %d; want 503", res.StatusCode)
	}
	carols.Close()
	openOnce(tk, 503)
}

// TestStreamUpdate: PATCH of a post a stream sent sends it again as
// event: update, with no id: line (the client's Last-Event-ID stays the
// newest post it was sent) and the post as the feed page shows it, with
// edited_at; an edit of a post the stream never sent sends nothing.
func TestStreamUpdate(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	s, _ := e.open(userToken(t, bob), "")
	p := e.svc.seedPost(alice, "first")
	unsent := e.svc.seedPost(alice, "never announced")
	if err := e.ann.PostCreated(t.Context(), alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if got := s.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(p.ID)+"\n") {
		t.Fatalf("first event %q; want post %d", got, p.ID)
	}
	edit := func(as, id int64, content string, want int) {
		t.Helper()
		req, _ := http.NewRequest("PATCH", e.url+"/v1/posts/"+feed.FormatID(id), strings.NewReader(`{"content":"`+content+`"}`))
		req.Header.Set("Authorization", "Bearer "+userToken(t, as))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("PATCH post %d as %d: %d; want %d", id, as, res.StatusCode, want)
		}
	}
	edit(alice, unsent.ID, "edited, never sent", 200)
	edit(alice, p.ID, "edited", 200)
	item := e.feedItem(bob, p.ID)
	if !strings.Contains(item, `"edited_at":"`) || !strings.Contains(item, `"content":"edited"`) {
		t.Fatalf("the feed page's item %s; want the edit with edited_at", item)
	}
	if got, want := s.event(), "event: update\ndata: "+item+"\n\n"; got != want {
		t.Fatalf("after editing a sent post and one never sent: %q; want only %q", got, want)
	}
	// A refused edit (not the author's) sends nothing; the delete after
	// it is the next event.
	edit(carol, p.ID, "x", 403)
	if err := e.ann.PostDeleted(t.Context(), alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if got := s.event(); !strings.HasPrefix(got, "event: delete\n") {
		t.Fatalf("after a refused edit and a delete: %q; want the delete", got)
	}
}

// newStreamEnvOf is the API in front of svc and lk with a hub whose every
// reader follows alice; fake is what svc and lk fake.
func newStreamEnvOf(t *testing.T, fake *fakeService, svc Timeline, lk Likes) *streamEnv {
	t.Helper()
	cache := inmemcache.New(inmemcache.Options{})
	t.Cleanup(func() { cache.Close() })
	followees := func(ctx context.Context, reader int64) ([]int64, error) { return []int64{alice}, nil }
	hub := stream.New(nil, stream.Config{}, cache, followees)
	ctx, cancel := context.WithCancel(context.Background())
	go hub.Run(ctx)
	t.Cleanup(cancel)
	ann := stream.NewAnnouncer(cache)
	fake.announcer = ann
	cfg := Config{AdminToken: testAdmin, JWTSecret: []byte(testSecret), Now: func() time.Time { return testNow }, Live: &Live{Hub: hub, Tickets: cache}}
	srv := httptest.NewServer(NewServer(slog.New(slog.DiscardHandler), cfg, svc, lk, nil, nil))
	t.Cleanup(srv.Close)
	t.Cleanup(hub.Shutdown) // before srv.Close, which waits for the streams
	return &streamEnv{t: t, url: srv.URL, svc: fake, hub: hub, ann: ann}
}

// countingLikes is the fake's likes with the bulk call of the likes
// service, counting its calls and the readers asked about.
type countingLikes struct {
	*fakeService
	calls, readers atomic.Int64
}

func (l *countingLikes) LikedBy(ctx context.Context, p feed.Post, readers []int64) (int64, map[int64]bool, bool, error) {
	l.calls.Add(1)
	l.readers.Add(int64(len(readers)))
	liked := map[int64]bool{}
	var count int64
	for _, r := range readers {
		st, _, err := l.fakeService.LikeStates(ctx, r, []feed.Post{p})
		if err != nil {
			return 0, nil, false, err
		}
		count, liked[r] = st[p.ID].Count, st[p.ID].LikedByMe
	}
	return count, liked, true, nil
}

// TestStreamRendersOncePerPost: a post to many open streams of the
// process is rendered once, with one bulk likes call for all its readers
// (each reader once, however many streams it has), and every stream gets
// it with its own reader's liked_by_me, exactly as its feed page shows it.
func TestStreamRendersOncePerPost(t *testing.T) {
	const readers = 12
	svc := newFakeService(testNow)
	svc.seedUser(alice, "alice")
	for i := range readers {
		svc.seedUser(int64(100+i), fmt.Sprintf("reader%d", i))
		svc.seedFollow(int64(100+i), alice)
	}
	lk := &countingLikes{fakeService: svc}
	env := newStreamEnvOf(t, svc, svc, lk)
	ann := env.ann

	// Reader 100 has two streams: one reader, asked about once.
	var streams []*testenv.SSE
	var of []int64
	for i := range readers + 1 {
		r := int64(100 + max(i-1, 0))
		st, res := testenv.OpenSSE(t, env.url+"/v1/me/feed/stream", userToken(t, r))
		if st == nil {
			t.Fatalf("reader %d: status %d", r, res.StatusCode)
		}
		if got := st.Next(5 * time.Second).Raw; got != ": open\n\n" {
			t.Fatalf("reader %d: first block %q", r, got)
		}
		streams, of = append(streams, st), append(of, r)
	}
	p := svc.seedPost(alice, "to everyone at once")
	// Two readers liked it before it reached the streams.
	for _, r := range []int64{101, 105} {
		if _, err := svc.Like(t.Context(), r, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := ann.PostCreated(t.Context(), alice, p.ID); err != nil {
		t.Fatal(err)
	}
	for i, st := range streams {
		want := "event: post\nid: " + feed.FormatID(p.ID) + "\ndata: " + env.feedItem(of[i], p.ID) + "\n\n"
		if got := st.Next(5 * time.Second).Raw; got != want {
			t.Fatalf("reader %d got %q; want %q", of[i], got, want)
		}
		liked := of[i] == 101 || of[i] == 105
		if got := strings.Contains(want, `"liked_by_me":true`); got != liked {
			t.Fatalf("reader %d: liked_by_me %v in %s; want %v", of[i], got, want, liked)
		}
	}
	if c, r := lk.calls.Load(), lk.readers.Load(); c != 1 || r != readers {
		t.Errorf("likes asked %d times about %d readers; want once about %d", c, r, readers)
	}
}

// hiddenFails is the fake service whose hidden authors of one reader
// fail to read while fail is set.
type hiddenFails struct {
	*fakeService
	reader int64
	fail   atomic.Bool
}

func (h *hiddenFails) Hidden(ctx context.Context, viewer int64) (feed.Hidden, error) {
	if viewer == h.reader && h.fail.Load() {
		return feed.Hidden{}, errors.New("hidden authors unreadable")
	}
	return h.fakeService.Hidden(ctx, viewer)
}

// TestStreamHiddenReadFailsAlone: when one reader's hidden authors cannot
// be read for a post, that reader's stream ends with a retry: hint (it
// resumes, missing nothing), and the process's other streams get the
// post all the same.
func TestStreamHiddenReadFailsAlone(t *testing.T) {
	fake := newFakeService(testNow)
	for _, u := range []int64{alice, bob, carol} {
		fake.seedUser(u, fmt.Sprint("u", u))
	}
	fake.seedFollow(bob, alice)
	fake.seedFollow(carol, alice)
	svc := &hiddenFails{fakeService: fake, reader: carol}
	env := newStreamEnvOf(t, fake, svc, fake)
	ann := env.ann
	b, _ := env.open(userToken(t, bob), "")
	c, _ := env.open(userToken(t, carol), "")
	// Carol's change is announced (her stream forgets her hidden
	// authors), and reading them again fails.
	svc.fail.Store(true)
	if err := ann.FollowsChanged(t.Context(), carol); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the announcement reaches the hub
	p := fake.seedPost(alice, "to both")
	if err := ann.PostCreated(t.Context(), alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if got := b.event(); !strings.HasPrefix(got, "event: post\nid: "+feed.FormatID(p.ID)+"\n") {
		t.Fatalf("bob got %q; want the post", got)
	}
	if got := c.event(); !strings.HasPrefix(got, "retry: ") {
		t.Fatalf("carol got %q; want a retry: hint, her stream ending", got)
	}
}
