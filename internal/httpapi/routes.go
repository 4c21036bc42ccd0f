package httpapi

import (
	"context"
	"net/http"

	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/feed"
	"github.com/feedd/feedd/internal/pages"
)

// routes is the whole API surface on one screen. It is the single table the
// mux is built from, the OpenAPI test walks and (through Routes) the auth
// matrix sends bad credentials to, so none of them can drift.
// Handler makers only capture their arguments, so the table can be built
// with nil services. Each route's class for rate limits and load shedding
// follows from its method and access (classOf, in defence.go).
func routes(tok *tokens, svc Timeline, lk Likes, sw *degrade.Switches, ready func(context.Context) []feed.Check, metrics http.Handler, lv *Live, con Console) []route {
	pg := pages.New(svc, lk)
	return []route{
		{"POST", "/v1/users", admin, handleUserCreate(svc)},
		{"POST", "/v1/users/{id}/tokens", admin, handleTokenCreate(tok, svc)},
		{"DELETE", "/v1/users/{id}/tokens", admin, handleTokensRevoke(svc)},
		{"DELETE", "/v1/users/{id}", admin, handleUserDelete(svc)},
		{"PATCH", "/v1/users/{id}", admin, handleUserEdit(svc)},
		{"GET", "/v1/users/{id}", reader, handleUserGet(svc)},
		{"GET", "/v1/users/by-handle/{handle}", reader, handleUserByHandle(svc)},
		{"GET", "/v1/users/search", reader, handleUserSearch(svc)},
		{"GET", "/v1/users/{id}/followers", reader, handleFollowers(svc)},
		{"GET", "/v1/users/{id}/following", reader, handleFollowing(svc)},
		{"GET", "/v1/users/{id}/posts", reader, handleAuthorPosts(pg)},
		{"GET", "/v1/users/{id}/export", reader, handleUserExport(svc)},
		{"PATCH", "/v1/me", actor, handleMeEdit(svc)},
		{"DELETE", "/v1/me", actor, handleMeDelete(svc)},
		{"GET", "/v1/me/relationships/{id}", actor, handleRelationship(svc)},
		{"PUT", "/v1/me/following/{id}", actor, handleFollow(svc)},
		{"DELETE", "/v1/me/following/{id}", actor, handleUnfollow(svc)},
		{"GET", "/v1/me/feed", actor, handleFeed(pg)},
		{"GET", streamPath, actorOrTicket, handleStream(tok, svc, lk, lv)},
		{"POST", "/v1/me/feed/stream-tickets", actor, handleStreamTicket(tok, svc, lv)},
		{"GET", "/v1/me/settings", actor, handleSettingsGet(svc)},
		{"PUT", "/v1/me/settings", actor, handleSettingsPut(svc)},
		{"GET", "/v1/me/markers/home", actor, handleMarkerGet(svc)},
		{"PUT", "/v1/me/markers/home", actor, handleMarkerPut(svc)},
		{"GET", "/v1/me/notifications", actor, handleNotifications(svc)},
		{"GET", "/v1/me/markers/notifications", actor, handleNotificationsMarkerGet(svc)},
		{"PUT", "/v1/me/markers/notifications", actor, handleNotificationsMarkerPut(svc)},
		{"PUT", "/v1/me/mutes/{id}", actor, handleMute(svc)},
		{"DELETE", "/v1/me/mutes/{id}", actor, handleUnmute(svc)},
		{"GET", "/v1/me/mutes", actor, handleMutes(svc)},
		{"PUT", "/v1/me/blocks/{id}", actor, handleBlock(svc)},
		{"DELETE", "/v1/me/blocks/{id}", actor, handleUnblock(svc)},
		{"GET", "/v1/me/blocks", actor, handleBlocks(svc)},
		{"POST", "/v1/lists", actor, handleListCreate(svc)},
		{"GET", "/v1/lists", actor, handleLists(svc)},
		{"GET", "/v1/lists/{id}", actor, handleListGet(svc)},
		{"PATCH", "/v1/lists/{id}", actor, handleListEdit(svc)},
		{"DELETE", "/v1/lists/{id}", actor, handleListDelete(svc)},
		{"PUT", "/v1/lists/{id}/members/{user_id}", actor, handleListMember(svc, true)},
		{"DELETE", "/v1/lists/{id}/members/{user_id}", actor, handleListMember(svc, false)},
		{"GET", "/v1/lists/{id}/members", actor, handleListMembers(svc)},
		{"GET", "/v1/lists/{id}/feed", actor, handleListFeed(pg)},
		{"GET", "/v1/lists/{id}/marker", actor, handleListMarkerGet(svc)},
		{"PUT", "/v1/lists/{id}/marker", actor, handleListMarkerPut(svc)},
		{"POST", "/v1/posts", actor, handlePostCreate(svc)},
		{"GET", "/v1/posts/{id}", reader, handlePostGet(pg)},
		{"PATCH", "/v1/posts/{id}", actor, handlePostEdit(pg)},
		{"DELETE", "/v1/posts/{id}", actor, handlePostDelete(svc)},
		{"PUT", "/v1/posts/{id}/like", actor, handleLike(lk, true)},
		{"DELETE", "/v1/posts/{id}/like", actor, handleLike(lk, false)},
		{"GET", "/v1/posts/{id}/likes", reader, handlePostLikers(lk)},
		{"PUT", "/v1/posts/{id}/repost", actor, handleRepost(svc, true)},
		{"DELETE", "/v1/posts/{id}/repost", actor, handleRepost(svc, false)},
		{"GET", "/v1/posts/{id}/replies", reader, handleReplies(pg)},
		{"GET", "/v1/posts/{id}/context", reader, handleThread(pg)},
		{"GET", "/v1/users/{id}/likes", reader, handleUserLikes(pg)},
		{"GET", "/v1/posts/top", reader, handleTopPosts(pg)},
		{"GET", "/v1/admin/jobs/{id}", admin, handleJobGet(svc)},
		{"POST", "/v1/admin/follows/batch", admin, handleFollowBatch(svc)},
		{"GET", "/v1/admin/degradation", admin, handleDegradationGet(sw)},
		{"PUT", "/v1/admin/degradation", admin, handleDegradationPut(sw)},
		{"GET", "/v1/admin/overview", admin, handleOverview(con)},
		{"POST", "/v1/admin/dead-letters/requeue", admin, handleRequeue(con)},
		{"GET", "/v1/openapi.json", anyone, handleOpenAPI()},
		{"GET", "/healthz", probe, handleHealth()},
		{"GET", "/readyz", probe, handleReady(ready)},
		{"GET", "/metrics", probe, handleMetrics(metrics)},
	}
}

// route is one row of the table.
type route struct {
	method  string
	path    string
	access  access
	handler http.Handler
}

// pattern is the ServeMux pattern; it is also the route label of metrics
// and logs, so cardinality stays bounded by the table.
func (rt route) pattern() string { return rt.method + " " + rt.path }
