package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/testenv"
)

// TestMutedFeedStaysFull: a reader who mutes 19 of the 20 authors it
// follows (pushed and, in hybrid mode, pulled ones) pages through the rest
// in full pages, at once after the mutes, on every delivery model, after
// the cache is lost, and gets an author back by unmuting. The muted
// authors are still followed and notice nothing.
func TestMutedFeedStaysFull(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for _, mode := range []string{"push", "pull", "hybrid"} {
			t.Run(mode, func(t *testing.T) {
				// Three followers make an author pulled in hybrid mode.
				opts := []string{"FEEDD_FANOUT_MODE", mode, "FEEDD_PULL_THRESHOLD", "3", "FEEDD_INBOX_MAX", "30"}
				in := startFeedd(t, env, nil, opts...)
				readerID, reader := in.user("reader")
				var fans []string
				for i := range 2 {
					_, tok := in.user(fmt.Sprintf("fan%d", i))
					fans = append(fans, tok)
				}
				var authors, tokens []string
				for i := range 20 {
					id, tok := in.user(fmt.Sprintf("author%d", i))
					authors, tokens = append(authors, id), append(tokens, tok)
					in.follow(reader, id)
					if i%2 == 0 {
						for _, f := range fans {
							in.follow(f, id)
						}
					}
				}
				if mode == "hybrid" {
					if got := in.must(200, "GET", "/v1/users/"+authors[0], reader, nil).str("delivery_mode"); got != "pull" {
						t.Fatalf("author 0 delivery_mode = %q; want pull", got)
					}
				}
				in.feedAll(reader, 10) // materialize the inbox
				posts := make([][]string, len(authors))
				var all []string
				for round := range 10 {
					for i, tok := range tokens {
						p := in.post(tok, fmt.Sprintf("post %d of author %d", round, i))
						posts[i] = append(posts[i], p)
						all = append(all, p)
					}
				}
				desc := func(ids []string) []string {
					ids = slices.Clone(ids)
					slices.SortFunc(ids, func(a, b string) int { return cmpID(b, a) })
					return ids
				}
				all = desc(all)
				in.feedEventually(reader, 50, all)

				// Author 0 (pulled in hybrid mode) stays; 95% of the feed goes.
				for _, a := range authors[1:] {
					in.must(204, "PUT", "/v1/me/mutes/"+a, reader, nil)
				}
				in.must(204, "PUT", "/v1/me/mutes/"+authors[1], reader, nil) // idempotent
				want := desc(posts[0])
				for _, limit := range []int{3, 7} {
					if got := in.feedAll(reader, limit); !slices.Equal(got, want) {
						t.Fatalf("limit %d, 19 of 20 authors muted: feed = %v; want %v", limit, got, want)
					}
				}
				// Still following; the muted authors' own view is untouched.
				if got := in.must(200, "GET", "/v1/users/"+readerID, reader, nil).body["following_count"]; got != float64(20) {
					t.Fatalf("reader following_count = %v; want 20", got)
				}
				in.must(200, "GET", "/v1/users/"+readerID, tokens[1], nil)
				var muted []string
				cursor := ""
				for {
					r := in.must(200, "GET", "/v1/me/mutes?limit=5&cursor="+cursor, reader, nil)
					for _, it := range r.items() {
						muted = append(muted, it["id"].(string))
					}
					next, ok := r.body["next_cursor"].(string)
					if !ok {
						break
					}
					cursor = next
				}
				if slices.SortFunc(muted, cmpID); !slices.Equal(muted, sortedIDs(authors[1:])) {
					t.Fatalf("GET /v1/me/mutes = %v; want %v", muted, authors[1:])
				}

				// The mutes are in SQL: a lost cache changes nothing.
				if _, ok := env["FEEDD_REDIS_URL"]; ok {
					flushRedis(t, env)
				} else {
					in.stop()
					in = startFeedd(t, env, nil, opts...)
				}
				if got := in.feedAll(reader, 3); !slices.Equal(got, want) {
					t.Fatalf("after the cache is lost: feed = %v; want %v", got, want)
				}

				// Unmuting brings an author back, in place, at once.
				in.must(204, "DELETE", "/v1/me/mutes/"+authors[2], reader, nil)
				in.must(204, "DELETE", "/v1/me/mutes/"+authors[2], reader, nil)
				want = desc(append(slices.Clone(posts[0]), posts[2]...))
				if got := in.feedAll(reader, 4); !slices.Equal(got, want) {
					t.Fatalf("after an unmute: feed = %v; want %v", got, want)
				}

				in.must(400, "PUT", "/v1/me/mutes/"+readerID, reader, nil)
				in.must(404, "PUT", "/v1/me/mutes/424242", reader, nil)
				in.must(404, "DELETE", "/v1/me/mutes/424242", reader, nil)
			})
		}
	})
}

func sortedIDs(ids []string) []string {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, cmpID)
	return ids
}

