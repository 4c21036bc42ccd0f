// Package httpapi is feedd's HTTP API: the JSON contract that clients and
// test suites are written against. It turns requests into calls on the
// timeline (Timeline), the likes (Likes) and the pages that join the two
// (package pages), renders what they return, turns domain error codes into
// statuses (one table, in errors.go), and owns what only the edge knows
// about: bearer tokens, request bodies, cursors in query strings, request
// logs, latency metrics and panics. It knows nothing of the backends
// behind the two services.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/limit"
	"github.com/feedd/feedd/internal/stream"
)

// Timeline is what the API needs of the timeline (the read engine: feeds,
// posts, markers) and of the writes beside it (package social: users,
// tokens, follows, mutes and blocks, posts' changes, deletion); Likes, in
// likes.go, is the rest. cmd/feedd passes the two services side by side as
// one value: one interface keeps the route table and the test fakes
// simple, and the API does not care which room answers a call. It is
// declared here, where it is used, so the API can be tested against a fake
// and the domain can grow without the API noticing.
type Timeline interface {
	// CreateUser creates a user, with a handle unless "" (folded to lower
	// case); id 0 asks for a generated id. ECONFLICT if the id is taken,
	// EHANDLETAKEN if the handle is.
	CreateUser(ctx context.Context, id int64, name, handle string) (feed.User, error)
	// UpdateUser changes a user's name, handle or both (a Handle of ""
	// removes it) and returns the user; EHANDLETAKEN if the handle is
	// another's, and then nothing changes.
	UpdateUser(ctx context.Context, user int64, e feed.UserEdit) (feed.User, error)
	// UserByHandle returns the user of a handle, whatever its case, as
	// viewer sees it; ENOTFOUND if none, or if a block stands between.
	UserByHandle(ctx context.Context, viewer int64, handle string) (feed.User, error)
	// SearchUsers returns up to n users for a query, handle prefix
	// matches first, then name matches, leaving out users a block stands
	// between with viewer (feed.ParseUserQuery).
	SearchUsers(ctx context.Context, viewer int64, q string, n int) ([]feed.User, error)
	// Relationship says how user stands to other; ENOTFOUND for an unknown
	// other or one who blocks user, EINVALID for oneself.
	Relationship(ctx context.Context, user, other int64) (feed.Relationship, error)
	// Settings returns a reader's settings; SetSettings replaces them
	// (the home feed's reply rule applies from the next page on).
	Settings(ctx context.Context, user int64) (feed.Settings, error)
	SetSettings(ctx context.Context, user int64, st feed.Settings) error
	// User returns a user with counts; ENOTFOUND if unknown.
	User(ctx context.Context, id int64) (feed.User, error)
	// Followers returns up to n followers of user with ids above after,
	// ascending, and whether more exist.
	Followers(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error)
	// Following is Followers for the users that user follows.
	Following(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error)
	// Follow is idempotent; ENOTFOUND for an unknown followee, EINVALID for
	// oneself.
	Follow(ctx context.Context, follower, followee int64) error
	// FollowShowing is Follow with the follower's choice of the
	// followee's reposts in its home feed (nil: a new follow shows them,
	// an existing one keeps its choice).
	FollowShowing(ctx context.Context, follower, followee int64, reposts *bool) error
	// Unfollow is idempotent.
	Unfollow(ctx context.Context, follower, followee int64) error
	// Repost and Unrepost make or take away user's repost of post id
	// (of its original when id is a repost), idempotently, and return the
	// original's id; ENOTFOUND for an unknown or deleted post
	// (docs/reposts.md).
	Repost(ctx context.Context, user, id int64) (int64, error)
	Unrepost(ctx context.Context, user, id int64) (int64, error)
	// Counts returns posts' reply and repost counts (replies.Service):
	// those this process holds, else SQL's.
	Counts(ctx context.Context, ids []int64) (map[int64]feed.Counts, error)
	// FollowBatch makes the follows, then the unfollows, each in order,
	// and returns each pair's outcome (feed.EdgeCreated and the rest) in
	// the same order; EINVALID or EBATCHTOOLARGE for a batch that fails
	// feed.CheckFollowBatch, and then nothing changes.
	FollowBatch(ctx context.Context, follow, unfollow []feed.Edge) (followed, unfollowed []string, err error)
	// Publish creates a post. With a non-empty idem.Key (and the
	// request's fingerprint) a repeat from the same author returns the
	// post the first call created; EKEYREUSED when its fingerprint
	// differs, ENOTFOUND when that post was deleted (feed.Idempotency).
	Publish(ctx context.Context, author int64, d feed.Draft, idem feed.Idempotency) (feed.Post, error)
	// Post returns a post; ENOTFOUND if unknown or deleted.
	Post(ctx context.Context, id int64) (feed.Post, error)
	// PostVersion is Post of a copy at feed.Post.Version v or later: an
	// edit another process made and announced.
	PostVersion(ctx context.Context, id, v int64) (feed.Post, error)
	// DeletePost deletes a post as actor; EFORBIDDEN if actor is not its
	// author, ENOTFOUND if unknown.
	DeletePost(ctx context.Context, actor, id int64) error
	// EditPost changes a post's content, data or both as actor and
	// returns it edited; EFORBIDDEN if actor is not its author, ENOTFOUND
	// if unknown or deleted.
	EditPost(ctx context.Context, actor, id int64, e feed.PostEdit) (feed.Post, error)
	// AuthorPosts returns up to n of author's posts with ids below before
	// (0: from the newest), newest first; ENOTFOUND for an unknown author.
	AuthorPosts(ctx context.Context, author, before int64, n int) ([]feed.Post, bool, error)
	// Feed returns up to n posts of reader's home feed with ids below
	// before (0: from the newest), newest first, with the next page's
	// position and whether the page was served degraded.
	Feed(ctx context.Context, reader, before int64, n int) (feed.Page, error)
	// RankedFeed returns up to n posts of reader's ranked home feed from
	// position pos (0: a new ranking), with the next page's position;
	// ECURSOREXPIRED when pos's ranking has expired (package ranked).
	RankedFeed(ctx context.Context, reader, pos int64, n int) (feed.Page, error)
	// RankedListFeed is RankedFeed of reader's list.
	RankedListFeed(ctx context.Context, reader, list, pos int64, n int) (feed.Page, error)
	// FeedSince returns up to n posts of reader's home feed with ids above
	// after, newest first, from SQL (not from caches a fan-out may not
	// have reached yet), and whether there were more.
	FeedSince(ctx context.Context, reader, after int64, n int) ([]feed.Post, bool, error)
	// ListFeedSince is FeedSince of reader's list.
	ListFeedSince(ctx context.Context, reader, list, after int64, n int) ([]feed.Post, bool, error)
	// ListShows reports whether post p belongs in reader's list by the
	// list's rule for replies (its live stream asks).
	ListShows(ctx context.Context, reader, list int64, p feed.Post) (bool, error)
	// Notifications returns up to n of reader's notification groups below
	// before (0: from the newest), of kinds (nil: all), newest first,
	// with the users, posts and likes that render them (notices.Service).
	Notifications(ctx context.Context, reader, before int64, kinds []feed.NoticeKind, n int) (feed.NoticePage, error)
	// NotificationsMarker and SetNotificationsMarker are the
	// notifications' read marker, as Marker and SetMarker are the home
	// feed's; the unread count counts groups.
	NotificationsMarker(ctx context.Context, reader int64) (feed.Marker, error)
	SetNotificationsMarker(ctx context.Context, reader, lastRead int64) (feed.Marker, error)
	// Marker returns reader's home-feed read marker with its unread count.
	Marker(ctx context.Context, reader int64) (feed.Marker, error)
	// SetMarker moves reader's marker forward to lastRead (never back) and
	// returns it as Marker does; EINVALID if lastRead is not a post.
	SetMarker(ctx context.Context, reader, lastRead int64) (feed.Marker, error)
	// TokenGeneration returns the generation a token of user must carry to
	// be accepted; ENOTFOUND if the user does not exist. It is asked on
	// every use of a user token, so it answers from memory, at most a
	// second old.
	TokenGeneration(ctx context.Context, user int64) (int64, error)
	// CurrentTokenGeneration is TokenGeneration read from the truth, for a
	// token about to be minted.
	CurrentTokenGeneration(ctx context.Context, user int64) (int64, error)
	// RevokeTokens refuses every token of user minted before the call;
	// ENOTFOUND if the user does not exist.
	RevokeTokens(ctx context.Context, user int64) error
	// Mute and Unmute set user's mute of target, Block and Unblock its
	// block, idempotently; EINVALID for oneself, ENOTFOUND for an unknown
	// target. Block removes the follow edges both ways.
	Mute(ctx context.Context, user, target int64) error
	Unmute(ctx context.Context, user, target int64) error
	Block(ctx context.Context, blocker, blocked int64) error
	Unblock(ctx context.Context, blocker, blocked int64) error
	// Mutes and Blocks page user's mutes and blocks as Followers does.
	Mutes(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error)
	Blocks(ctx context.Context, user, after int64, n int) ([]feed.User, bool, error)
	// Export writes everything feedd holds about user to w as JSON Lines
	// (package export); ENOTFOUND for an unknown or deleted user before
	// anything is written. An error after that leaves w with a partial
	// document.
	Export(ctx context.Context, user int64, w io.Writer) error
	// CreateList, Lists, List, UpdateList and DeleteList are the
	// owner's lists (another user's list is ENOTFOUND); ELIMIT past
	// feed.MaxLists. AddListMember and RemoveListMember are idempotent
	// (EBLOCKED for a user a block stands between, ELIMIT past
	// feed.MaxListMembers); ListMembers pages a list's members as
	// Followers does; ListFeed is the members' posts as Feed pages the
	// home feed.
	CreateList(ctx context.Context, owner int64, name, replies string, exclusive bool) (feed.List, error)
	Lists(ctx context.Context, owner int64) ([]feed.List, error)
	List(ctx context.Context, owner, id int64) (feed.List, error)
	UpdateList(ctx context.Context, owner, id int64, e feed.ListEdit) (feed.List, error)
	DeleteList(ctx context.Context, owner, id int64) error
	AddListMember(ctx context.Context, owner, id, member int64) error
	RemoveListMember(ctx context.Context, owner, id, member int64) error
	ListMembers(ctx context.Context, owner, id, after int64, n int) ([]feed.User, bool, error)
	ListFeed(ctx context.Context, reader, list, before int64, n int) (feed.Page, error)
	// ListMarker and SetListMarker are a list's read marker, as Marker
	// and SetMarker are the home feed's.
	ListMarker(ctx context.Context, reader, list int64) (feed.Marker, error)
	SetListMarker(ctx context.Context, reader, list, lastRead int64) (feed.Marker, error)
	// Hidden returns what viewer (0: the admin) does not see.
	Hidden(ctx context.Context, viewer int64) (feed.Hidden, error)
	// Replies is a page of a post's live direct replies above after,
	// oldest first, and Thread a post's context, as viewer sees them
	// (replies.Service). ENOTFOUND for an unknown or deleted post.
	Replies(ctx context.Context, viewer, parent, after int64, n int) (feed.Page, error)
	Thread(ctx context.Context, viewer, id int64) (feed.Thread, error)
	// DeleteUser deletes a user: at once for every read, then their data
	// in the background; a repeat while the purge runs answers the same.
	// ENOTFOUND if the user does not exist.
	DeleteUser(ctx context.Context, user int64) (feed.Purge, error)
	// Purge returns the state of a user's last deletion; ENOTFOUND if
	// none was asked.
	Purge(ctx context.Context, user int64) (feed.Purge, error)
	// Ready returns nil when every backend answers.
	Ready(ctx context.Context) error
}

