package clientsuite_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/feedd/feedd/client"
	"github.com/feedd/feedd/internal/census"
	"github.com/feedd/feedd/internal/degrade"
	"github.com/feedd/feedd/internal/httpapi"
)

// methods names the client's method of every route of the API. A route
// added to the server's table without one fails TestEveryRouteHasAMethod.
var methods = map[string][]string{
	"POST /v1/users":                          {"CreateUser"},
	"POST /v1/users/{id}/tokens":              {"CreateToken"},
	"DELETE /v1/users/{id}/tokens":            {"RevokeTokens"},
	"DELETE /v1/users/{id}":                   {"DeleteUser"},
	"PATCH /v1/users/{id}":                    {"UpdateUser"},
	"GET /v1/users/{id}":                      {"GetUser"},
	"GET /v1/users/by-handle/{handle}":        {"UserByHandle"},
	"GET /v1/users/search":                    {"SearchUsers"},
	"GET /v1/users/{id}/followers":            {"Followers", "FollowersPage"},
	"GET /v1/users/{id}/following":            {"Following", "FollowingPage"},
	"GET /v1/users/{id}/posts":                {"UserPosts", "UserPostsPage"},
	"PATCH /v1/me":                            {"UpdateMe"},
	"DELETE /v1/me":                           {"DeleteMe"},
	"GET /v1/me/relationships/{id}":           {"Relationship"},
	"PUT /v1/me/following/{id}":               {"Follow", "FollowWith"},
	"DELETE /v1/me/following/{id}":            {"Unfollow"},
	"GET /v1/me/feed":                         {"Feed", "FeedPage", "FeedPageInto", "RankedFeed", "RankedFeedPage"},
	"POST /v1/lists":                          {"CreateList"},
	"GET /v1/lists":                           {"Lists"},
	"GET /v1/lists/{id}":                      {"GetList"},
	"PATCH /v1/lists/{id}":                    {"EditList"},
	"DELETE /v1/lists/{id}":                   {"DeleteList"},
	"PUT /v1/lists/{id}/members/{user_id}":    {"AddListMember"},
	"DELETE /v1/lists/{id}/members/{user_id}": {"RemoveListMember"},
	"GET /v1/lists/{id}/members":              {"ListMembers", "ListMembersPage"},
	"GET /v1/lists/{id}/feed":                 {"ListFeed", "ListFeedPage", "RankedListFeedPage"},
	"GET /v1/lists/{id}/marker":               {"ListMarker"},
	"PUT /v1/lists/{id}/marker":               {"SetListMarker"},
	"GET /v1/me/feed/stream":                  {"Stream"},
	"POST /v1/me/feed/stream-tickets":         {"CreateStreamTicket"},
	"GET /v1/me/settings":                     {"Settings"},
	"PUT /v1/me/settings":                     {"SetSettings"},
	"GET /v1/me/markers/home":                 {"HomeMarker"},
	"PUT /v1/me/markers/home":                 {"SetHomeMarker"},
	"GET /v1/me/notifications":                {"Notifications"},
	"GET /v1/me/markers/notifications":        {"NotificationsMarker"},
	"PUT /v1/me/markers/notifications":        {"SetNotificationsMarker"},
	"PUT /v1/me/mutes/{id}":                   {"Mute"},
	"DELETE /v1/me/mutes/{id}":                {"Unmute"},
	"GET /v1/me/mutes":                        {"Mutes", "MutesPage"},
	"PUT /v1/me/blocks/{id}":                  {"Block"},
	"DELETE /v1/me/blocks/{id}":               {"Unblock"},
	"GET /v1/me/blocks":                       {"Blocks", "BlocksPage"},
	"POST /v1/posts":                          {"CreatePost"},
	"GET /v1/posts/{id}":                      {"GetPost"},
	"PATCH /v1/posts/{id}":                    {"EditPost"},
	"DELETE /v1/posts/{id}":                   {"DeletePost"},
	"PUT /v1/posts/{id}/like":                 {"Like"},
	"DELETE /v1/posts/{id}/like":              {"Unlike"},
	"PUT /v1/posts/{id}/repost":               {"Repost"},
	"DELETE /v1/posts/{id}/repost":            {"Unrepost"},
	"GET /v1/posts/{id}/likes":                {"Likers", "LikersPage"},
	"GET /v1/posts/{id}/replies":              {"Replies", "RepliesPage"},
	"GET /v1/posts/{id}/context":              {"Context"},
	"GET /v1/users/{id}/likes":                {"UserLikes", "UserLikesPage"},
	"GET /v1/posts/top":                       {"TopPosts"},
	"GET /v1/admin/jobs/{id}":                 {"Job"},
	"POST /v1/admin/follows/batch":            {"FollowBatch"},
	"GET /v1/users/{id}/export":               {"Export", "ExportLines"},
	"GET /v1/admin/overview":                  {"Overview"},
	"POST /v1/admin/dead-letters/requeue":     {"RequeueDeadLetters"},
	"GET /v1/admin/degradation":               {"Degradation"},
	"PUT /v1/admin/degradation":               {"SetDegradation"},
	"GET /v1/openapi.json":                    {"OpenAPI"},
	"GET /healthz":                            {"Health"},
	"GET /readyz":                             {"Ready"},
	"GET /metrics":                            {"Metrics"},
}

func TestEveryRouteHasAMethod(t *testing.T) {
	typ := reflect.TypeFor[*client.Client]()
	seen := map[string]bool{}
	for _, rt := range httpapi.Routes() {
		key := rt.Method + " " + rt.Path
		seen[key] = true
		names, ok := methods[key]
		if !ok {
			t.Errorf("route %s has no method in package client (add one, and a row to methods)", key)
			continue
		}
		for _, name := range names {
			if _, ok := typ.MethodByName(name); !ok {
				t.Errorf("route %s: *client.Client has no method %s", key, name)
			}
		}
	}
	for key := range methods {
		if !seen[key] {
			t.Errorf("methods names route %s, which the server does not have", key)
		}
	}
}

// TestOverviewMirrorsTheServer: client.Overview has a field for every
// field of the server's overview, at every depth, so that a figure added
// to the console's JSON fails here until the client carries it too.
func TestOverviewMirrorsTheServer(t *testing.T) {
	full := census.Overview{
		Queues:    []census.Queue{{}},
		Breakers:  []census.Breaker{{}},
		Processes: []census.Process{{Breakers: []census.BreakerState{{}}}},
		Problems:  []string{"x"},
	}
	full.Degradation.Switches = map[degrade.Switch]bool{"L1": true}
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var o client.Overview
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("the server's overview %s does not decode into client.Overview: %v", b, err)
	}
	if len(o.Processes) != 1 || len(o.Processes[0].Breakers) != 1 || !o.Degradation.Switches["L1"] {
		t.Fatalf("decoded %+v from %s", o, b)
	}
}
