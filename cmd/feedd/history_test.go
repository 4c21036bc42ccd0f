package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/feedd/feedd/internal/feed"
)

// TestHistoryFeeds checks posts from before 2025, whose ids are negative
// (feed.IDAt), end to end on every model and stack: a feed mixing them
// with new posts pages in time order, exactly, through the inbox, the
// pulled author's list, their continuations in SQL past a trimmed end, and
// a rebuild after the cache is lost; author pages, single posts and likes
// take them as any other post.
func TestHistoryFeeds(t *testing.T) {
	forEachStack(t, func(t *testing.T, env map[string]string) {
		for m, mode := range []string{"push", "pull", "hybrid"} {
			t.Run(mode, func(t *testing.T) {
				// Three followers make the star pulled in hybrid mode; an
				// inbox of 30 and an author list of 100 are paged past.
				in := startFeedd(t, env, nil, "FEEDD_FANOUT_MODE", mode, "FEEDD_PULL_THRESHOLD", "3",
					"FEEDD_INBOX_MAX", "30", "FEEDD_RATE_USER_READ", "0")
				ctx := context.Background()
				star, starTok := in.user("star")
				friend, friendTok := in.user("friend")
				readerID, reader := in.user("reader")
				starID, _ := feed.ParseID(star)
				friendID, _ := feed.ParseID(friend)
				rid, _ := feed.ParseID(readerID)
				bulkFollowers(t, in, starID, 3)
				in.follow(reader, star)
				in.follow(reader, friend)
				in.feedAll(reader, 10) // materialize the inbox

				// History, as an import writes it: ids from created_at,
				// the first millisecond of 2006 and the last of 2024 too.
				times := []time.Time{feed.HistoryStart, time.Date(2024, 12, 31, 23, 59, 59, 999e6, time.UTC)}
				for i := range 138 {
					// From the next millisecond on: the first is the three
					// modes' feed.MinID and its neighbours'.
					times = append(times, feed.HistoryStart.Add(time.Duration(i)*(19*365*24*time.Hour/140)+time.Duration(i+1)*time.Millisecond))
				}
				var want, starWant []string
				for i, at := range times {
					author := starID
					if i%5 == 0 {
						author = friendID
					}
					ext := "old-" + strconv.Itoa(i)
					seq := feed.ImportSeq(author, ext, 0)
					if i == 0 {
						// feed.MinID itself, then its neighbours: the modes
						// share the database.
						seq = int64(m)
					}
					// Another post of that millisecond may hold the id (the
					// modes share the database): take the next sequence, as
					// an import does.
					var id int64
					for attempt := 0; ; attempt++ {
						var err error
						if id, err = feed.IDAt(at, seq); err != nil {
							t.Fatal(err)
						}
						_, _, err = in.d.store.CreatePost(ctx, feed.Post{ID: id, AuthorID: author, Content: ext,
							CreatedAt: at, ExternalID: ext}, feed.Idempotency{})
						if err == nil {
							break
						}
						if i == 0 || attempt == 5 || feed.ErrorCode(err) != feed.ECONFLICT {
							t.Fatalf("CreatePost(%d at %s): %v", id, at, err)
						}
						seq = feed.ImportSeq(author, ext, attempt+1)
					}
					want = append(want, feed.FormatID(id))
					if author == starID {
						starWant = append(starWant, feed.FormatID(id))
					}
				}
				// The import drops the inboxes and lists it changed, so that
				// they are rebuilt from SQL.
				if err := in.d.cache.DropInbox(ctx, rid); err != nil {
					t.Fatal(err)
				}
				if in.d.authorLists != nil {
					if err := in.d.authorLists.DropInbox(ctx, starID); err != nil {
						t.Fatal(err)
					}
				}
				// New posts, after the import.
				for i := range 6 {
					want = append(want, in.post(friendTok, fmt.Sprint("new friend ", i)))
					id := in.post(starTok, fmt.Sprint("new star ", i))
					want, starWant = append(want, id), append(starWant, id)
				}
				desc := func(ids []string) []string {
					ids = slices.Clone(ids)
					slices.SortFunc(ids, func(a, b string) int { return cmpID(b, a) })
					return ids
				}
				want, starWant = desc(want), desc(starWant)
				if want[len(want)-1] != feed.FormatID(feed.MinID+int64(m)) {
					t.Fatalf("oldest post %s; want MinID+%d", want[len(want)-1], m)
				}
				in.feedEventually(reader, 7, want)
				for _, limit := range []int{1, 13, 100} {
					if got := in.feedAll(reader, limit); !slicesEqual(got, want) {
						t.Fatalf("feed by %d = %v; want %v", limit, got, want)
					}
				}
				var page []string
				for cursor := ""; ; {
					r := in.must(200, "GET", "/v1/users/"+star+"/posts?limit=9&cursor="+cursor, reader, nil)
					for _, it := range r.items() {
						page = append(page, it["id"].(string))
					}
					next, ok := r.body["next_cursor"].(string)
					if !ok {
						break
					}
					cursor = next
				}
				if !slicesEqual(page, starWant) {
					t.Fatalf("star's posts = %v; want %v", page, starWant)
				}

				// One post of 2024: its time, its external id, its likes.
				var last2024 string
				for _, id := range want {
					if n, _ := strconv.ParseInt(id, 10, 64); n < 0 {
						last2024 = id
						break
					}
				}
				in.must(200, "PUT", "/v1/posts/"+last2024+"/like", reader, nil)
				p := in.must(200, "GET", "/v1/posts/"+last2024, reader, nil)
				if p.str("created_at") != "2024-12-31T23:59:59.999Z" || p.str("external_id") != "old-1" ||
					p.body["like_count"] != float64(1) || p.body["liked_by_me"] != true {
					t.Errorf("post %s = %s; want 2024-12-31T23:59:59.999Z, old-1, liked once by the reader", last2024, p.raw)
				}
				likes := in.must(200, "GET", "/v1/users/"+readerID+"/likes", reader, nil).items()
				if len(likes) != 1 || likes[0]["id"] != last2024 {
					t.Errorf("reader's likes = %v; want post %s", likes, last2024)
				}

				// The cache lost: every feed is rebuilt from SQL, the same.
				if env["FEEDD_REDIS_URL"] != "" {
					flushRedis(t, env)
				} else if err := in.d.cache.DropInbox(ctx, rid); err != nil {
					t.Fatal(err)
				}
				for _, limit := range []int{7, 30} {
					if got := in.feedAll(reader, limit); !slicesEqual(got, want) {
						t.Fatalf("after the cache was lost, feed by %d = %v; want %v", limit, got, want)
					}
				}
			})
		}
	})
}