// checker is a Timeline that reports each dependency by name, for /readyz;
// a Timeline without it is ready or not as a whole.
type checker interface {
	Checks(ctx context.Context) []feed.Check
}

// Config is the API's own configuration; run builds it from flags and the
// environment.
type Config struct {
	// AdminToken is the operator's bearer token. Empty disables admin
	// access rather than letting an empty token through.
	AdminToken string
	// JWTSecret signs and verifies user tokens (HS256). Empty disables
	// user tokens.
	JWTSecret []byte
	// MaxBodyBytes bounds request bodies; 0 means 1 MiB.
	MaxBodyBytes int64
	// BodyTimeout is how long after its headers a request's body may take
	// to arrive in full; later, the request gets 408 and its connection
	// closes. 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// WriteTimeout bounds each write of an answer to its client (the
	// live stream's events have their own); later, the connection
	// closes. 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Now is the clock tokens are issued and checked against; nil means
	// time.Now. Tests pin it.
	Now func() time.Time

	// The defences; nil turns one off. Rates are the token buckets (429),
	// UserSlots bounds each user's requests in flight (429), Shed bounds
	// the requests in flight per class (503), Switches are the
	// degradation switches (L3 makes writes answer 503) that the admin
	// routes show and change.
	Rates     *limit.Rates
	UserSlots *limit.UserSlots
	Shed      *limit.Shedder
	Switches  *degrade.Switches

	// Live is the live stream (nil: it answers 503).
	Live *Live

	// Console is the ops console's figures and actions (nil: its routes
	// answer 404).
	Console Console

	// Freshness keeps each user's reads as fresh as that user's own
	// writes when reads may go to a lagging replica (nil: reads need no
	// help, there is no replica).
	Freshness Freshness

	// Pages are the web pages served beside the API (nil: none): the
	// paths outside the route table that they claim, and nothing under
	// /v1/, whose unknown paths keep their JSON 404.
	Pages Pages
}

