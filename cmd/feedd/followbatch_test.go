package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// batchResults posts a follow batch as the admin and returns each list's
// results as "follower>followee result".
func (in *instance) batchResults(follow, unfollow [][2]string) (f, u []string) {
	in.t.Helper()
	pairs := func(list [][2]string) []map[string]string {
		out := []map[string]string{}
		for _, p := range list {
			out = append(out, map[string]string{"follower_id": p[0], "followee_id": p[1]})
		}
		return out
	}
	r := in.must(200, "POST", "/v1/admin/follows/batch", in.admin,
		map[string]any{"follow": pairs(follow), "unfollow": pairs(unfollow)})
	render := func(key string, sent [][2]string) []string {
		list, _ := r.body[key].([]any)
		if len(list) != len(sent) {
			in.t.Fatalf("%s: %d results for %d pairs: %s", key, len(list), len(sent), r.raw)
		}
		var out []string
		for i, v := range list {
			m, _ := v.(map[string]any)
			if m["follower_id"] != sent[i][0] || m["followee_id"] != sent[i][1] {
				in.t.Fatalf("%s[%d] is %v; want the pair sent, %v", key, i, m, sent[i])
			}
			out = append(out, fmt.Sprintf("%s>%s %s", m["follower_id"], m["followee_id"], m["result"]))
		}
		return out
	}
	return render("follow", follow), render("unfollow", unfollow)
}

// wantFollowCounts checks a user's profile counts.
func (in *instance) wantFollowCounts(id string, followers, following int) {
	in.t.Helper()
	r := in.must(200, "GET", "/v1/users/"+id, in.admin, nil)
	if r.body["follower_count"] != float64(followers) || r.body["following_count"] != float64(following) {
		in.t.Fatalf("user %s: follower_count %v, following_count %v; want %d, %d",
			id, r.body["follower_count"], r.body["following_count"], followers, following)
	}
}

