package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/feedd/feedd/internal/feed"
)

func TestFollowBatch(t *testing.T) {
	e := newEnv(t)
	e.svc.seedFollow(carol, alice)
	if err := e.svc.Block(t.Context(), bob, carol); err != nil {
		t.Fatal(err)
	}
	e.svc.calls()

	r := e.do(req{method: "POST", path: "/v1/admin/follows/batch", token: testAdmin, body: `{
		"follow": [{"follower_id":"1","followee_id":"2"}, {"follower_id":"3","followee_id":"1"},
		           {"follower_id":3,"followee_id":"2"}, {"follower_id":"1","followee_id":"999"}],
		"unfollow": [{"follower_id":"3","followee_id":"1"}, {"follower_id":"3","followee_id":"1"},
		             {"follower_id":"999","followee_id":"1"}]}`})
	wantStatus(t, r, http.StatusOK)
	var got struct {
		Follow, Unfollow []map[string]string
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	render := func(list []map[string]string) []string {
		var out []string
		for _, m := range list {
			if len(m) != 3 {
				t.Errorf("result %v: want follower_id, followee_id and result", m)
			}
			out = append(out, m["follower_id"]+">"+m["followee_id"]+" "+m["result"])
		}
		return out
	}
	wantF := []string{"1>2 created", "3>1 exists", "3>2 blocked", "1>999 unknown_user"}
	wantU := []string{"3>1 removed", "3>1 absent", "999>1 unknown_user"}
	if f, u := render(got.Follow), render(got.Unfollow); !slices.Equal(f, wantF) || !slices.Equal(u, wantU) {
		t.Fatalf("results:\n%q\n%q\nwant\n%q\n%q", f, u, wantF, wantU)
	}
	wantCalls(t, e.svc, "FollowBatch[4 3]")

	// Only the admin may call it.
	wantStatus(t, e.do(req{method: "POST", path: "/v1/admin/follows/batch", token: userToken(t, alice), body: `{"follow":[]}`}), http.StatusForbidden)

	// An empty batch is nothing to do; lists left out are empty.
	r = e.do(req{method: "POST", path: "/v1/admin/follows/batch", token: testAdmin, body: `{}`})
	wantStatus(t, r, http.StatusOK)
	if got, want := strings.TrimSpace(string(r.body)), `{"follow":[],"unfollow":[]}`; got != want {
		t.Errorf("empty batch: body %s; want %s", got, want)
	}
	e.svc.calls()

	pairs := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"follower_id":"1","followee_id":"%d"}`, 10+i)
		}
		return b.String()
	}
	for _, c := range []struct {
		name, body, code string
	}{
		{"no body", "", feed.EINVALID},
		{"1,001 pairs", `{"follow":[` + pairs(600) + `],"unfollow":[` + pairs(401) + `]}`, feed.EBATCHTOOLARGE},
		{"self-follow", `{"follow":[{"follower_id":"1","followee_id":"1"}]}`, feed.EINVALID},
		{"a missing id", `{"follow":[{"follower_id":"1"}]}`, feed.EINVALID},
		{"a bad id", `{"unfollow":[{"follower_id":"1","followee_id":"x"}]}`, feed.EINVALID},
		{"a zero id", `{"unfollow":[{"follower_id":"0","followee_id":"2"}]}`, feed.EINVALID},
		{"an unknown field", `{"follow":[{"follower_id":"1","followee_id":"2","why":1}]}`, feed.EINVALID},
		{"a list not a list", `{"follow":{"follower_id":"1","followee_id":"2"}}`, feed.EINVALID},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(req{method: "POST", path: "/v1/admin/follows/batch", token: testAdmin, body: c.body})
			wantStatus(t, r, http.StatusBadRequest)
			if got := r.errorCode(t); got != c.code {
				t.Errorf("code %q; want %q", got, c.code)
			}
			wantCalls(t, e.svc) // refused before the service
		})
	}
	// 1,000 pairs are fine.
	r = e.do(req{method: "POST", path: "/v1/admin/follows/batch", token: testAdmin,
		body: `{"follow":[` + pairs(500) + `],"unfollow":[` + pairs(500) + `]}`})
	wantStatus(t, r, http.StatusOK)
}