// Freshness remembers users' writes and makes their reads see them
// (internal/freshness).
type Freshness interface {
	// Reading returns the context a read of user runs with.
	Reading(ctx context.Context, user int64) context.Context
	// Wrote records that a write of user committed; it is called before
	// the write's answer goes out.
	Wrote(ctx context.Context, user int64)
}

// Pages is a handler of web pages and the ServeMux patterns it answers
// (GET only: a page is read, never written).
type Pages interface {
	http.Handler
	Patterns() []string
}

const defaultMaxBodyBytes = 1 << 20

// DefaultBodyTimeout is the BodyTimeout feedd's flag starts from: ample for
// a body of MaxBodyBytes on a slow mobile link, short enough that a client
// trickling bodies ties up little.
const DefaultBodyTimeout = 10 * time.Second

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = defaultMaxBodyBytes
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// NewServer returns the whole public API, probes and metrics included,
// over the timeline service svc and the likes service lk. It registers the request-duration histogram on reg (nil: no histogram) and
// serves metrics at /metrics (nil: 404).
func NewServer(logger *slog.Logger, cfg Config, svc Timeline, lk Likes, reg prometheus.Registerer, metrics http.Handler) http.Handler {
	cfg = cfg.withDefaults()
	logger = orDiscard(logger)
	tok := newTokens(cfg, svc)
	if cfg.Live != nil && cfg.Live.Tickets != nil {
		tok.tickets = stream.NewTickets(cfg.Live.Tickets, cfg.Now)
	}
	// A closure, not the method value svc.Ready, so that building the
	// table never touches svc.
	ready := func(ctx context.Context) []feed.Check {
		if c, ok := svc.(checker); ok {
			return c.Checks(ctx)
		}
		return []feed.Check{{Name: "backends", Required: true, Err: svc.Ready(ctx)}}
	}
	dm := newDefenceMetrics(logger, reg, cfg.Shed)

	mux := newSplitMux()
	for _, rt := range routes(tok, svc, lk, cfg.Switches, ready, metrics, cfg.Live, cfg.Console) {
		if rt.path == streamPath {
			// HEAD is refused before anything: it opens no stream.
			mux.Handle(rt.pattern(), getOnly(tok.require(rt.access, guardStream(cfg, dm, rt.handler))))
			continue
		}
		mux.Handle(rt.pattern(), tok.require(rt.access, guard(cfg, dm, classOf(rt), rt.handler)))
	}
	if cfg.Pages != nil {
		for _, p := range cfg.Pages.Patterns() {
			if _, path, _ := strings.Cut(p, " "); path == "/v1" || strings.HasPrefix(path, "/v1/") {
				panic(fmt.Sprintf("httpapi: page pattern %q is in the API's namespace", p))
			}
			mux.Handle(p, cfg.Pages)
		}
	}
	return middleware(logger, newRequestMetrics(logger, reg), cfg.MaxBodyBytes, cfg.BodyTimeout, mux)
}