// TestBlock: a block removes the follow edges both ways with exact counts,
// refuses follows either way with 403 blocked, and hides each user from
// the other: 404 for the other's profile, posts, likes and post pages,
// and their likes gone from likers lists; an unblock lifts all of it.
func TestBlock(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		in := startFeedd(t, env, nil)
		aID, a := in.user("alice")
		bID, b := in.user("bob")
		cID, c := in.user("carol")
		in.follow(a, bID)
		in.follow(b, aID)
		in.follow(c, aID)
		in.follow(c, bID)
		pa := in.post(a, "alice's post")
		pb := in.post(b, "bob's post")
		for _, tok := range []string{b, c} {
			in.must(200, "PUT", "/v1/posts/"+pa+"/like", tok, nil)
		}
		in.must(200, "PUT", "/v1/posts/"+pb+"/like", c, nil)
		in.feedEventually(b, 10, []string{pb, pa}) // bob's own post and alice's

		counts := func(id, tok string, followers, following float64) {
			t.Helper()
			u := in.must(200, "GET", "/v1/users/"+id, tok, nil)
			if u.body["follower_count"] != followers || u.body["following_count"] != following {
				t.Fatalf("user %s counts: %s; want %v followers, %v following", id, u.raw, followers, following)
			}
		}
		in.must(204, "PUT", "/v1/me/blocks/"+bID, a, nil)
		in.must(204, "PUT", "/v1/me/blocks/"+bID, a, nil) // idempotent
		counts(aID, c, 1, 0)
		counts(bID, c, 1, 0)
		counts(cID, c, 0, 2)

		for _, f := range [][2]string{{a, bID}, {b, aID}} {
			if r := in.must(403, "PUT", "/v1/me/following/"+f[1], f[0], nil); r.errCode() != "blocked" {
				t.Fatalf("follow across a block: error code %q; want blocked", r.errCode())
			}
		}
		counts(aID, c, 1, 0)

		// Each side sees the other as missing.
		for _, v := range []struct{ tok, other, post string }{{a, bID, pb}, {b, aID, pa}} {
			in.must(404, "GET", "/v1/users/"+v.other, v.tok, nil)
			in.must(404, "GET", "/v1/users/"+v.other+"/posts", v.tok, nil)
			in.must(404, "GET", "/v1/users/"+v.other+"/likes", v.tok, nil)
			in.must(404, "GET", "/v1/posts/"+v.post, v.tok, nil)
			in.must(404, "GET", "/v1/posts/"+v.post+"/likes", v.tok, nil)
			in.must(404, "PUT", "/v1/posts/"+v.post+"/like", v.tok, nil)
		}
		if got := in.feedAll(b, 10); !slices.Equal(got, []string{pb}) {
			t.Fatalf("bob's feed after the block = %v; want only his own post", got)
		}
		// Carol's likes list shows alice's post to carol, not to bob; a
		// post's likers hide bob from alice, not from carol.
		testenv.Eventually(t, 10*time.Second, "likes listed", func() bool {
			return len(in.must(200, "GET", "/v1/users/"+cID+"/likes", c, nil).items()) == 2 &&
				len(in.must(200, "GET", "/v1/posts/"+pa+"/likes", c, nil).items()) == 2
		})
		if items := in.must(200, "GET", "/v1/users/"+cID+"/likes", b, nil).items(); len(items) != 1 || items[0]["id"] != pb {
			t.Fatalf("carol's likes as bob = %v; want only bob's post", items)
		}
		if items := in.must(200, "GET", "/v1/posts/"+pa+"/likes", a, nil).items(); len(items) != 1 || items[0]["id"] != cID {
			t.Fatalf("likers of alice's post as alice = %v; want only carol", items)
		}
		r := in.must(200, "GET", "/v1/posts/"+pa, c, nil)
		if r.body["like_count"] != float64(2) {
			t.Fatalf("like_count of alice's post = %v; want the true count 2", r.body["like_count"])
		}
		if items := in.must(200, "GET", "/v1/me/blocks", a, nil).items(); len(items) != 1 || items[0]["id"] != bID {
			t.Fatalf("alice's blocks = %v; want bob", items)
		}
		if items := in.must(200, "GET", "/v1/me/blocks", b, nil).items(); len(items) != 0 {
			t.Fatalf("bob's blocks = %v; want none", items)
		}

		// The block is in SQL: a lost cache changes nothing.
		if _, ok := env["FEEDD_REDIS_URL"]; ok {
			flushRedis(t, env)
		} else {
			in.stop()
			in = startFeedd(t, env, nil)
		}
		in.must(404, "GET", "/v1/users/"+aID, b, nil)
		in.must(403, "PUT", "/v1/me/following/"+aID, b, nil)

		in.must(400, "PUT", "/v1/me/blocks/"+aID, a, nil)
		in.must(404, "PUT", "/v1/me/blocks/424242", a, nil)
		in.must(204, "DELETE", "/v1/me/blocks/"+bID, a, nil)
		in.must(204, "DELETE", "/v1/me/blocks/"+bID, a, nil)
		in.must(200, "GET", "/v1/users/"+aID, b, nil)
		in.must(200, "GET", "/v1/posts/"+pa, b, nil)
		in.follow(b, aID)
		counts(aID, c, 2, 0)
		in.feedEventually(b, 10, []string{pb, pa})
	})
}