// TestFollowBatch: an app mirrors its graph with POST
// /v1/admin/follows/batch on every delivery model and stack. Each pair
// gets its result in order (created, exists, blocked, unknown_user,
// removed, absent); the counts are exact; readers whose inboxes exist see
// the new followees' earlier posts at once and lose the unfollowed ones';
// a reader's open live stream starts sending a new followee's posts; and a
// refused batch changes nothing.
func TestFollowBatch(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for _, mode := range []string{"push", "pull", "hybrid"} {
			t.Run(mode, func(t *testing.T) {
				// Two followers make an author pulled in hybrid mode.
				in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", mode, "FEEDD_PULL_THRESHOLD", "2")
				r1, r1Tok := in.user("reader1")
				r2, r2Tok := in.user("reader2")
				a, aTok := in.user("author-a")
				b, bTok := in.user("author-b")
				c, cTok := in.user("blocker")
				in.must(204, "PUT", "/v1/me/blocks/"+r2, cTok, nil)
				aPosts := []string{in.post(aTok, "a1"), in.post(aTok, "a2")}
				bPosts := []string{in.post(bTok, "b1")}
				in.post(cTok, "c1")
				// The readers' inboxes exist before the batch, so that it
				// has to backfill them rather than leave a rebuild to a read.
				in.feedAll(r1Tok, 20)
				in.feedAll(r2Tok, 20)
				stream := in.openStream("/v1/me/feed/stream", r1Tok)

				f, u := in.batchResults([][2]string{
					{r1, a}, {r1, b}, {r2, a}, {r1, a}, {r2, c}, {c, r2}, {r1, "999999"}, {r2, r1},
				}, [][2]string{
					{r2, r1}, {r2, b}, {"999999", a}, {r1, r1},
				})
				wantF := []string{r1 + ">" + a + " created", r1 + ">" + b + " created", r2 + ">" + a + " created",
					r1 + ">" + a + " exists", r2 + ">" + c + " blocked", c + ">" + r2 + " blocked",
					r1 + ">999999 unknown_user", r2 + ">" + r1 + " created"}
				wantU := []string{r2 + ">" + r1 + " removed", r2 + ">" + b + " absent", "999999>" + a + " unknown_user",
					r1 + ">" + r1 + " absent"}
				if !slices.Equal(f, wantF) || !slices.Equal(u, wantU) {
					t.Fatalf("results:\n%q\n%q\nwant\n%q\n%q", f, u, wantF, wantU)
				}
				in.wantFollowCounts(r1, 0, 2)
				in.wantFollowCounts(r2, 0, 1)
				in.wantFollowCounts(a, 2, 0)
				in.wantFollowCounts(b, 1, 0)
				in.wantFollowCounts(c, 0, 0)
				if mode == "hybrid" {
					if got := in.must(200, "GET", "/v1/users/"+a, in.admin, nil).str("delivery_mode"); got != "pull" {
						t.Fatalf("author a delivery_mode after the batch = %q; want pull", got)
					}
				}

				desc := func(ids ...[]string) []string {
					all := slices.Concat(ids...)
					slices.SortFunc(all, func(x, y string) int { return cmpID(y, x) })
					return all
				}
				// The earlier posts are there at once: no fan-out is
				// involved, only the backfill (or the pull).
				if got, want := in.feedAll(r1Tok, 20), desc(aPosts, bPosts); !slices.Equal(got, want) {
					t.Fatalf("reader1's feed right after the batch = %v; want %v", got, want)
				}
				if got, want := in.feedAll(r2Tok, 20), desc(aPosts); !slices.Equal(got, want) {
					t.Fatalf("reader2's feed right after the batch = %v; want %v", got, want)
				}
				// The stream reads its authors again: b's new post comes.
				// (The earlier posts may come first: their fan-out is
				// asynchronous and can announce them after the batch.)
				b2 := in.post(bTok, "b2")
				earlier := slices.Concat(aPosts, bPosts)
				for {
					ev := stream.event(10 * time.Second)
					if ev.Event == "post" && slices.Contains(earlier, ev.ID) {
						continue
					}
					if ev.Event != "post" || ev.ID != b2 {
						t.Fatalf("stream event %q; want post %s", ev.Raw, b2)
					}
					break
				}
				in.feedEventually(r1Tok, 20, desc(aPosts, bPosts, []string{b2}))

				// Unfollowing by batch takes the posts out.
				f, u = in.batchResults(nil, [][2]string{{r1, a}, {r1, a}})
				if !slices.Equal(u, []string{r1 + ">" + a + " removed", r1 + ">" + a + " absent"}) || len(f) != 0 {
					t.Fatalf("unfollow batch: %q %q", f, u)
				}
				if got, want := in.feedAll(r1Tok, 20), desc(bPosts, []string{b2}); !slices.Equal(got, want) {
					t.Fatalf("reader1's feed after unfollowing a = %v; want %v", got, want)
				}
				in.wantFollowCounts(r1, 0, 1)
				in.wantFollowCounts(a, 1, 0)

				// A refused batch changes nothing, whichever pair is wrong.
				for _, body := range []string{
					fmt.Sprintf(`{"follow":[{"follower_id":"%s","followee_id":"%s"},{"follower_id":"%s","followee_id":"%s"}]}`, r2, b, r2, r2),
					fmt.Sprintf(`{"follow":[{"follower_id":"%s","followee_id":"%s"}],"unfollow":[{"follower_id":"x","followee_id":"1"}]}`, r2, b),
				} {
					if r := in.do("POST", "/v1/admin/follows/batch", in.admin, body); r.status != 400 || r.errCode() != "invalid" {
						t.Fatalf("batch %s: status %d, code %q; want 400 invalid", body, r.status, r.errCode())
					}
				}
				var big []map[string]string
				for range 1001 {
					big = append(big, map[string]string{"follower_id": r2, "followee_id": b})
				}
				if r := in.do("POST", "/v1/admin/follows/batch", in.admin, map[string]any{"follow": big}); r.status != 400 || r.errCode() != "batch_too_large" {
					t.Fatalf("1,001 pairs: status %d, code %q; want 400 batch_too_large", r.status, r.errCode())
				}
				in.wantFollowCounts(r2, 0, 1)
				in.wantFollowCounts(b, 1, 0)
				// A reader who follows more authors in one batch than are
				// backfilled one by one gets its inbox rebuilt instead:
				// the feed is as complete at once.
				r3, r3Tok := in.user("reader3")
				in.feedAll(r3Tok, 20)
				var many [][2]string
				var manyPosts []string
				for i := range 25 {
					id, tok := in.user(fmt.Sprintf("many%d", i))
					manyPosts = append(manyPosts, in.post(tok, "hello"))
					many = append(many, [2]string{r3, id})
				}
				f, _ = in.batchResults(many, nil)
				for _, res := range f {
					if !strings.HasSuffix(res, " created") {
						t.Fatalf("25 follows: %q", f)
					}
				}
				if got, want := in.feedAll(r3Tok, 10), desc(manyPosts); !slices.Equal(got, want) {
					t.Fatalf("reader3's feed right after following 25 = %v; want %v", got, want)
				}
				in.wantFollowCounts(r3, 0, 25)

				// A user token may not use it.
				if r := in.do("POST", "/v1/admin/follows/batch", r1Tok, `{"follow":[]}`); r.status != 403 {
					t.Fatalf("a user token: status %d; want 403", r.status)
				}
			})
		}
	})
}