// literalPrefixes are the paths under which a route's literal segment
// stands where other routes have a wildcard: /v1/users/by-handle/{handle}
// beside /v1/users/{id}/followers. ServeMux refuses such a pair (a handle
// "followers" would match both), so the routes under such a prefix get a
// mux of their own, which every request under the prefix goes to: there,
// "by-handle" is never an id.
var literalPrefixes = []string{"/v1/users/by-handle/"}

// splitMux is the API's router: a ServeMux for the routes under
// literalPrefixes and one for the rest.
type splitMux struct{ main, literal *http.ServeMux }

func newSplitMux() splitMux { return splitMux{http.NewServeMux(), http.NewServeMux()} }

func (m splitMux) forPath(path string) *http.ServeMux {
	for _, p := range literalPrefixes {
		if strings.HasPrefix(path, p) {
			return m.literal
		}
	}
	return m.main
}

// Handle registers a pattern ("METHOD /path") on its mux.
func (m splitMux) Handle(pattern string, h http.Handler) {
	_, path, _ := strings.Cut(pattern, " ")
	m.forPath(path).Handle(pattern, h)
}

func (m splitMux) Handler(r *http.Request) (http.Handler, string) {
	return m.forPath(r.URL.Path).Handler(r)
}

func (m splitMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.forPath(r.URL.Path).ServeHTTP(w, r)
}

// NewProbes returns only /healthz, /readyz and /metrics, for processes that
// serve no API (the `feedd work` role) but must still be probed and
// scraped. ready nil means always ready.
func NewProbes(logger *slog.Logger, ready func(context.Context) []feed.Check, metrics http.Handler) http.Handler {
	logger = orDiscard(logger)
	if ready == nil {
		ready = func(context.Context) []feed.Check { return nil }
	}
	mux := newSplitMux()
	for _, rt := range routes(nil, nil, nil, nil, ready, metrics, nil, nil) {
		if rt.access == probe {
			h := rt.handler
			mux.Handle(rt.pattern(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				serveHeld(w, r, h, DefaultWriteTimeout, nil, nil)
			}))
		}
	}
	return middleware(logger, nil, defaultMaxBodyBytes, DefaultBodyTimeout, mux)
}

func orDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}

// errNoActor means an actor route ran without an authenticated user: a
// wiring bug, never a client's fault.
var errNoActor = errors.New("httpapi: actor route reached without a user token")
